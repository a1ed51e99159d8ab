"""The spec's filter JSON in both forms (current and deprecated) -> pyiceberg, and residuals back."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from pydantic import TypeAdapter
from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    In,
    IsNull,
    LessThan,
    Not,
    NotIn,
    NotStartsWith,
    Or,
)
from pyiceberg.expressions.visitors import bind
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    UUIDType,
)

from irc_proxy.errors import BadRequest
from irc_proxy.planning.expressions import MAX_NODES, parse_filter, residual_json

SCHEMA = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "Name", StringType()),
    NestedField(3, "day", DateType()),
    NestedField(4, "ts", TimestampType()),
    NestedField(5, "price", DecimalType(9, 2)),
    NestedField(6, "blob", BinaryType()),
    NestedField(7, "u", UUIDType()),
    NestedField(8, "score", DoubleType()),
    NestedField(9, "info", StructType(NestedField(10, "city", StringType()))),
)


def ref(name: str) -> dict[str, Any]:
    return {"type": "reference", "name": name}


def same(a: BooleanExpression, b: BooleanExpression) -> bool:
    return bind(SCHEMA, a, True) == bind(SCHEMA, b, True)


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (True, AlwaysTrue()),
        (False, AlwaysFalse()),
        ({"type": "true"}, AlwaysTrue()),
        ({"type": "eq", "term": "id", "value": 3}, EqualTo("id", 3)),
        ({"type": "eq", "left": ref("id"), "right": 3}, EqualTo("id", 3)),
        ({"type": "lt", "left": 3, "right": ref("id")}, GreaterThan("id", 3)),
        (
            {"type": "eq", "left": {"type": "reference", "id": 1}, "right": {"type": "literal", "value": 3}},
            EqualTo("id", 3),
        ),
        ({"type": "is-null", "child": ref("Name")}, IsNull("Name")),
        ({"type": "is-null", "term": "Name"}, IsNull("Name")),
        ({"type": "in", "term": "id", "values": [1, 2]}, In("id", [1, 2])),
        (
            {"type": "not-in", "child": ref("id"), "values": {"type": "literals", "values": [1], "data-type": "long"}},
            NotIn("id", [1]),
        ),
        ({"type": "not-starts-with", "term": "Name", "value": "a"}, NotStartsWith("Name", "a")),
        ({"type": "eq", "term": "info.city", "value": "Oslo"}, EqualTo("info.city", "Oslo")),
        (
            {
                "type": "and",
                "left": {"type": "gt", "term": "id", "value": 1},
                "right": {"type": "not", "child": {"type": "eq", "term": "day", "value": "2024-01-02"}},
            },
            And(GreaterThan("id", 1), Not(EqualTo("day", date(2024, 1, 2)))),
        ),
        (
            {"type": "or", "left": {"type": "lt", "term": "score", "value": 1}, "right": False},
            Or(LessThan("score", 1.0), AlwaysFalse()),
        ),
    ],
)
def test_both_forms_parse(node: Any, expected: BooleanExpression) -> None:
    assert same(parse_filter(node, SCHEMA), expected)


def test_literals_take_the_column_type() -> None:
    parsed = bind(SCHEMA, parse_filter({"type": "eq", "term": "price", "value": "12.30"}, SCHEMA), True)
    assert str(parsed.literal.value) == "12.30"  # type: ignore[attr-defined]
    parsed = bind(SCHEMA, parse_filter({"type": "eq", "term": "blob", "value": "78797A"}, SCHEMA), True)
    assert parsed.literal.value == b"xyz"  # type: ignore[attr-defined]
    parsed = bind(SCHEMA, parse_filter({"type": "gt", "term": "ts", "value": "2024-01-02T03:04:05"}, SCHEMA), True)
    assert parsed.literal.value == 1704164645000000  # type: ignore[attr-defined]


def test_case_insensitive_names_resolve_to_the_column() -> None:
    assert same(
        parse_filter({"type": "eq", "term": "name", "value": "x"}, SCHEMA, case_sensitive=False), EqualTo("Name", "x")
    )
    with pytest.raises(BadRequest, match="no column named 'name'"):
        parse_filter({"type": "eq", "term": "name", "value": "x"}, SCHEMA)


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ("id = 1", "expected a predicate object"),
        ({"type": "between", "term": "id"}, "unknown predicate type"),
        ({"type": "eq", "term": "nope", "value": 1}, "no column named"),
        ({"type": "eq", "term": "id", "value": "not a number"}, "Could not convert"),
        ({"type": "eq", "term": "id", "value": None}, "null is not a value"),
        ({"type": "eq", "term": "id"}, "without 'value'"),
        ({"type": "and", "left": True}, "without 'right'"),
        ({"type": "in", "term": "id", "values": 3}, "must be a list"),
        (
            {"type": "eq", "left": {"type": "apply", "function": "f", "arguments": []}, "right": 1},
            "apply terms are not supported",
        ),
        (
            {"type": "eq", "term": {"type": "transform", "transform": "bucket[4]", "term": "id"}, "value": 1},
            "transform terms",
        ),
        ({"type": "eq", "left": {"type": "reference", "id": 99}, "right": 1}, "no field with id 99"),
        ({"type": "eq", "term": "info", "value": 1}, "not of a primitive type"),
        ({"type": "eq", "term": "u", "value": "not-a-uuid"}, "is not a uuid value"),
    ],
)
def test_malformed_filters_are_400(node: Any, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        parse_filter(node, SCHEMA)


def test_filters_are_bounded() -> None:
    with pytest.raises(BadRequest, match="more than"):
        parse_filter({"type": "in", "term": "id", "values": list(range(MAX_NODES + 1))}, SCHEMA)
    node: Any = True
    for _ in range(5000):  # deeper than Python recurses: still a 400 (HTTP bodies are depth-limited before)
        node = {"type": "not", "child": node}
    with pytest.raises(BadRequest, match="nested too deeply"):
        parse_filter(node, SCHEMA)


@pytest.mark.parametrize(
    "expression",
    [
        EqualTo("id", 3),
        And(GreaterThan("day", "2024-01-02"), Not(In("Name", ["a", "b"]))),
        Or(IsNull("info.city"), LessThan("ts", "2024-01-02T03:04:05")),
        EqualTo("price", "1.50"),
    ],
)
def test_residuals_round_trip_through_pyiceberg_clients_parser(expression: BooleanExpression) -> None:
    bound = bind(SCHEMA, expression, True)
    written = residual_json(bound, SCHEMA)
    read_back = TypeAdapter(BooleanExpression).validate_python(written)  # what pyiceberg 0.12 does with it
    assert bind(SCHEMA, read_back, True) == bound
    assert bind(SCHEMA, parse_filter(written, SCHEMA), True) == bound  # and our own parser


def test_residual_of_always_true_is_the_bare_literal() -> None:
    assert residual_json(AlwaysTrue(), SCHEMA) is True
    assert residual_json(AlwaysFalse(), SCHEMA) is False
