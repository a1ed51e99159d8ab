"""What the table and view pages show, built in a worker thread within the page's deadline
(``ui.budget``): windows on every long list (``ui.windows``), the charts, the schema history and a
view's version diff. Pure functions of the metadata and the query; nothing here does I/O.

The query is read only for the lists' own keys (``TABLE_LISTS``, ``VIEW_LISTS``): other parameters
neither reach the links nor vary the cache of drawn table pages (``_DRAWN``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from markupsafe import Markup
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRef
from pyiceberg.table.snapshots import MetadataLogEntry, Snapshot
from pyiceberg.table.sorting import SortOrder
from pyiceberg.types import NestedField
from pyiceberg.view.metadata import ViewMetadata

from irc_proxy.ui import charts, models, windows
from irc_proxy.ui.lru import Lru

TABLE_LISTS = ("columns", "schemas", "specs", "orders", "refs", "snapshots", "properties", "log")
"""The table page's lists, each paged by its own query parameter."""
VIEW_LISTS = ("versions", "properties")
HISTORY_SIZE = 10
"""Schemas per window of the schema history (each is compared field by field with the one before it)."""
FIELDS_PER_ENTRY = 50
"""Fields shown at most per partition spec or sort order."""
_CHARTS: Lru[tuple[str, ...], dict[str, Markup]] = Lru(16)
"""The charts of recently drawn metadata files by (catalog, table, metadata location): each window of a
page shares them (a chart of 2,000 snapshots is some hundred kilobytes)."""


_DRAWN: Lru[tuple[str, ...], dict[str, Any]] = Lru(32)
"""Recently drawn table pages by (catalog, table, metadata location, windows): metadata files never change,
so a page shown again is built once. Keyed by catalog and table too, so a remote catalog that reports
another table's metadata location cannot draw (or read) that table's page."""


@dataclass(frozen=True)
class TableFacts:
    """What the table page says about the table itself (so a drawn page needs no metadata to be shown again)."""

    format_version: int
    table_uuid: str
    location: str
    last_updated_ms: int
    snapshot_count: int
    current_schema_id: int
    default_spec_id: int
    default_sort_order_id: int
    next_row_id: int | None = None
    """v3 row lineage: the first row id the next snapshot assigns (None before v3)."""
    encryption_keys: int = 0
    """v3: how many encryption keys the table holds (their ids and metadata are not shown)."""


@dataclass(frozen=True)
class Entry:
    """A partition spec or sort order as shown: its id and at most ``FIELDS_PER_ENTRY`` fields as text (the
    drawn-page cache keeps these, never the metadata's own objects)."""

    entry_id: int
    fields: list[str]
    left_out: int


SNAPSHOT_COLUMNS = (
    *("added-records", "deleted-records", "added-data-files", "deleted-data-files"),
    *("added-delete-files", "removed-delete-files", "total-records"),
)
"""The snapshot summary's numbers the snapshots table shows, in its columns' order (empty when absent)."""


@dataclass(frozen=True)
class SnapshotRow:
    snapshot_id: int
    timestamp_ms: int
    operation: str
    added_records: str
    deleted_records: str
    added_files: str
    deleted_files: str
    added_delete_files: str
    removed_delete_files: str
    total_records: str


def _entry(entry_id: int, fields: list[str], total: int) -> Entry:
    """``fields``: the first ``FIELDS_PER_ENTRY`` of ``total``."""
    return Entry(entry_id, [windows.cut(text, 200) for text in fields], total - len(fields))


def _snapshot_row(snapshot: Any) -> SnapshotRow:
    summary = snapshot.summary
    extra = summary.additional_properties if summary is not None else {}
    operation = summary.operation.value if summary is not None else ""
    numbers = (windows.cut(extra.get(key, ""), 40) for key in SNAPSHOT_COLUMNS)
    return SnapshotRow(snapshot.snapshot_id, snapshot.timestamp_ms, operation, *numbers)


def _spec(spec: PartitionSpec) -> Entry:
    shown = spec.fields[:FIELDS_PER_ENTRY]
    return _entry(spec.spec_id, [f"{f.name} = {f.transform}({f.source_id})" for f in shown], len(spec.fields))


def _order(order: SortOrder) -> Entry:
    shown = order.fields[:FIELDS_PER_ENTRY]
    fields = [f"{f.transform}({f.source_id}) {f.direction.value} {f.null_order.value}" for f in shown]
    return _entry(order.order_id, fields, len(order.fields))


def _pair(item: tuple[str, str]) -> tuple[str, str]:
    return windows.cut(item[0]), windows.cut(item[1])


def _ref(item: tuple[str, SnapshotRef]) -> tuple[str, str, int]:
    return windows.cut(item[0]), item[1].snapshot_ref_type.value, item[1].snapshot_id


def _logged(entry: MetadataLogEntry) -> tuple[int, str]:
    return entry.timestamp_ms, windows.cut(entry.metadata_file)


