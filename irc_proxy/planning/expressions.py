"""The REST spec's filter expressions (``Predicate``) to pyiceberg expressions and back.

:func:`parse_filter` reads both forms the spec allows: the current one (``left``/``right``/``child``
with ``{"type": "reference", "name"|"id": …}`` and typed ``literal`` objects) and the deprecated one
clients send today (``term``/``value``, a term being a column name). Literals are converted with the
field's type (the spec's single-value JSON), so ``"2024-01-01"`` on a date column is a date.
Function applications and transform terms have no pyiceberg counterpart: they are refused (400).

:func:`residual_json` writes a residual in the deprecated ``term``/``value`` form, the one pyiceberg
0.12 and Java 1.10 parse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyiceberg.conversions import from_json
from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    BoundReference,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
    UnboundPredicate,
)
from pyiceberg.expressions.literals import Literal, literal
from pyiceberg.expressions.visitors import bind
from pyiceberg.schema import Schema
from pyiceberg.types import (
    NestedField,
    PrimitiveType,
    TimestamptzNanoType,
    TimestamptzType,
)

from irc_proxy.errors import BadRequest
from irc_proxy.planning.content_files import single_value
from irc_proxy.planning.simplify import simplify

MAX_NODES = 10_000
"""Predicates and literals one filter may hold (its depth is bounded by ``server.max_json_depth``)."""


@dataclass(frozen=True)
class FilterLimits:
    """What one filter may hold, checked on its JSON before anything is parsed or stored (400 beyond)."""

    literal_bytes: int = 4096
    """One literal (UTF-8 bytes of a string, digits of a number): ``server.scan_planning.max_filter_literal_bytes``."""
    in_values: int = 1000
    """Values of one ``in``/``not-in`` list: ``server.scan_planning.max_filter_in_values``."""
    filter_bytes: int = 256 << 10
    """All the filter's strings and numbers together: ``server.scan_planning.max_filter_bytes``."""


