"""What the console's pages show, computed from Iceberg metadata: pure functions, no HTTP, no I/O.

A schema is flattened into rows (nested structs, lists and maps expanded, with their depth); schema
history compares each schema with the one before it; a view's versions are compared line by line.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, StructType
from pyiceberg.view.metadata import ViewMetadata, ViewVersion


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
    """``path: old -> new`` for a type, requiredness or rename of the same field id."""


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


def field_rows(schema: Schema) -> list[FieldRow]:
    """Every field of ``schema`` depth first, nested ones with a dotted path."""

    def walk(fields: Sequence[NestedField], prefix: str, depth: int) -> Iterator[FieldRow]:
        for nested in fields:
            path = f"{prefix}{nested.name}"
            yield FieldRow(
                nested.field_id, path, _type_name(nested.field_type), nested.required, nested.doc or "", depth
            )
            yield from walk(_children(nested.field_type), f"{path}.", depth + 1)

    return list(walk(schema.fields, "", 0))


def schema_history(schemas: Sequence[Schema]) -> list[SchemaChange]:
    """Each schema against the one before it (by schema id); the first one lists every field as added."""
    history: list[SchemaChange] = []
    before: dict[int, FieldRow] = {}
    for schema in sorted(schemas, key=lambda s: s.schema_id):
        now = {row.field_id: row for row in field_rows(schema)}
        change = SchemaChange(schema.schema_id)
        change.added.extend(now[i].path for i in now.keys() - before.keys())
        change.removed.extend(before[i].path for i in before.keys() - now.keys())
        for field_id in sorted(now.keys() & before.keys()):
            old, new = before[field_id], now[field_id]
            described = [
                f"{what} {a} -> {b}"
                for what, a, b in (
                    ("renamed", old.path, new.path),
                    ("type", old.type, new.type),
                    ("required", old.required, new.required),
                )
                if a != b
            ]
            if described:
                change.changed.append(f"{new.path}: " + ", ".join(described))
        change.added.sort()
        change.removed.sort()
        history.append(change)
        before = now
    return history


def moment(timestamp_ms: int) -> str:
    """An Iceberg timestamp as ISO 8601 UTC, to the second."""
    seconds = max(0, min(timestamp_ms, 253_402_300_799_000)) / 1000
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


MAX_DIFF_LINES = 4000
"""Longest pair of SQL texts (in lines) compared line by line."""


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """``same``, ``added`` or ``removed``."""
    text: str


def sql_of(version: ViewVersion) -> dict[str, str]:
    """The SQL of each dialect of a view version."""
    return {rep.root.dialect: rep.root.sql for rep in version.representations}


def version_diff(metadata: ViewMetadata, old_id: int, new_id: int) -> dict[str, list[DiffLine]]:
    """Per dialect, the SQL of version ``old_id`` against ``new_id``, line by line. Raises KeyError."""
    versions = {v.version_id: v for v in metadata.versions}
    old, new = sql_of(versions[old_id]), sql_of(versions[new_id])
    diffs: dict[str, list[DiffLine]] = {}
    for dialect in sorted(old.keys() | new.keys()):
        a, b = old.get(dialect, "").splitlines(), new.get(dialect, "").splitlines()
        lines: list[DiffLine] = []
        if len(a) + len(b) > MAX_DIFF_LINES:  # bounded cost: difflib is quadratic at worst
            diffs[dialect] = [DiffLine("same", f"(too long to compare here: {len(a)} and {len(b)} lines)")]
            continue
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
            if tag == "equal":
                lines += [DiffLine("same", text) for text in a[i1:i2]]
                continue
            lines += [DiffLine("removed", text) for text in a[i1:i2]]
            lines += [DiffLine("added", text) for text in b[j1:j2]]
        diffs[dialect] = lines
    return diffs
