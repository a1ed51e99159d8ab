"""The snapshot charts: well-formed SVG, one point per snapshot, classes by operation, escaped text, bounded."""

from __future__ import annotations

import itertools
import time
import xml.etree.ElementTree as ET

import pytest
from markupsafe import Markup
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField

from irc_proxy.ui.charts import axis_labels, size_over_time, snapshot_timeline

SVG = "{http://www.w3.org/2000/svg}"
START_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z
HOSTILE = "<script>alert(1)</script>"


def snapshot(n: int, operation: Operation = Operation.APPEND, at: int | None = None, **summary: str) -> Snapshot:
    return Snapshot(
        snapshot_id=1000 + n,
        parent_snapshot_id=999 + n if n else None,
        sequence_number=n + 1,
        timestamp_ms=START_MS + n * 60_000 if at is None else at,
        manifest_list=f"file:///warehouse/t/metadata/snap-{n}.avro",
        summary=Summary(operation, **summary),
        schema_id=0,
    )


def table(*snapshots: Snapshot) -> TableMetadata:
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    metadata = new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "file:///warehouse/t")
    return metadata.model_copy(update={"snapshots": list(snapshots)})


def history(count: int) -> list[Snapshot]:
    return table(
        *(
            snapshot(n, **{"added-records": str(n), "added-data-files": "1", "total-records": str(n * 10)})
            for n in range(count)
        )
    ).snapshots


def parse(markup: Markup) -> ET.Element:
    return ET.fromstring(str(markup))


def classes(element: ET.Element) -> set[str]:
    return set(element.get("class", "").split())


def points(root: ET.Element) -> list[ET.Element]:
    return [circle for circle in root.iter(f"{SVG}circle") if "point" in classes(circle)]


def elements_with(root: ET.Element, cls: str) -> list[ET.Element]:
    return [element for element in root.iter() if cls in classes(element)]


def title_of(point: ET.Element) -> str:
    title = point.find(f"{SVG}title")
    assert title is not None
    return title.text or ""


def test_timeline_is_an_accessible_svg_with_one_point_per_snapshot_in_time_order() -> None:
    metadata = table(snapshot(2), snapshot(0), snapshot(1))
    root = parse(snapshot_timeline(metadata.snapshots))
    assert root.tag == f"{SVG}svg"
    assert classes(root) == {"chart", "snapshot-timeline"}
    assert root.get("role") == "img"
    assert root.get("aria-label", "").startswith("Snapshot timeline: 3 snapshots from 2023-11-14T22:13:20Z")
    assert root.get("viewBox") == "0 0 900 260"
    assert root.get("data-points") == "3"
    drawn = points(root)
    assert [p.get("data-snapshot-id") for p in drawn] == ["1000", "1001", "1002"]
    assert [float(p.get("cx", "")) for p in drawn] == sorted(float(p.get("cx", "")) for p in drawn)


@pytest.mark.parametrize(
    ("operation", "cls"),
    [
        (Operation.APPEND, "op-append"),
        (Operation.OVERWRITE, "op-overwrite"),
        (Operation.DELETE, "op-delete"),
        (Operation.REPLACE, "op-replace"),
    ],
)
def test_points_bars_and_legend_are_classed_by_operation(operation: Operation, cls: str) -> None:
    summary = {"added-records": "5", "deleted-records": "2", "added-data-files": "1", "deleted-data-files": "1"}
    root = parse(snapshot_timeline(table(snapshot(0, operation, **summary)).snapshots))
    (point,) = points(root)
    assert classes(point) == {"point", cls}
    bars = elements_with(root, "bar")
    assert {c for bar in bars for c in classes(bar)} == {
        "bar",
        cls,
        "records-added",
        "records-deleted",
        "files-added",
        "files-deleted",
    }
    assert [swatch for swatch in elements_with(root, "swatch") if cls in classes(swatch)]


def test_records_added_go_up_and_records_deleted_go_down_from_the_same_zero_line() -> None:
    summary = {"added-records": "100", "deleted-records": "50"}
    root = parse(snapshot_timeline([snapshot(0, Operation.OVERWRITE, **summary)]))
    (up,) = elements_with(root, "records-added")
    (down,) = elements_with(root, "records-deleted")
    zero = float(up.get("y", "")) + float(up.get("height", ""))
    assert float(down.get("y", "")) == pytest.approx(zero)
    assert float(up.get("height", "")) == pytest.approx(2 * float(down.get("height", "")), abs=0.2)


def test_point_title_has_id_utc_time_operation_and_numbers() -> None:
    summary = {"added-records": "1234", "deleted-records": "5", "added-data-files": "3", "deleted-data-files": "2"}
    (point,) = points(parse(snapshot_timeline([snapshot(0, Operation.OVERWRITE, at=START_MS + 789, **summary)])))
    assert title_of(point).splitlines() == [
        "Snapshot 1000",
        "2023-11-14T22:13:20Z",
        "overwrite",
        "records +1,234 / -5",
        "data files +3 / -2",
    ]