def _field(walked: tuple[NestedField, str, int]) -> models.FieldRow:
    row = models.field_row(*walked)
    return replace(row, path=windows.cut(row.path, 500), type=windows.cut(row.type, 200), doc=windows.cut(row.doc))


def _change(change: models.SchemaChange) -> models.SchemaChange:
    def names(listed: list[str]) -> list[str]:
        return [windows.cut(name, 500) for name in listed]

    return replace(change, added=names(change.added), removed=names(change.removed), changed=names(change.changed))


def _shown(window: windows.Window[Any], show: Callable[[Any], Any]) -> windows.Window[Any]:
    return replace(window, items=[show(item) for item in window.items])


def _charts(key: tuple[str, ...] | None, snapshots: list[Snapshot]) -> dict[str, Markup]:
    """Both charts of a metadata file, drawn once for all its windows (``_CHARTS``)."""
    found = _CHARTS.get(key) if key else None
    if found is None:
        found = {"timeline": charts.snapshot_timeline(snapshots), "sizes": charts.size_over_time(snapshots)}
        if key:
            _CHARTS.put(key, found)
    return found


def table_key(catalog: str, ident: str, location: str, query: Mapping[str, str]) -> tuple[str, ...]:
    """The drawn-page cache key: catalog, table, metadata location and the windows asked for."""
    return (catalog, ident, location, *(f"{k}={v}" for k, v in sorted(query.items())))


def drawn_table(key: tuple[str, ...]) -> dict[str, Any] | None:
    """The table page's values drawn before for ``key``, if still cached."""
    return _DRAWN.get(key)


def lists_of(query: Mapping[str, str], keys: tuple[str, ...]) -> dict[str, str]:
    """The query's list offsets (checked: BadRequest when one is not a number)."""
    picked = {key: query[key] for key in keys if key in query}
    for key in picked:
        windows.offset_of(picked, key)
    return picked


def table_values(
    key: tuple[str, ...] | None, metadata: TableMetadata, query: Mapping[str, str], check: Callable[[], None]
) -> dict[str, Any]:
    """The table page's values for ``query``'s windows, cached under ``key`` (``table_key``; None: not cached,
    for metadata without a location)."""
    check()
    snapshots = sorted(metadata.snapshots, key=lambda s: s.timestamp_ms)
    check()
    ordered = sorted(metadata.schemas, key=lambda s: s.schema_id)
    history = windows.of_list(range(len(ordered) - 1, -1, -1), query, "schemas", HISTORY_SIZE)
    schema = metadata.schema()
    facts = TableFacts(
        int(metadata.format_version),
        str(metadata.table_uuid),
        metadata.location,
        metadata.last_updated_ms,
        len(metadata.snapshots),
        metadata.current_schema_id,
        metadata.default_spec_id,
        metadata.default_sort_order_id,
        getattr(metadata, "next_row_id", None),
        len(getattr(metadata, "encryption_keys", None) or ()),
    )
    values = {
        "metadata": facts,
        "schema_rows": _shown(windows.counted(models.walk_fields(schema, check), query, "columns"), _field),
        "history": history,
        "changes": [_change(change) for change in models.schema_changes(ordered, history.items, check)],
        **_charts(key[:3] if key else None, snapshots),
        "specs": _shown(windows.of_list(metadata.partition_specs, query, "specs"), _spec),
        "orders": _shown(windows.of_list(metadata.sort_orders, query, "orders"), _order),
        "refs": _shown(windows.of_mapping(metadata.refs, query, "refs"), _ref),
        "snapshots": _shown(windows.of_list(snapshots[::-1], query, "snapshots"), _snapshot_row),
        "properties": _shown(windows.of_mapping(metadata.properties, query, "properties"), _pair),
        "log": _shown(windows.of_list(metadata.metadata_log[::-1], query, "log"), _logged),
    }
    check()
    if key is not None:
        _DRAWN.put(key, values)
    return values


def view_values(
    metadata: ViewMetadata, old: int | None, new: int | None, query: Mapping[str, str], check: Callable[[], None]
) -> dict[str, Any]:
    """The view page's values: the current SQL (cut), a window of versions, the diff of ``old`` and ``new``."""
    versions = sorted(metadata.versions, key=lambda v: v.version_id, reverse=True)
    current = next(v for v in versions if v.version_id == metadata.current_version_id)
    shown = windows.of_list(versions, query, "versions")
    pair = [i for i in (old, new) if i is not None]
    choices = sorted({v.version_id for v in shown.items} | {metadata.current_version_id, *pair})
    diff = models.version_diff(metadata, old, new, check) if old is not None and new is not None else {}
    return {
        "current": current,
        "current_sql": models.shown_sql(current),
        "versions": shown,
        "choices": choices[::-1],
        "diff": diff,
        "properties": windows.of_mapping(metadata.properties, query, "properties"),
    }
