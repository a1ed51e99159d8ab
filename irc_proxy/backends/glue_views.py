"""Glue ``VIRTUAL_VIEW`` tables written by other engines, rendered as Iceberg view metadata.

What the engines write to Glue (read here, never written):

* **Trino / Presto / Athena** (Trino's ``TrinoViewUtil.createViewProperties``,
  ``ViewReaderUtil.encodeViewData`` and ``GlueIcebergUtil.getViewTableInput``): parameters
  ``presto_view=true`` and ``comment=Presto View``; ``ViewOriginalText`` is
  ``/* Presto View: <base64 of a JSON ConnectorViewDefinition> */`` with ``originalSql``, ``catalog``,
  ``schema``, ``columns`` ``[{name, type}]`` (Trino type signatures) and optional ``comment``/``owner``;
  ``ViewExpandedText`` is the marker ``/* Presto View */``. Materialized views use
  ``/* Presto Materialized View: ... */`` and are not served as views.
* **Spark** (``HiveExternalCatalog`` through a Glue metastore client): parameters
  ``spark.sql.create.version``, ``spark.sql.sources.schema*`` and ``view.*`` (``view.catalogAndNamespace.*``
  is the namespace unqualified names resolve in); ``ViewOriginalText`` and ``ViewExpandedText`` are the
  SQL; the columns are ``StorageDescriptor.Columns`` with Hive types.
* **Anything else** is a Hive view: SQL from ``ViewOriginalText`` (else ``ViewExpandedText``), Hive columns.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from pyiceberg.view.metadata import ViewMetadata, ViewVersion

PRESTO_VIEW_FLAG = "presto_view"
PRESTO_VIEW_PREFIX = "/* Presto View: "
PRESTO_VIEW_SUFFIX = " */"
PRESTO_MATERIALIZED_VIEW_PREFIX = "/* Presto Materialized View: "
PRESTO_VIEW_COMMENT = "Presto View"
PRESTO_VERSION = "presto_version"
SPARK_CREATE_VERSION = "spark.sql.create.version"
SPARK_VIEW_NAMESPACE = "view.catalogandnamespace"  # parameters are matched lower-cased
SPARK_VIEW_DEFAULT_DATABASE = "view.default.database"
ENGINE_VIEW_PROPERTY = "irc-proxy.engine-view"

_TYPE_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*(.*)", re.DOTALL)

Ids = Callable[[], int]


@dataclass(frozen=True)
class ViewDefinition:
    """What an engine's Glue view says, before it becomes Iceberg view metadata."""

    dialect: str
    sql: str
    schema: Schema
    default_namespace: str
    engine_version: str | None = None
    comment: str | None = None


def is_materialized_view(table: Mapping[str, Any]) -> bool:
    return str(table.get("ViewOriginalText") or "").startswith(PRESTO_MATERIALIZED_VIEW_PREFIX)


