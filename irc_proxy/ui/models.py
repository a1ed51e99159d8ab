"""What the console's pages show, computed from Iceberg metadata: pure functions, no HTTP, no I/O.

A schema is flattened into rows (nested structs, lists and maps expanded, with their depth); schema
history compares each schema with the one before it; a view's versions are compared line by line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, StructType
from pyiceberg.view.metadata import ViewMetadata, ViewVersion

from irc_proxy.ui import diffing
from irc_proxy.ui.lru import Lru


@dataclass(frozen=True)
class FieldRow:
    """One column (or nested field) of a schema, as a table row."""

    field_id: int
    path: str
    type: str
    required: bool
    doc: str
    depth: int


@dataclass(frozen=True)
class SchemaChange:
    """What one schema changed against the one before it."""

    schema_id: int
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    """``path: what changed`` for a rename, a type, requiredness, doc or default of the same field id."""
    left_out: int = 0
    """Names not listed (over ``NAMES_PER_CHANGE`` of a kind)."""


def _children(kind: IcebergType) -> list[NestedField]:
    if isinstance(kind, StructType):
        return list(kind.fields)
    if isinstance(kind, ListType):
        return [kind.element_field]
    if isinstance(kind, MapType):
        return [kind.key_field, kind.value_field]
    return []


def _type_name(kind: IcebergType) -> str:
    if isinstance(kind, StructType):
        return "struct"
    if isinstance(kind, ListType):
        return "list"
    if isinstance(kind, MapType):
        return "map"
    return str(kind)


CHECK_EVERY = 1024
"""Fields walked between two deadline checks."""
NAMES_PER_CHANGE = 50
"""Field names listed at most per kind of change of one schema (the rest are counted)."""


def walk_fields(schema: Schema, check: Callable[[], None]) -> Iterator[tuple[NestedField, str, int]]:
    """``(field, dotted path, depth)`` of every field of ``schema``, depth first; ``check`` runs every
    ``CHECK_EVERY`` fields (nesting is bounded by the request bodies' depth limit)."""
    seen = 0

    def walk(fields: Sequence[NestedField], prefix: str, depth: int) -> Iterator[tuple[NestedField, str, int]]:
        nonlocal seen
        for nested in fields:
            seen += 1
            if seen % CHECK_EVERY == 0:
                check()
            path = f"{prefix}{nested.name}"
            yield nested, path, depth
            yield from walk(_children(nested.field_type), f"{path}.", depth + 1)

    return walk(schema.fields, "", 0)


def field_row(nested: NestedField, path: str, depth: int) -> FieldRow:
    return FieldRow(nested.field_id, path, _type_name(nested.field_type), nested.required, nested.doc or "", depth)


def iter_field_rows(schema: Schema, check: Callable[[], None] = lambda: None) -> Iterator[FieldRow]:
    """Every field of ``schema`` depth first, nested ones with a dotted path (lazily)."""
    return (field_row(*walked) for walked in walk_fields(schema, check))


def schema_history(schemas: Sequence[Schema], check: Callable[[], None] = lambda: None) -> list[SchemaChange]:
    """Each schema against the one before it (by schema id); the first one lists every field as added."""
    ordered = sorted(schemas, key=lambda s: s.schema_id)
    return schema_changes(ordered, range(len(ordered)), check)


_COMPARED = ("renamed", "type", "requiredness", "doc", "initial default", "write default")
"""What is compared of a field kept by id from one schema to the next (its path, then these)."""
SHOWN_TEXT = 80
"""Characters of a doc or default shown in a schema change (the schema table shows the whole doc)."""


def _compared(nested: NestedField, path: str) -> tuple[str, ...]:
    """What a schema change compares of one field, as text (a default's JSON text: ``None`` is no default)."""
    required = "required" if nested.required else "optional"
    defaults = (getattr(nested, "initial_default", None), getattr(nested, "write_default", None))
    shown = ["" if value is None else repr(value) for value in defaults]
    return (path, _type_name(nested.field_type), required, nested.doc or "", *shown)


def _described(what: str, old: str, new: str) -> str:
    """One change of a field: ``type int -> long``, ``doc set to 'x'``, ``write default removed``."""
    if what in ("renamed", "type", "requiredness"):
        return f"{what} {old} -> {new}" if what != "requiredness" else f"{old} -> {new}"
    if not old:
        return f"{what} set to {_quoted(new)}"
    if not new:
        return f"{what} removed (was {_quoted(old)})"
    return f"{what} {_quoted(old)} -> {_quoted(new)}"


def _quoted(text: str) -> str:
    shown = text if len(text) <= SHOWN_TEXT else text[:SHOWN_TEXT] + "…"
    return shown if shown.startswith("'") else f"'{shown}'"


def schema_changes(ordered: Sequence[Schema], which: Sequence[int], check: Callable[[], None]) -> list[SchemaChange]:
    """The changes of the schemas at positions ``which`` of ``ordered`` (sorted by id), each against the one
    before it; at most ``NAMES_PER_CHANGE`` names per kind of change, the rest counted in ``left_out``."""
    changes = []
    walked: dict[int, dict[int, tuple[str, ...]]] = {}  # the last two schemas' fields: newest first reuses one

    def rows_of(position: int) -> dict[int, tuple[str, ...]]:
        if position not in walked:
            if len(walked) > 1:
                walked.pop(next(iter(walked)))
            fields = walk_fields(ordered[position], check)
            walked[position] = {f.field_id: _compared(f, path) for f, path, _ in fields}
        return walked[position]

    for position in which:
        check()
        now = rows_of(position)
        before = rows_of(position - 1) if position else {}
        change = SchemaChange(ordered[position].schema_id)
        added = sorted(now[i][0] for i in now.keys() - before.keys())
        removed = sorted(before[i][0] for i in before.keys() - now.keys())
        changed = []
        for field_id in sorted(now.keys() & before.keys()):
            old, new = before[field_id], now[field_id]
            if old == new:
                continue
            described = [_described(what, a, b) for what, a, b in zip(_COMPARED, old, new, strict=True) if a != b]
            changed.append(f"{new[0]}: " + ", ".join(described))
        for listed, names in ((change.added, added), (change.removed, removed), (change.changed, changed)):
            listed.extend(names[:NAMES_PER_CHANGE])
        left_out = sum(max(0, len(names) - NAMES_PER_CHANGE) for names in (added, removed, changed))
        changes.append(SchemaChange(change.schema_id, change.added, change.removed, change.changed, left_out))
    return changes


_UNITS = (("year", 365 * 86_400), ("day", 86_400), ("hour", 3_600), ("minute", 60), ("second", 1))


def duration(span: timedelta) -> str:
    """A span as people say it, its two largest units: ``7 days``, ``3 hours``, ``1 day 12 hours``, ``no time``."""
    seconds = int(span.total_seconds())
    parts = []
    for name, size in _UNITS:
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {name}{'' if count == 1 else 's'}")
        if len(parts) == 2:
            break
    return " ".join(parts) or "no time"


def file_name(location: str) -> str:
    """The last part of a file's location (``…/metadata/00003-x.metadata.json``), the whole of it if none."""
    return location.rstrip("/").rsplit("/", 1)[-1] or location


def moment(timestamp_ms: int) -> str:
    """An Iceberg timestamp as ISO 8601 UTC, to the second."""
    seconds = max(0, min(timestamp_ms, 253_402_300_799_000)) / 1000
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """``same``, ``added`` or ``removed``."""
    text: str


MAX_DIFF_LINES = diffing.MAX_DIFF_LINES
"""Most lines of both versions' SQL together (over all dialects) compared line by line."""
MAX_DIALECTS = 20
"""Dialects of a view version shown (and compared) at most."""
MAX_SQL_CHARS = 100_000
"""Characters of one SQL text shown at most."""
_DIFFS: Lru[tuple[str, int, int, str], dict[str, list[DiffLine]]] = Lru(32)
"""Recent diffs by (view uuid, from, to, digest of both versions' SQL): a diff is derived from what its key
names, so a cached one is never another view's (the digest) and each replica may keep its own."""
_CACHED_CHARS = 2_000_000
"""Larger diffs are not cached (the cache stays under ~64 MB)."""


def sql_of(version: ViewVersion) -> dict[str, str]:
    """The SQL of each dialect of a view version."""
    return {rep.root.dialect: rep.root.sql for rep in version.representations}


def shown_sql(version: ViewVersion) -> dict[str, str]:
    """The SQL of at most ``MAX_DIALECTS`` dialects, each cut at ``MAX_SQL_CHARS`` characters (and saying so)."""
    shown = {}
    for dialect, sql in sorted(sql_of(version).items())[:MAX_DIALECTS]:
        cut = len(sql) - MAX_SQL_CHARS
        shown[dialect] = sql if cut <= 0 else f"{sql[:MAX_SQL_CHARS]}\n… ({cut:,} more characters not shown)"
    return shown


def version_diff(
    metadata: ViewMetadata, old_id: int, new_id: int, check: Callable[[], None] = lambda: None
) -> dict[str, list[DiffLine]]:
    """Per dialect, the SQL of version ``old_id`` against ``new_id``, line by line. Raises KeyError.

    Bounded: at most ``MAX_DIALECTS`` dialects, ``MAX_DIFF_LINES`` lines and ``diffing.MAX_DIFF_CHARS``
    characters over all of them are compared
    (``diffing``, near-linear); ``check`` runs between steps (a deadline). Cached (``_DIFFS``).
    """
    versions = {v.version_id: v for v in metadata.versions}
    old, new = sql_of(versions[old_id]), sql_of(versions[new_id])
    digest = hashlib.sha256(json.dumps([sorted(old.items()), sorted(new.items())]).encode()).hexdigest()
    key = (str(metadata.view_uuid), old_id, new_id, digest)
    cached = _DIFFS.get(key)
    if cached is not None:
        return cached
    diffs: dict[str, list[DiffLine]] = {}
    lines_left, chars_left = MAX_DIFF_LINES, diffing.MAX_DIFF_CHARS
    dialects = sorted(old.keys() | new.keys())
    for dialect in dialects[:MAX_DIALECTS]:
        chars = len(old.get(dialect, "")) + len(new.get(dialect, ""))
        if chars > chars_left:
            diffs[dialect] = [DiffLine("same", f"(too long to compare here: {chars:,} characters)")]
            continue
        a, b = old.get(dialect, "").splitlines(), new.get(dialect, "").splitlines()
        if len(a) + len(b) > lines_left:
            diffs[dialect] = [DiffLine("same", f"(too long to compare here: {len(a)} and {len(b)} lines)")]
            continue
        lines_left, chars_left = lines_left - len(a) - len(b), chars_left - chars
        diffs[dialect] = [DiffLine(kind, text) for kind, text in diffing.diff_lines(a, b, check)]
    if len(dialects) > MAX_DIALECTS:
        diffs["…"] = [DiffLine("same", f"({len(dialects) - MAX_DIALECTS} more dialects not compared)")]
    if sum(len(line.text) for lines in diffs.values() for line in lines) <= _CACHED_CHARS:
        _DIFFS.put(key, diffs)
    return diffs


_SIZES = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")


def size_text(count: int | None) -> str:
    """A byte count as people read it: ``512 MiB``, ``1.5 GiB``, ``700 bytes``; ``unknown`` for None."""
    if count is None:
        return "unknown"
    value, unit = float(count), 0
    while value >= 1024 and unit < len(_SIZES) - 1:
        value, unit = value / 1024, unit + 1
    return f"{int(value):,} {_SIZES[unit]}" if unit == 0 or value == int(value) else f"{value:.1f} {_SIZES[unit]}"


def duration_ms(milliseconds: int) -> str:
    """``duration`` of a span in milliseconds."""
    return duration(timedelta(milliseconds=milliseconds))