def check_filter_size(node: Any, limits: FilterLimits) -> None:
    """Refuse a filter (its raw JSON, before any typing) over ``limits``, or with more than ``4 * MAX_NODES``
    JSON values (keys included), so that what is parsed, kept with a plan and repeated in answers is bounded.

    Raises:
        BadRequest: naming the limit and its setting.
    """
    total = values = 0
    todo: list[Any] = [node]
    while todo:
        item = todo.pop()
        values += 1
        if values > 4 * MAX_NODES:
            raise BadRequest(f"Invalid filter: more than {MAX_NODES} predicates and literals")
        if isinstance(item, dict):
            todo.extend(item.values())
            size = sum(len(str(key).encode()) for key in item)
        elif isinstance(item, list):
            if len(item) > limits.in_values:
                raise BadRequest(
                    f"Invalid filter: a list of {len(item)} values is longer than the limit of {limits.in_values} "
                    "(server.scan_planning.max_filter_in_values)"
                )
            todo.extend(item)
            continue
        elif isinstance(item, str):
            size = len(item.encode(errors="replace"))
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            size = len(repr(item)) if not isinstance(item, int) else max(1, item.bit_length() * 3 // 10 + 1)
        else:
            continue
        if not isinstance(item, dict) and size > limits.literal_bytes:
            raise BadRequest(
                f"Invalid filter: a literal of {size} bytes is longer than the limit of {limits.literal_bytes} bytes "
                "(server.scan_planning.max_filter_literal_bytes)"
            )
        total += size
        if total > limits.filter_bytes:
            raise BadRequest(
                f"Invalid filter: its values take more than the limit of {limits.filter_bytes} bytes "
                "(server.scan_planning.max_filter_bytes)"
            )


_UNARY: dict[str, Callable[..., BooleanExpression]] = {
    "is-null": IsNull,
    "not-null": NotNull,
    "is-nan": IsNaN,
    "not-nan": NotNaN,
}
_COMPARISON: dict[str, Callable[..., BooleanExpression]] = {
    "lt": LessThan,
    "lt-eq": LessThanOrEqual,
    "gt": GreaterThan,
    "gt-eq": GreaterThanOrEqual,
    "eq": EqualTo,
    "not-eq": NotEqualTo,
    "starts-with": StartsWith,
    "not-starts-with": NotStartsWith,
}
_FLIPPED = {"lt": "gt", "lt-eq": "gt-eq", "gt": "lt", "gt-eq": "lt-eq", "eq": "eq", "not-eq": "not-eq"}
"""A comparison written ``literal op reference`` is read as ``reference flipped-op literal``."""
_SET: dict[str, Callable[..., BooleanExpression]] = {"in": In, "not-in": NotIn}


class _Parser:
    def __init__(self, schema: Schema, case_sensitive: bool) -> None:
        self._schema, self._case_sensitive = schema, case_sensitive
        self._nodes = 0

    def _count(self, n: int = 1) -> None:
        self._nodes += n
        if self._nodes > MAX_NODES:
            raise BadRequest(f"Invalid filter: more than {MAX_NODES} predicates and literals")

    def predicate(self, node: Any) -> BooleanExpression:
        self._count()
        if isinstance(node, bool) or (isinstance(node, dict) and node.get("type") in ("true", "false")):
            return AlwaysTrue() if node in (True, {"type": "true"}) else AlwaysFalse()
        if not isinstance(node, dict):
            raise BadRequest(f"Invalid filter: expected a predicate object or a boolean, got {_kind(node)}")
        kind = node.get("type")
        if kind in ("and", "or"):
            left, right = self.predicate(_required(node, "left")), self.predicate(_required(node, "right"))
            return And(left, right) if kind == "and" else Or(left, right)
        if kind == "not":
            return Not(self.predicate(_required(node, "child")))
        if kind in _UNARY:
            return _UNARY[kind](self._field_name(_operand(node, "child")))
        if kind in _COMPARISON:
            return self._comparison(kind, node)
        if kind in _SET:
            name = self._field_name(_operand(node, "child"))
            return _SET[kind](name, self._literals(name, _required(node, "values")))
        raise BadRequest(f"Invalid filter: unknown predicate type {_shown(kind)}")

    def _comparison(self, kind: str, node: dict[str, Any]) -> BooleanExpression:
        if "term" in node:
            left, right = node["term"], _required(node, "value")
        else:
            left, right = _required(node, "left"), _required(node, "right")
            if _is_reference(right) and not _is_reference(left):
                if kind not in _FLIPPED:
                    raise BadRequest(f"Invalid filter: {kind} needs a reference on the left")
                kind, left, right = _FLIPPED[kind], right, left
        name = self._field_name(left)
        return _COMPARISON[kind](name, self._literal(name, right))

    def _field(self, ref: Any) -> NestedField:
        if isinstance(ref, dict):
            if ref.get("type") == "reference" and isinstance(ref.get("id"), int) and "name" not in ref:
                try:
                    return self._schema.find_field(ref["id"])
                except ValueError:
                    raise BadRequest(f"Invalid filter: no field with id {ref['id']}") from None
            if ref.get("type") == "reference" and isinstance(ref.get("name"), str):
                ref = ref["name"]
            elif ref.get("type") in ("transform", "apply"):
                raise BadRequest(f"Invalid filter: {ref['type']} terms are not supported; filter on a column")
        if not isinstance(ref, str):
            raise BadRequest(f"Invalid filter: expected a column reference, got {_kind(ref)}")
        try:
            return self._schema.find_field(ref, self._case_sensitive)
        except ValueError:
            raise BadRequest(f"Invalid filter: no column named {_shown(ref)}") from None

    def _field_name(self, ref: Any) -> str:
        field = self._field(ref)
        name = self._schema.find_column_name(field.field_id)
        assert name is not None
        return name

    def _literal(self, name: str, value: Any) -> Literal[Any]:
        self._count()
        if isinstance(value, dict):
            if value.get("type") != "literal" or "value" not in value:
                raise BadRequest("Invalid filter: expected a literal value")
            value = value["value"]
        field_type = self._schema.find_type(name)
        if not isinstance(field_type, PrimitiveType):
            raise BadRequest(f"Invalid filter: column {_shown(name)} is not of a primitive type")
        if value is None or isinstance(value, (dict, list)):
            raise BadRequest(f"Invalid filter: {_kind(value)} is not a value of column {_shown(name)}")
        try:
            return literal(from_json(field_type, value))
        except (TypeError, ValueError, ArithmeticError, AttributeError) as exc:
            if isinstance(field_type, (TimestamptzType, TimestamptzNanoType)) and isinstance(value, str):
                # pyiceberg 0.12 writes a timestamptz literal as UTC without an offset: read it as UTC
                try:
                    return literal(from_json(field_type, value + "+00:00"))
                except (TypeError, ValueError, ArithmeticError, AttributeError):
                    pass
            raise BadRequest(f"Invalid filter: {_shown(value)} is not a {field_type} value ({exc})") from None

    def _literals(self, name: str, values: Any) -> list[Literal[Any]]:
        if isinstance(values, dict) and values.get("type") == "literals":
            values = values.get("values")
        if not isinstance(values, list):
            raise BadRequest("Invalid filter: in/not-in values must be a list")
        return [self._literal(name, value) for value in values]


def parse_filter(node: Any, schema: Schema, case_sensitive: bool = True) -> BooleanExpression:
    """The pyiceberg expression for a spec ``Predicate`` over ``schema``, simplified (``planning.simplify``) and
    checked by binding it. Its size is checked before, by :func:`check_filter_size`.

    Raises:
        BadRequest: malformed, naming an unknown column, or a literal that is no value of its column.
    """
    try:
        expression = simplify(_Parser(schema, case_sensitive).predicate(node))
        bind(schema, expression, case_sensitive)
    except RecursionError:
        raise BadRequest("Invalid filter: nested too deeply") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise BadRequest(f"Invalid filter: {exc}") from None
    return expression


# Residuals back to JSON --------------------------------------------------------------------------------
_TYPE_NAMES: dict[str, str] = {
    "EqualTo": "eq",
    "NotEqualTo": "not-eq",
    "LessThan": "lt",
    "LessThanOrEqual": "lt-eq",
    "GreaterThan": "gt",
    "GreaterThanOrEqual": "gt-eq",
    "StartsWith": "starts-with",
    "NotStartsWith": "not-starts-with",
    "In": "in",
    "NotIn": "not-in",
    "IsNull": "is-null",
    "NotNull": "not-null",
    "IsNaN": "is-nan",
    "NotNaN": "not-nan",
}


def residual_json(expression: BooleanExpression, schema: Schema) -> Any:
    """``expression`` (bound or not) in the spec's deprecated ``term``/``value`` form."""
    if isinstance(expression, (AlwaysTrue, AlwaysFalse)):
        return isinstance(expression, AlwaysTrue)
    if isinstance(expression, (And, Or)):
        left, right = residual_json(expression.left, schema), residual_json(expression.right, schema)
        return {"type": "and" if isinstance(expression, And) else "or", "left": left, "right": right}
    if isinstance(expression, Not):
        return {"type": "not", "child": residual_json(expression.child, schema)}
    return _predicate_json(expression, schema)


def _predicate_json(expression: BooleanExpression, schema: Schema) -> dict[str, Any]:
    name, field_type = _term(expression, schema)
    names = (c.__name__.removeprefix("Bound") for c in type(expression).__mro__)
    kind = next((_TYPE_NAMES[n] for n in names if n in _TYPE_NAMES), None)
    if kind is None:
        raise TypeError(f"no JSON form for {expression!r}")
    body: dict[str, Any] = {"type": kind, "term": name}
    literals = getattr(expression, "literals", None)
    single = getattr(expression, "literal", None)
    if literals is not None:
        body["values"] = sorted((single_value(field_type, lit.value) for lit in literals), key=repr)
    elif single is not None:
        body["value"] = single_value(field_type, single.value)
    return body


def _term(expression: BooleanExpression, schema: Schema) -> tuple[str, Any]:
    if isinstance(expression, BoundPredicate):
        term = expression.term
        assert isinstance(term, BoundReference)
        return schema.find_column_name(term.field.field_id) or term.field.name, term.field.field_type
    if isinstance(expression, UnboundPredicate):
        name = str(expression.term.name)  # type: ignore[attr-defined]
        return name, schema.find_type(name)
    raise TypeError(f"not a predicate: {expression!r}")


# Helpers ----------------------------------------------------------------------------------------------
def _required(node: dict[str, Any], key: str) -> Any:
    if key not in node:
        raise BadRequest(f"Invalid filter: {node.get('type')} predicate without {key!r}")
    return node[key]


def _operand(node: dict[str, Any], key: str) -> Any:
    return node["term"] if "term" in node else _required(node, key)


def _is_reference(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in ("reference", "transform", "apply")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", type(None): "null"}.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