def decode_presto_view(text: str) -> dict[str, Any]:
    """The JSON inside ``/* Presto View: <base64> */``. Raises ValueError when it is not one."""
    text = text.strip()
    if not (text.startswith(PRESTO_VIEW_PREFIX) and text.endswith(PRESTO_VIEW_SUFFIX)):
        raise ValueError("the view text is not a '/* Presto View: <base64> */' block")
    payload = text[len(PRESTO_VIEW_PREFIX) : -len(PRESTO_VIEW_SUFFIX)].strip()
    try:
        definition = json.loads(base64.b64decode(payload, validate=True))
    except (binascii.Error, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the Presto view payload is not base64-encoded JSON: {exc}") from exc
    if not isinstance(definition, dict) or not isinstance(definition.get("originalSql"), str):
        raise ValueError("the Presto view JSON has no originalSql")
    return definition


def parse_view(table: Mapping[str, Any], namespace: str) -> ViewDefinition:
    """Detect the dialect of a Glue VIRTUAL_VIEW and decode its SQL and columns. Raises ValueError."""
    parameters = {str(k): str(v) for k, v in (table.get("Parameters") or {}).items()}
    lowered = {k.lower(): v for k, v in parameters.items()}
    original = str(table.get("ViewOriginalText") or "")
    expanded = str(table.get("ViewExpandedText") or "")
    description = table.get("Description") or None
    if lowered.get(PRESTO_VIEW_FLAG, "").lower() == "true":
        definition = decode_presto_view(original)
        columns = [(str(c["name"]), str(c["type"]), c.get("comment")) for c in definition.get("columns") or []]
        return ViewDefinition(
            dialect="trino",
            sql=definition["originalSql"],
            schema=build_schema(columns, trino_type),
            default_namespace=str(definition.get("schema") or namespace),
            engine_version=lowered.get(PRESTO_VERSION),
            comment=definition.get("comment") or description,
        )
    hive_columns = [
        (str(c["Name"]), str(c.get("Type") or "string"), c.get("Comment"))
        for c in (table.get("StorageDescriptor") or {}).get("Columns") or []
    ]
    comment = description or (None if lowered.get("comment") == PRESTO_VIEW_COMMENT else lowered.get("comment"))
    if SPARK_CREATE_VERSION in lowered:
        return ViewDefinition(
            dialect="spark",
            sql=original or expanded,
            schema=build_schema(hive_columns, hive_type),
            default_namespace=_spark_namespace(lowered) or namespace,
            engine_version=lowered[SPARK_CREATE_VERSION],
            comment=comment,
        )
    return ViewDefinition("hive", original or expanded, build_schema(hive_columns, hive_type), namespace, None, comment)


def _spark_namespace(parameters: Mapping[str, str]) -> str | None:
    """The database the view's unqualified names resolve in (``spark_catalog.<db>``)."""
    if parameters.get(f"{SPARK_VIEW_NAMESPACE}.numparts") == "2":
        return parameters.get(f"{SPARK_VIEW_NAMESPACE}.part.1")
    return parameters.get(SPARK_VIEW_DEFAULT_DATABASE)


def view_metadata(
    definition: ViewDefinition, view_uuid: str, location: str, timestamp_ms: int, properties: Mapping[str, str]
) -> ViewMetadata:
    """Format-version 1 view metadata with the one version the engine's view has."""
    summary = {"engine-name": definition.dialect}
    if definition.engine_version:
        summary["engine-version"] = definition.engine_version
    version = ViewVersion.model_validate(
        {
            "version-id": 1,
            "schema-id": definition.schema.schema_id,
            "timestamp-ms": timestamp_ms,
            "summary": summary,
            "representations": [{"type": "sql", "sql": definition.sql, "dialect": definition.dialect}],
            "default-namespace": [definition.default_namespace],
        }
    )
    props = dict(properties)
    if definition.comment:
        props["comment"] = str(definition.comment)
    return ViewMetadata.model_validate(
        {
            "view-uuid": view_uuid,
            "format-version": 1,
            "location": location,
            "schemas": [definition.schema],
            "current-version-id": 1,
            "versions": [version],
            "version-log": [{"timestamp-ms": timestamp_ms, "version-id": 1}],
            "properties": props,
        }
    )


def stable_uuid(*parts: object) -> str:
    """A view-uuid that stays the same while the Glue table is the same one (name and creation time)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(str(p) for p in parts)))


def epoch_ms(value: object) -> int:
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    return 0


# Types -------------------------------------------------------------------------------------
def build_schema(columns: list[tuple[str, str, Any]], convert: Callable[[str, Ids], IcebergType]) -> Schema:
    """An Iceberg schema (optional fields, ids assigned top-level first) from (name, type, comment)."""
    ids: Ids = itertools.count(1).__next__
    fields = [
        NestedField(ids(), name, convert(type_text, ids), required=False, doc=str(doc) if doc else None)
        for name, type_text, doc in columns
    ]
    return assign_fresh_schema_ids(Schema(*fields, schema_id=0))


def _split(text: str, separator: str = ",") -> Iterator[str]:
    """Split on ``separator`` outside (), <> and double quotes."""
    depth, quoted, start = 0, False, 0
    for index, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif char in "(<":
            depth += 1
        elif char in ")>":
            depth -= 1
        elif char == separator and depth == 0:
            yield text[start:index].strip()
            start = index + 1
    if text[start:].strip():
        yield text[start:].strip()


_TRINO_PRIMITIVES: dict[str, IcebergType] = {
    "boolean": BooleanType(),
    "tinyint": IntegerType(),
    "smallint": IntegerType(),
    "integer": IntegerType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "real": FloatType(),
    "double": DoubleType(),
    "varchar": StringType(),
    "char": StringType(),
    "json": StringType(),
    "varbinary": BinaryType(),
    "date": DateType(),
    "time": TimeType(),
    "timestamp": TimestampType(),
    "uuid": UUIDType(),
}
_HIVE_PRIMITIVES: dict[str, IcebergType] = _TRINO_PRIMITIVES | {
    "float": FloatType(),
    "string": StringType(),
    "binary": BinaryType(),
    "timestamp_ntz": TimestampType(),
    "timestamp_ltz": TimestamptzType(),
    "timestamp with local time zone": TimestamptzType(),
    "double precision": DoubleType(),
}
_HIVE_TYPE = re.compile(r"([A-Za-z_]+)\s*(?:\((.*)\)|<(.*)>)?", re.DOTALL)
FieldParser = Callable[[str, int, Ids], NestedField]


def trino_type(text: str, ids: Ids) -> IcebergType:
    """A Trino type signature (``bigint``, ``timestamp(3) with time zone``, ``row("a" bigint)``...) as Iceberg.

    Types Iceberg has no counterpart for (interval, time with time zone, ipaddress...) become string.
    """
    match = _TYPE_CALL.fullmatch(text)
    if match is None:
        return StringType()
    base, args, rest = match.group(1).lower(), match.group(2), match.group(3).strip().lower()
    if rest:
        return TimestamptzType() if (base, rest) == ("timestamp", "with time zone") else StringType()
    if base in ("array", "map", "row"):
        return _nested(base, list(_split(args or "")), ids, trino_type, _trino_field)
    return _primitive(base, args, _TRINO_PRIMITIVES)


def hive_type(text: str, ids: Ids) -> IcebergType:
    """A Hive type string (``bigint``, ``decimal(10,2)``, ``array<struct<a:int>>``...) as Iceberg; else string."""
    text = text.strip()
    if text.lower() in _HIVE_PRIMITIVES:
        return _HIVE_PRIMITIVES[text.lower()]
    match = _HIVE_TYPE.fullmatch(text)
    if match is None:
        return StringType()
    base, args, inner = match.group(1).lower(), match.group(2), match.group(3)
    if inner is not None:
        return _nested(base, list(_split(inner)), ids, hive_type, _hive_field)
    return _primitive(base, args, _HIVE_PRIMITIVES)


def _primitive(base: str, args: str | None, primitives: Mapping[str, IcebergType]) -> IcebergType:
    if base == "decimal":
        numbers = [int(n) for n in (args or "").replace(" ", "").split(",") if n]
        return DecimalType(numbers[0], numbers[1] if len(numbers) > 1 else 0) if numbers else DecimalType(38, 0)
    return primitives.get(base, StringType())


def _nested(
    base: str, parts: list[str], ids: Ids, convert: Callable[[str, Ids], IcebergType], field: FieldParser
) -> IcebergType:
    if base == "array" and len(parts) == 1:
        return ListType(ids(), convert(parts[0], ids), element_required=False)
    if base == "map" and len(parts) == 2:
        return MapType(ids(), convert(parts[0], ids), ids(), convert(parts[1], ids), value_required=False)
    if base in ("row", "struct") and parts:
        return StructType(*(field(part, index, ids) for index, part in enumerate(parts)))
    return StringType()


def _trino_field(text: str, index: int, ids: Ids) -> NestedField:
    """``"name" type`` or ``name type``; an anonymous field (only a type) is named ``_col<index>``."""
    if text.startswith('"'):
        end = text.index('"', 1)
        while text[end + 1 : end + 2] == '"':  # "" escapes a quote inside the name
            end = text.index('"', end + 2)
        name, type_text = text[1:end].replace('""', '"'), text[end + 1 :]
    else:
        name, _, type_text = text.partition(" ")
        if not type_text.strip() or "(" in name:
            name, type_text = f"_col{index}", text
    return NestedField(ids(), name, trino_type(type_text.strip(), ids), required=False)


def _hive_field(text: str, index: int, ids: Ids) -> NestedField:
    """``name:type`` (the name possibly in backquotes)."""
    name, _, type_text = text.partition(":")
    return NestedField(ids(), name.strip().strip("`") or f"_col{index}", hive_type(type_text, ids), required=False)
