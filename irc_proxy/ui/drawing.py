"""What the table and view pages show, built in a worker thread within the page's deadline
(``ui.budget``): windows on every long list (``ui.windows``), the charts, the schema history and a
view's version diff. Pure functions of the metadata and the query; nothing here does I/O.

The query is read only for the lists' own keys (``TABLE_LISTS``, ``VIEW_LISTS``): other parameters
neither reach the links nor vary the cache of drawn table pages (``_DRAWN``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyiceberg.table.metadata import TableMetadata
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
    facts = TableFacts(
        int(metadata.format_version),
        str(metadata.table_uuid),
        metadata.location,
        metadata.last_updated_ms,
        len(metadata.snapshots),
        metadata.current_schema_id,
        metadata.default_spec_id,
        metadata.default_sort_order_id,
    )
    values = {
        "metadata": facts,
        "schema_rows": windows.counted(models.iter_field_rows(metadata.schema(), check), query, "columns"),
        "history": history,
        "changes": models.schema_changes(ordered, history.items, check),
        "timeline": charts.snapshot_timeline(snapshots),
        "sizes": charts.size_over_time(snapshots),
        "specs": windows.of_list(metadata.partition_specs, query, "specs"),
        "orders": windows.of_list(metadata.sort_orders, query, "orders"),
        "refs": windows.of_mapping(metadata.refs, query, "refs"),
        "snapshots": windows.of_list(snapshots[::-1], query, "snapshots"),
        "properties": windows.of_mapping(metadata.properties, query, "properties"),
        "log": windows.of_list(metadata.metadata_log[::-1], query, "log"),
        "fields_per_entry": FIELDS_PER_ENTRY,
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
