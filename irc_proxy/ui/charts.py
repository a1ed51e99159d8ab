"""Snapshot charts for a table's page, drawn as SVG on the server from the snapshots' summaries.

``snapshot_timeline`` shows each snapshot as a point, coloured by its operation, evenly spaced in time order (by
order, not by time: nine snapshots within one second would otherwise pile up at one edge; the times are on the axis
labels), over bars for the records it added (up) and deleted (down) and, in a smaller band below, the data files it
added and removed; hovering a point shows its ``<title>`` (id, UTC time, operation, numbers). ``size_over_time``
draws the table's ``total-records`` (left axis) and ``total-files-size`` (right axis, bytes) in the same order; a
legend names only the series drawn. Every mark stays inside the plot area, and the time labels under it are spaced
so they never overlap one another or the axes.

Why SVG on the server: the console runs no JavaScript and is served under a strict Content-Security-Policy
(no inline scripts, no ``style`` attributes), so a chart is plain markup styled by class from the console's
stylesheet; only geometry and ``text-anchor`` are attributes. Everything read from the metadata is escaped,
summary values that are not numbers count as 0 and numbers are clamped to [0, 1e18]; at most ``max_points``
snapshots (the most recent) are drawn, and a caption says so.

Classes for the stylesheet: ``chart``, ``snapshot-timeline``, ``size-over-time``, ``empty``, ``caption``,
``legend``, ``swatch``, ``legend-label``, ``axis``, ``axis-label``, ``band-label``, ``zero-line``, ``point``,
``bar``, ``tick``, ``mark``, ``records-added``, ``records-deleted``, ``files-added``, ``files-deleted``, ``series``,
``total-records``, ``total-size``, ``op-append``, ``op-overwrite``, ``op-delete``, ``op-replace``, ``op-other``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from operator import attrgetter
from typing import NamedTuple

from markupsafe import Markup, escape
from pyiceberg.table.snapshots import Snapshot

MAX_POINTS = 2000
"""Snapshots drawn at most, the most recent: a table can keep many thousands."""
MARKED = 60
"""Series of at most this many points mark each point (a series of one point is no line at all)."""
LIMIT = 10**18
"""Counts and sizes are clamped to [0, LIMIT]."""
OPERATIONS = ("append", "overwrite", "delete", "replace")
"""Operations with their own class (``op-append``, ...); any other is ``op-other``."""
_MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the last instant a datetime holds
_CHANGES = ("added-records", "deleted-records", "added-data-files", "deleted-data-files")
_BYTES = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
_COUNTS = ("", "k", "M", "G", "T", "P", "E")


class _Box(NamedTuple):
    """A plot area in SVG user units."""

    left: float
    top: float
    right: float
    bottom: float


class _Total(NamedTuple):
    """A summary total drawn by ``size_over_time``: its key, class, legend name, units and side of its axis."""

    key: str
    cls: str
    name: str
    base: int
    units: tuple[str, ...]
    left: bool


class _Row(NamedTuple):
    """What the charts read from a snapshot, read once: pydantic's attribute access is slow."""

    snapshot_id: int
    ms: int
    operation: str
    summary: Mapping[str, object]


_TOTALS = (
    _Total("total-records", "total-records", "total records", 1000, _COUNTS, left=True),
    _Total("total-files-size", "total-size", "total size", 1024, _BYTES, left=False),
)


