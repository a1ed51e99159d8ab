"""A client's filter rewritten so that evaluating it costs what it means, not how it is spelt.

A filter of thousands of predicates is evaluated once per manifest, per partition and per data file of a
plan: an ``or`` of 3,300 ``eq`` on one column costs 3,300 comparisons per file where one ``in`` costs a
set lookup (and pyiceberg's metrics evaluator gives up early on a long ``in``: no comparison at all).
:func:`simplify` flattens nested ``and``/``or`` chains, drops repeated operands and constant ones,
merges ``eq``/``in`` on one column inside an ``or`` into one ``in`` and ``not-eq``/``not-in`` inside an
``and`` into one ``not-in``, and rebuilds each chain as a balanced tree (pyiceberg's visitors recurse).
The result selects the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    In,
    Not,
    NotEqualTo,
    NotIn,
    Or,
    UnboundPredicate,
)


def simplify(expression: BooleanExpression) -> BooleanExpression:
    """The same filter, cheaper to evaluate (see the module docstring). ``expression`` is unbound."""
    if isinstance(expression, Not):
        return Not(simplify(expression.child))
    if isinstance(expression, Or):
        return _chain(expression, Or)
    if isinstance(expression, And):
        return _chain(expression, And)
    return expression


def _operands(expression: BooleanExpression, kind: type[And] | type[Or]) -> list[BooleanExpression]:
    """The operands of a chain of ``kind`` (nested chains of the same kind flattened), left to right."""
    found: list[BooleanExpression] = []
    todo: list[BooleanExpression] = [expression]
    while todo:
        item = todo.pop()
        if isinstance(item, kind):
            todo += [item.right, item.left]
        else:
            found.append(item)
    return found


def _chain(expression: BooleanExpression, kind: type[And] | type[Or]) -> BooleanExpression:
    is_or = kind is Or
    absorbing, neutral = (AlwaysTrue, AlwaysFalse) if is_or else (AlwaysFalse, AlwaysTrue)
    merged_types = (EqualTo, In) if is_or else (NotEqualTo, NotIn)
    kept: dict[str, BooleanExpression] = {}
    sets: dict[str, set[Any]] = {}
    for written in _operands(expression, kind):
        operand = simplify(written)
        if isinstance(operand, absorbing):
            return operand
        if isinstance(operand, neutral):
            continue
        if isinstance(operand, merged_types) and isinstance(operand, UnboundPredicate):
            found: Any = operand
            literals = found.literals if isinstance(operand, (In, NotIn)) else {found.literal}
            key = f"\0{found.term.name}"
            if key not in sets:
                sets[key] = set()
                kept[key] = operand  # placeholder: keeps the column's place in the chain
            sets[key] |= set(literals)
            continue
        kept.setdefault(repr(operand), operand)
    merge: Any = In if is_or else NotIn
    operands = [merge(key[1:], sets[key]) if key in sets else operand for key, operand in kept.items()]
    if not operands:
        return neutral()
    return _balanced(operands, kind)


def _balanced(operands: Sequence[BooleanExpression], kind: type[And] | type[Or]) -> BooleanExpression:
    if len(operands) == 1:
        return operands[0]
    middle = len(operands) // 2
    return kind(_balanced(operands[:middle], kind), _balanced(operands[middle:], kind))