def test_hostile_summary_values_are_escaped_and_count_as_zero() -> None:
    hostile = snapshot(0, **{"added-records": HOSTILE, "engine-name": HOSTILE, "total-records": HOSTILE})
    object.__setattr__(hostile.summary, "operation", HOSTILE)  # metadata a parser would refuse, drawn anyway
    for chart in (snapshot_timeline([hostile]), size_over_time([hostile])):
        assert "<script" not in str(chart)
        parse(chart)
    (point,) = points(parse(snapshot_timeline([hostile])))
    assert classes(point) == {"point", "op-other"}
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in str(snapshot_timeline([hostile]))
    assert title_of(point).splitlines()[2:4] == [HOSTILE, "records +0 / -0"]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("12", "12"),
        ("12.7", "12"),
        ("not a number", "0"),
        ("", "0"),
        ("-5", "0"),
        ("nan", "0"),
        ("1e30", "1,000,000,000,000,000,000"),
        ("inf", "1,000,000,000,000,000,000"),
        ("9" * 5000, "1,000,000,000,000,000,000"),
    ],
)
def test_summary_numbers_are_integers_clamped_to_zero_and_1e18(raw: str, shown: str) -> None:
    (point,) = points(parse(snapshot_timeline([snapshot(0, **{"added-records": raw})])))
    assert title_of(point).splitlines()[3] == f"records +{shown} / -0"


@pytest.mark.parametrize(("at", "shown"), [(-5_000, "1970-01-01T00:00:00Z"), (10**20, "9999-12-31T23:59:59Z")])
def test_timestamps_out_of_range_are_clamped_not_raised(at: int, shown: str) -> None:
    (point,) = points(parse(snapshot_timeline([snapshot(0, at=at)])))
    assert title_of(point).splitlines()[1] == shown


def test_absurd_values_keep_every_shape_inside_the_view_box() -> None:
    absurd = {key: "1e30" for key in ("added-records", "deleted-records", "added-data-files", "total-files-size")}
    snapshots = [snapshot(0, at=-1, **absurd), snapshot(1, at=10**20, **{**absurd, "total-records": "-7"})]
    for chart in (snapshot_timeline(snapshots), size_over_time(snapshots)):
        root = parse(chart)
        _, _, width, height = map(float, root.get("viewBox", "").split())
        xs = [float(e.get(a, "")) for e in root.iter() for a in ("x", "x1", "x2", "cx") if a in e.attrib]
        ys = [float(e.get(a, "")) for e in root.iter() for a in ("y", "y1", "y2", "cy") if a in e.attrib]
        for line in root.iter(f"{SVG}polyline"):
            pairs = [point.split(",") for point in line.get("points", "").split()]
            xs, ys = xs + [float(x) for x, _ in pairs], ys + [float(y) for _, y in pairs]
        assert all(0 <= x <= width for x in xs)
        assert all(0 <= y <= height for y in ys)


def test_equal_timestamps_spread_the_points_by_index() -> None:
    root = parse(snapshot_timeline([snapshot(n, at=START_MS) for n in range(4)]))
    xs = [float(p.get("cx", "")) for p in points(root)]
    assert xs == sorted(xs)
    assert len(set(xs)) == 4


def test_no_snapshots_gives_a_message_instead_of_a_chart() -> None:
    assert snapshot_timeline(table().snapshots) == Markup('<p class="empty">No snapshots yet.</p>')
    assert size_over_time([]) == Markup('<p class="empty">No size totals in the snapshot summaries.</p>')


def test_more_than_max_points_draws_the_most_recent_and_says_so_in_a_caption() -> None:
    root = parse(snapshot_timeline(history(30), max_points=10))
    assert root.get("data-points") == "10"
    assert [p.get("data-snapshot-id") for p in points(root)] == [str(1000 + n) for n in range(20, 30)]
    (caption,) = elements_with(root, "caption")
    assert caption.text == "Showing the most recent 10 of 30 snapshots."
    assert not elements_with(parse(snapshot_timeline(history(10), max_points=10)), "caption")


def test_the_default_cap_is_2000_points() -> None:
    assert parse(snapshot_timeline(history(2001))).get("data-points") == "2000"
    assert parse(size_over_time(history(2001))).get("data-points") == "2000"


def test_a_thousand_snapshots_render_fast() -> None:
    snapshots = history(1000)
    started = time.perf_counter()
    timeline, size = snapshot_timeline(snapshots), size_over_time(snapshots)
    elapsed = time.perf_counter() - started
    print(f"1,000 snapshots: both charts in {elapsed * 1000:.1f} ms")
    assert elapsed < 1.0
    assert parse(timeline).get("data-points") == parse(size).get("data-points") == "1000"


