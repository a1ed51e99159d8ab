"""Decoding Glue VIRTUAL_VIEWs: the Presto/Trino base64 block, Trino and Hive type strings, dialect detection."""

from __future__ import annotations

import base64
import itertools
import json
from datetime import UTC, datetime
from typing import Any

import pytest
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
from pyiceberg.view.metadata import ViewMetadata

from irc_proxy.backends.glue_views import (
    build_schema,
    decode_presto_view,
    epoch_ms,
    hive_type,
    is_materialized_view,
    parse_view,
    stable_uuid,
    trino_type,
    view_metadata,
)


def ids() -> Any:
    return itertools.count(100).__next__


def encode(definition: Any) -> str:
    return "/* Presto View: " + base64.b64encode(json.dumps(definition).encode()).decode() + " */"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("boolean", BooleanType()),
        ("tinyint", IntegerType()),
        ("smallint", IntegerType()),
        ("integer", IntegerType()),
        ("bigint", LongType()),
        ("real", FloatType()),
        ("double", DoubleType()),
        ("varchar", StringType()),
        ("varchar(25)", StringType()),
        ("char(3)", StringType()),
        ("json", StringType()),
        ("varbinary", BinaryType()),
        ("date", DateType()),
        ("time(6)", TimeType()),
        ("timestamp(3)", TimestampType()),
        ("timestamp(6) with time zone", TimestamptzType()),
        ("timestamp with time zone", TimestamptzType()),
        ("uuid", UUIDType()),
        ("decimal(12,2)", DecimalType(12, 2)),
        ("decimal(10, 4)", DecimalType(10, 4)),
        ("decimal(7)", DecimalType(7, 0)),
        ("DECIMAL", DecimalType(38, 0)),
        ("interval day to second", StringType()),
        ("time(3) with time zone", StringType()),
        ("ipaddress", StringType()),
        ("HyperLogLog", StringType()),
        ("array(bigint", StringType()),
    ],
)
def test_trino_primitive_types_map_to_iceberg(text: str, expected: IcebergType) -> None:
    assert trino_type(text, ids()) == expected


def test_trino_nested_types_map_to_iceberg_with_optional_children() -> None:
    assert trino_type("array(varchar(10))", ids()) == ListType(100, StringType(), element_required=False)
    assert trino_type("map(varchar, array(double))", ids()) == MapType(
        100, StringType(), 101, ListType(102, DoubleType(), element_required=False), value_required=False
    )
    assert trino_type('row("a" integer, "b""q" timestamp(3) with time zone)', ids()) == StructType(
        NestedField(100, "a", IntegerType(), required=False),
        NestedField(101, 'b"q', TimestamptzType(), required=False),
    )
    assert trino_type("row(x bigint, y row(z boolean))", ids()) == StructType(
        NestedField(100, "x", LongType(), required=False),
        NestedField(101, "y", StructType(NestedField(102, "z", BooleanType(), required=False)), required=False),
    )
    assert trino_type("row(bigint, varchar(3))", ids()) == StructType(
        NestedField(100, "_col0", LongType(), required=False),
        NestedField(101, "_col1", StringType(), required=False),
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("int", IntegerType()),
        ("bigint", LongType()),
        ("float", FloatType()),
        ("double", DoubleType()),
        ("string", StringType()),
        ("varchar(10)", StringType()),
        ("binary", BinaryType()),
        ("timestamp", TimestampType()),
        ("decimal(10,2)", DecimalType(10, 2)),
        ("interval", StringType()),
        ("uniontype<int,string>", StringType()),
    ],
)
def test_hive_primitive_types_map_to_iceberg(text: str, expected: IcebergType) -> None:
    assert hive_type(text, ids()) == expected


def test_hive_nested_types_map_to_iceberg() -> None:
    assert hive_type("array<struct<a:int,`b c`:map<string,array<bigint>>>>", ids()) == ListType(
        100,
        StructType(
            NestedField(101, "a", IntegerType(), required=False),
            NestedField(
                102,
                "b c",
                MapType(
                    103, StringType(), 104, ListType(105, LongType(), element_required=False), value_required=False
                ),
                required=False,
            ),
        ),
        element_required=False,
    )


def test_schema_ids_are_top_level_first() -> None:
    schema = build_schema([("a", "row(x bigint)", None), ("b", "bigint", "the b")], trino_type)
    assert schema.schema_id == 0
    assert [(f.field_id, f.name, f.doc) for f in schema.fields] == [(1, "a", None), (2, "b", "the b")]
    assert schema.find_field("a.x").field_id == 3