def _count(raw: object) -> int:
    """A summary value as an integer in [0, LIMIT]; anything that is not a number is 0."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return 0
    try:
        number: float = int(raw)
    except (ValueError, OverflowError):
        try:
            number = float(raw)
        except ValueError:
            return 0
    if isinstance(number, float) and math.isnan(number):
        return 0
    return int(max(0, min(number, LIMIT)))


def _rows(snapshots: Iterable[Snapshot]) -> list[_Row]:
    """The snapshots in time order, timestamps clamped to what a datetime holds."""
    rows = []
    for snapshot in snapshots:
        summary, ms = snapshot.summary, min(_count(snapshot.timestamp_ms), _MAX_MS)
        operation = getattr(summary, "operation", None) or ""
        properties = summary.additional_properties if summary is not None else {}
        rows.append(_Row(snapshot.snapshot_id, ms, str(getattr(operation, "value", operation)), properties))
    return sorted(rows, key=attrgetter("ms"))


def _iso(ms: int) -> str:
    """UTC ISO 8601 to the second: ``2024-05-01T12:00:00Z``."""
    return datetime.fromtimestamp(ms // 1000, UTC).isoformat().replace("+00:00", "Z")


def axis_labels(times_ms: Sequence[int]) -> list[str]:
    """The time labels under the axis, each saying only what changed since the label before it: the first in
    full (``2024-05-01T12:00:00Z``), then the time alone on the same day (``12:00:07Z``), with milliseconds when
    the second is the same (``12:00:07.250Z``), so nine snapshots written within a second read apart."""
    labels: list[str] = []
    before: int | None = None
    for ms in times_ms:
        full = _iso(ms)
        text = full if before is None or _iso(before)[:10] != full[:10] else full[11:]
        if before is not None and _iso(before) == full:
            text = f"{text[:-1]}.{ms % 1000:03d}Z"
        labels.append(text)
        before = ms
    return labels


def _op_class(operation: str) -> str:
    return f"op-{operation}" if operation in OPERATIONS else "op-other"


def _human(value: int, base: int, units: Sequence[str]) -> str:
    """``value`` in the largest unit it reaches: ``1.2 MiB``, ``3.4 M``, ``512 B``, ``12``."""
    scaled, unit = float(value), 0
    while scaled >= base and unit < len(units) - 1:
        scaled, unit = scaled / base, unit + 1
    return f"{value} {units[0]}".rstrip() if unit == 0 else f"{scaled:.1f} {units[unit]}"


def _recent(rows: list[_Row], max_points: int) -> list[_Row]:
    """The most recent ``max_points`` rows, at least one."""
    return rows[-max(1, max_points) :]


def _xs(count: int, box: _Box) -> list[float]:
    """x of each of ``count`` snapshots in order: the centres of ``count`` equal slots, so a bar (at most a slot
    wide) never reaches past the plot's edges onto its axes."""
    step = (box.right - box.left) / count
    return [box.left + (i + 0.5) * step for i in range(count)]


LABEL_WIDTH = 130
"""Width of a time label (``2024-05-01T12:00:00Z`` at 11 px) in user units, with a gap."""


def _label_xs(xs: Sequence[float], box: _Box) -> list[tuple[int, float]]:
    """Which snapshots get a time label under the axis, and where its centre goes: each label centred under its
    point but kept inside the plot (``LABEL_WIDTH`` wide), no two closer than ``LABEL_WIDTH``; the first and the
    last snapshot always labelled (a single one: once)."""
    low, high = box.left + LABEL_WIDTH / 2, box.right - LABEL_WIDTH / 2
    centres = [min(max(x, low), high) for x in xs]
    last = len(xs) - 1
    picked: list[tuple[int, float]] = []
    for i, centre in enumerate(centres[:-1]):
        if not picked or centre - picked[-1][1] >= LABEL_WIDTH:
            picked.append((i, centre))
    while last and picked and centres[last] - picked[-1][1] < LABEL_WIDTH:
        picked.pop()  # too close to the last one: the last one is kept
    return [*picked, (last, centres[last])]


def _text(x: float, y: float, text: str, cls: str, anchor: str = "start") -> str:
    return f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{escape(text)}</text>'


def _line(x1: float, y1: float, x2: float, y2: float, cls: str) -> str:
    return f'<line class="{cls}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>'