def test_size_chart_skips_snapshots_without_totals() -> None:
    totals = {"total-records": "1000", "total-files-size": str(1_258_291)}
    metadata = table(snapshot(0, **totals), snapshot(1), snapshot(2, **{"added-records": "3"}), snapshot(3, **totals))
    root = parse(size_over_time(metadata.snapshots))
    assert classes(root) == {"chart", "size-over-time"}
    assert root.get("role") == "img"
    assert root.get("data-points") == "2"
    lines = {cls: line for line in root.iter(f"{SVG}polyline") for cls in classes(line) - {"series"}}
    assert set(lines) == {"total-records", "total-size"}
    assert [len(line.get("points", "").split()) for line in lines.values()] == [2, 2]
    assert "1.2 MiB" in [label.text for label in elements_with(root, "axis-label")]


def test_size_chart_draws_a_total_only_over_the_snapshots_that_carry_it() -> None:
    metadata = table(snapshot(0, **{"total-records": "5"}), snapshot(1, **{"total-files-size": "10"}))
    root = parse(size_over_time(metadata.snapshots))
    assert root.get("data-points") == "2"
    assert [len(line.get("points", "").split()) for line in root.iter(f"{SVG}polyline")] == [1, 1]


def test_charts_carry_no_style_attributes_or_scripts() -> None:
    """The console's Content-Security-Policy allows neither: everything is styled by class."""
    summary = {"added-records": "1", "deleted-records": "1", "total-records": "1", "total-files-size": "1"}
    for chart in (snapshot_timeline([snapshot(0, **summary)]), size_over_time([snapshot(0, **summary)])):
        root = parse(chart)
        assert not [element for element in root.iter() if "style" in element.attrib]
        assert not list(root.iter(f"{SVG}script"))


def test_a_snapshot_without_summary_is_drawn_as_other_with_zeros() -> None:
    bare = snapshot(0).model_copy(update={"summary": None})
    (point,) = points(parse(snapshot_timeline([bare])))
    assert classes(point) == {"point", "op-other"}
    assert title_of(point).splitlines()[2:] == ["no summary", "records +0 / -0", "data files +0 / -0"]
    assert size_over_time([bare]) == Markup('<p class="empty">No size totals in the snapshot summaries.</p>')


def test_nine_snapshots_within_a_second_are_spaced_evenly_by_order() -> None:
    snapshots = [snapshot(0, at=START_MS - 86_400_000), *(snapshot(n, at=START_MS + n * 100) for n in range(1, 10))]
    root = parse(snapshot_timeline(snapshots))
    xs = [float(p.get("cx", "")) for p in points(root)]
    gaps = {round(b - a, 1) for a, b in itertools.pairwise(xs)}
    assert len(xs) == 10 and len(gaps) == 1  # one day then nine within a second: still equal steps


def test_bars_stay_inside_the_plot_and_time_labels_do_not_overlap() -> None:
    many = [snapshot(n, **{"added-records": "5", "deleted-data-files": "2"}) for n in range(300)]
    for drawn in (many, many[:1], many[:9]):
        root = parse(snapshot_timeline(drawn))
        _, _, width, _height = map(float, root.get("viewBox", "").split())
        axis = next(e for e in root.iter(f"{SVG}line") if "axis" in classes(e))
        left, right, bottom = float(axis.get("x1", "")), float(axis.get("x2", "")), float(axis.get("y1", ""))
        for bar in elements_with(root, "bar"):
            x, w = float(bar.get("x", "")), float(bar.get("width", ""))
            assert left <= x and x + w <= right
            assert float(bar.get("y", "")) + float(bar.get("height", "")) <= bottom
        labels = [e for e in elements_with(root, "axis-label") if float(e.get("y", "")) > bottom]
        spans = []
        for label in labels:
            x, anchor = float(label.get("x", "")), label.get("text-anchor")
            start = x if anchor == "start" else x - 120 if anchor == "end" else x - 60
            assert start >= 0 and start + 120 <= width
            spans.append((start, start + 120))
        spans.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def test_size_chart_names_in_its_legend_only_the_totals_it_draws() -> None:
    root = parse(size_over_time([snapshot(0, **{"total-records": "10"})]))
    assert [e.text for e in elements_with(root, "legend-label")] == ["total records"]
    assert len(elements_with(root, "mark")) == 1  # one point: marked, since a line of one point is invisible


def test_axis_labels_say_only_what_changed_since_the_label_before() -> None:
    day = 86_400_000
    times = [START_MS, START_MS + 250, START_MS + 7_000, START_MS + day]
    assert axis_labels(times) == [
        "2023-11-14T22:13:20Z",
        "22:13:20.250Z",
        "22:13:27Z",
        "2023-11-15T22:13:20Z",
    ]


def test_a_timeline_of_snapshots_within_one_second_labels_them_apart() -> None:
    root = parse(snapshot_timeline([snapshot(i, at=START_MS + 100 * i) for i in range(9)]))
    bottom = max(float(e.get("y", "0")) for e in elements_with(root, "axis-label"))
    texts = [e.text for e in elements_with(root, "axis-label") if float(e.get("y", "")) == bottom]
    assert texts[0] == "2023-11-14T22:13:20Z" and len(set(texts)) == len(texts) > 1