def test_decode_presto_view_reads_the_base64_json() -> None:
    definition = {
        "originalSql": "SELECT 1",
        "catalog": "hive",
        "schema": "db",
        "columns": [{"name": "x", "type": "integer"}],
    }
    assert decode_presto_view(encode(definition)) == definition
    assert decode_presto_view("  " + encode(definition) + "\n") == definition


@pytest.mark.parametrize(
    "text",
    [
        "SELECT 1",
        "/* Presto View */",
        "/* Presto View: %%% */",
        "/* Presto View: " + base64.b64encode(b"not json").decode() + " */",
        encode({"catalog": "hive"}),
        encode(["originalSql"]),
    ],
)
def test_decode_presto_view_rejects_what_is_not_one(text: str) -> None:
    with pytest.raises(ValueError, match=r"Presto view|view text"):
        decode_presto_view(text)


def trino_table(**extra: Any) -> dict[str, Any]:
    definition = {
        "originalSql": "SELECT id FROM t",
        "catalog": "hive",
        "schema": "sales",
        "columns": [{"name": "id", "type": "bigint"}],
        "comment": "ids",
    }
    return {
        "Name": "v",
        "TableType": "VIRTUAL_VIEW",
        "ViewOriginalText": encode(definition),
        "ViewExpandedText": "/* Presto View */",
        "Parameters": {"presto_view": "true", "comment": "Presto View", "presto_version": "455"},
        "StorageDescriptor": {"Columns": [{"Name": "dummy", "Type": "string"}]},
    } | extra


def test_parse_view_detects_trino() -> None:
    definition = parse_view(trino_table(), "db")
    assert (definition.dialect, definition.sql, definition.default_namespace) == ("trino", "SELECT id FROM t", "sales")
    assert [f.name for f in definition.schema.fields] == ["id"]  # the JSON columns, not the dummy column
    assert (definition.engine_version, definition.comment) == ("455", "ids")


def test_parse_view_detects_spark_and_its_namespace() -> None:
    table = {
        "TableType": "VIRTUAL_VIEW",
        "ViewOriginalText": "SELECT 1 AS x",
        "ViewExpandedText": "SELECT 1 AS x",
        "StorageDescriptor": {"Columns": [{"Name": "x", "Type": "int"}]},
        "Parameters": {
            "spark.sql.create.version": "3.5.1",
            "view.catalogAndNamespace.numParts": "2",
            "view.catalogAndNamespace.part.0": "spark_catalog",
            "view.catalogAndNamespace.part.1": "other",
        },
    }
    definition = parse_view(table, "db")
    assert (definition.dialect, definition.sql, definition.default_namespace) == ("spark", "SELECT 1 AS x", "other")
    assert definition.schema.fields[0].field_type == IntegerType()


def test_parse_view_falls_back_to_hive() -> None:
    table = {"TableType": "VIRTUAL_VIEW", "ViewExpandedText": "SELECT `t`.`a` FROM `db`.`t`", "Description": "d"}
    definition = parse_view(table, "db")
    assert (definition.dialect, definition.sql, definition.comment) == ("hive", "SELECT `t`.`a` FROM `db`.`t`", "d")
    assert definition.schema.fields == ()


def test_a_broken_trino_view_is_an_error() -> None:
    with pytest.raises(ValueError, match="base64"):
        parse_view(trino_table(ViewOriginalText="/* Presto View: ??? */"), "db")


def test_materialized_views_are_told_apart() -> None:
    assert is_materialized_view({"ViewOriginalText": "/* Presto Materialized View: abc */"})
    assert not is_materialized_view(trino_table())


def test_view_metadata_is_valid_format_version_1() -> None:
    metadata = view_metadata(parse_view(trino_table(), "db"), stable_uuid("a", 1), "s3://b/v", 5, {"k": "v"})
    again = ViewMetadata.model_validate_json(metadata.model_dump_json())
    assert again == metadata
    assert (metadata.format_version, metadata.current_version_id, len(metadata.versions)) == (1, 1, 1)
    assert metadata.version_log[0].timestamp_ms == 5 and metadata.versions[0].default_namespace == ("sales",)
    assert metadata.properties == {"k": "v", "comment": "ids"}
    assert stable_uuid("a", 1) == metadata.view_uuid != stable_uuid("a", 2)


def test_epoch_ms() -> None:
    assert epoch_ms(datetime(2024, 1, 1, tzinfo=UTC)) == 1704067200000
    assert epoch_ms(None) == 0