def _legend(entries: Iterable[tuple[str, str]], x: float, y: float) -> str:
    parts = ['<g class="legend">']
    for cls, label in entries:
        parts += [f'<rect class="swatch {cls}" x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10"/>']
        parts += [_text(x + 14, y, label, "legend-label")]
        x += 26 + 7 * len(label)
    return "".join([*parts, "</g>"])


def _frame(drawn: Sequence[_Row], total: int, width: int, box: _Box, xs: Sequence[float]) -> str:
    """The axis with the times of some snapshots under their points (``_label_xs``), and a caption when
    snapshots were left out."""
    parts = [_line(box.left, box.bottom, box.right, box.bottom, "axis")]
    placed = _label_xs(xs, box)
    for (i, centre), text in zip(placed, axis_labels([drawn[i].ms for i, _ in placed]), strict=True):
        parts += [
            _line(xs[i], box.bottom, xs[i], box.bottom + 4, "tick"),
            _text(centre, box.bottom + 16, text, "axis-label", "middle"),
        ]
    if len(drawn) < total:
        note = f"Showing the most recent {len(drawn):,} of {total:,} snapshots."
        parts.append(_text(width - 8, 14, note, "caption", "end"))
    return "".join(parts)


def _svg(kind: str, title: str, drawn: Sequence[_Row], width: int, height: int, body: Iterable[str]) -> Markup:
    label = f"{title}: {len(drawn)} snapshots from {_iso(drawn[0].ms)} to {_iso(drawn[-1].ms)}, in order"
    return Markup(  # noqa: S704 - every text in ``body`` went through ``escape``
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {kind}" role="img" aria-label="{escape(label)}" '
        f'viewBox="0 0 {width} {height}" data-points="{len(drawn)}">{"".join(body)}</svg>'
    )


def _empty(message: str) -> Markup:
    return Markup('<p class="empty">{}</p>').format(message)


def _band(
    band: _Box, name: str, pairs: Sequence[tuple[int, int]], xs: Sequence[float], ops: Sequence[str], width: float
) -> str:
    """Bars ``width`` wide around a zero line: what each snapshot added (up) and removed (down), the scale labelled."""
    scale = max((max(pair) for pair in pairs), default=1) or 1
    mid, half = (band.top + band.bottom) / 2, (band.bottom - band.top) / 2
    most = _human(scale, 1000, _COUNTS)
    parts = [
        _line(band.left, mid, band.right, mid, "zero-line"),
        _text(band.left - 6, mid + 4, name, "band-label", "end"),  # in the left margin: no bar runs over it
    ]
    parts += [_text(band.left - 6, band.top + 9, f"+{most}", "axis-label", "end")]
    parts += [_text(band.left - 6, band.bottom, f"-{most}", "axis-label", "end")]
    for x, op, pair in zip(xs, ops, pairs, strict=True):
        for value, side, up in ((pair[0], "added", True), (pair[1], "deleted", False)):
            if value:
                tall = max(1.0, value / scale * half)
                parts.append(
                    f'<rect class="bar {name}-{side} {op}" x="{x - width / 2:.1f}" y="{mid - tall if up else mid:.1f}" '
                    f'width="{width:.1f}" height="{tall:.1f}"/>'
                )
    return "".join(parts)


def _point(x: float, y: float, row: _Row, numbers: Sequence[int]) -> str:
    """A snapshot's point, its ``<title>`` the tooltip."""
    added, deleted, files_added, files_deleted = numbers
    title = (
        f"Snapshot {row.snapshot_id}\n{_iso(row.ms)}\n{row.operation or 'no summary'}\n"
        f"records +{added:,} / -{deleted:,}\ndata files +{files_added:,} / -{files_deleted:,}"
    )
    return (
        f'<circle class="point {_op_class(row.operation)}" cx="{x:.1f}" cy="{y:.1f}" r="4" '
        f'data-snapshot-id="{escape(row.snapshot_id)}"><title>{escape(title)}</title></circle>'
    )


