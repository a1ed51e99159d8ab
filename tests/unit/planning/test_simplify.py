"""Simplified filters select the same rows: any filter of ``and``/``or``/``not`` over ``eq``, ``in``, their
negations and constants, evaluated on any row, as pyiceberg evaluates it; and the rewrites are the cheap ones."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    In,
    Not,
    NotEqualTo,
    NotIn,
    Or,
)
from pyiceberg.expressions.visitors import expression_evaluator
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField

from irc_proxy.planning.simplify import simplify

# pyiceberg's predicates are pydantic models whose generated signatures mypy misreads; called as documented.
EQ: Any = EqualTo
NE: Any = NotEqualTo
IN: Any = In
NIN: Any = NotIn
GT: Any = GreaterThan
SCHEMA = Schema(NestedField(1, "x", LongType(), required=True), NestedField(2, "y", LongType(), required=True))
VALUES = st.integers(0, 4)
COLUMNS = st.sampled_from(["x", "y"])

leaves = st.one_of(
    st.builds(lambda c, v: EQ(c, v), COLUMNS, VALUES),
    st.builds(lambda c, v: NE(c, v), COLUMNS, VALUES),
    st.builds(lambda c, v: IN(c, v), COLUMNS, st.sets(VALUES, min_size=2, max_size=3)),
    st.builds(lambda c, v: NIN(c, v), COLUMNS, st.sets(VALUES, min_size=2, max_size=3)),
    st.builds(lambda c, v: GT(c, v), COLUMNS, VALUES),
    st.just(AlwaysTrue()),
    st.just(AlwaysFalse()),
)
filters = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.builds(lambda a, b: And(a, b), inner, inner),
        st.builds(lambda a, b: Or(a, b), inner, inner),
        st.builds(lambda a: Not(a), inner),
    ),
    max_leaves=12,
)


def selects(expression: BooleanExpression, x: int, y: int) -> bool:
    return bool(expression_evaluator(SCHEMA, expression, case_sensitive=True)(Record(x, y)))


@settings(max_examples=200, deadline=None)
@given(expression=filters)
def test_a_simplified_filter_selects_exactly_the_same_rows(expression: BooleanExpression) -> None:
    simpler = simplify(expression)
    for x in range(5):
        for y in range(5):
            assert selects(simpler, x, y) == selects(expression, x, y), (expression, simpler, x, y)


def depth(expression: Any) -> int:
    """How deeply ``and``/``or``/``not`` nest (without recursing: a written chain can be thousands deep)."""
    deepest, todo = 0, [(expression, 0)]
    while todo:
        node, level = todo.pop()
        deepest = max(deepest, level)
        if isinstance(node, And | Or):
            todo += [(node.left, level + 1), (node.right, level + 1)]
        elif isinstance(node, Not):
            todo.append((node.child, level + 1))
    return deepest


def test_a_long_or_of_equalities_on_one_column_becomes_one_in() -> None:
    chain: BooleanExpression = EQ("x", 0)
    for value in range(1, 3300):
        chain = Or(chain, EQ("x", value))
    assert simplify(chain) == IN("x", set(range(3300)))


def test_not_equalities_in_an_and_merge_into_one_not_in_and_constants_fold() -> None:
    assert simplify(And(NE("x", 1), And(AlwaysTrue(), NIN("x", {2, 3})))) == NIN("x", {1, 2, 3})
    assert simplify(Or(GT("x", 1), AlwaysTrue())) == AlwaysTrue()
    assert simplify(And(AlwaysTrue(), AlwaysTrue())) == AlwaysTrue()


def test_a_long_chain_of_different_predicates_is_rebuilt_balanced_without_repeats() -> None:
    chain: BooleanExpression = GT("x", 0)
    for value in range(1, 1024):
        chain = And(chain, GT("x", value))
    chain = And(chain, GT("x", 5))  # a repeat
    simpler = simplify(chain)
    assert depth(chain) == 1024
    assert depth(simpler) == 10  # 1024 distinct operands, log2 deep