def snapshot_timeline(
    snapshots: Sequence[Snapshot], width: int = 900, height: int = 260, *, max_points: int = MAX_POINTS
) -> Markup:
    """One point per snapshot in time order over bars of the records and data files it added and removed.

    The most recent ``max_points`` snapshots are drawn; ``width`` and ``height`` (at least 320 by 160) set the viewBox.
    """
    if not snapshots:
        return _empty("No snapshots yet.")
    drawn, width, height = _recent(_rows(snapshots), max_points), max(width, 320), max(height, 160)
    box = _Box(64.0, 24.0, width - 16.0, height - 24.0)
    split = box.top + (box.bottom - box.top) * 0.62
    records, files = box._replace(bottom=split - 6), box._replace(top=split + 6, bottom=box.bottom - 2)
    xs, classes = _xs(len(drawn), box), [_op_class(row.operation) for row in drawn]
    numbers = [[_count(row.summary.get(key)) for key in _CHANGES] for row in drawn]
    present, mid = set(classes), (records.top + records.bottom) / 2
    bar = min(10.0, 0.6 * (box.right - box.left) / len(drawn))  # within a slot; the files' bars are half as wide
    body = [
        _legend(((f"op-{op}", op) for op in (*OPERATIONS, "other") if f"op-{op}" in present), 8, 14),
        _band(records, "records", [(n[0], n[1]) for n in numbers], xs, classes, bar),
        _band(files, "files", [(n[2], n[3]) for n in numbers], xs, classes, bar / 2),
        _frame(drawn, len(snapshots), width, box, xs),
        *(_point(x, mid, row, n) for x, row, n in zip(xs, drawn, numbers, strict=True)),
    ]
    return _svg("snapshot-timeline", "Snapshot timeline", drawn, width, height, body)


def _series(box: _Box, total: _Total, xs: Sequence[float], values: Sequence[int | None]) -> str:
    """One total as a polyline over the snapshots that carry it, its scale labelled on its side."""
    scale = max((v for v in values if v is not None), default=1) or 1
    at = [
        (x, box.bottom - v / scale * (box.bottom - box.top)) for x, v in zip(xs, values, strict=True) if v is not None
    ]
    if not at:
        return ""
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in at)
    # a line of one point draws nothing: few points are marked, so each is seen
    marks = (
        "".join(f'<circle class="mark {total.cls}" cx="{x:.1f}" cy="{y:.1f}" r="3"/>' for x, y in at)
        if len(at) <= MARKED
        else ""
    )
    edge, anchor = (box.left - 6, "end") if total.left else (box.right + 6, "start")
    return (
        f'<polyline class="series {total.cls}" points="{points}"/>{marks}'
        + _text(edge, box.top + 9, _human(scale, total.base, total.units), "axis-label", anchor)
        + _text(edge, box.bottom, "0", "axis-label", anchor)
    )


def size_over_time(
    snapshots: Sequence[Snapshot], width: int = 900, height: int = 200, *, max_points: int = MAX_POINTS
) -> Markup:
    """The table's ``total-records`` and ``total-files-size`` over time; snapshots without them are skipped."""
    sized = [row for row in _rows(snapshots) if any(row.summary.get(total.key) is not None for total in _TOTALS)]
    if not sized:
        return _empty("No size totals in the snapshot summaries.")
    drawn, width, height = _recent(sized, max_points), max(width, 320), max(height, 120)
    box = _Box(64.0, 24.0, width - 72.0, height - 24.0)
    xs = _xs(len(drawn), box)
    drawn_totals, series = [], []
    for total in _TOTALS:
        values = [None if row.summary.get(total.key) is None else _count(row.summary.get(total.key)) for row in drawn]
        line = _series(box, total, xs, values)
        if line:
            drawn_totals.append(total)
            series.append(line)
    legend = _legend(((total.cls, total.name) for total in drawn_totals), 8, 14)
    body = [legend, _frame(drawn, len(sized), width, box, xs), *series]
    return _svg("size-over-time", "Table size over time", drawn, width, height, body)
