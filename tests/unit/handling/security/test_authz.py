"""The authorization decision: inheritance from the target up to the catalog, implication, reach."""

from __future__ import annotations

import pytest

from irc_proxy.errors import BadRequest
from irc_proxy.handling.security.authz import Grant, Grants, Privilege, Securable, SecurableType, grant_target

P = Privilege


def table(*path: str, catalog: str = "c") -> Securable:
    return Securable(SecurableType.TABLE, catalog, tuple(path[:-1]), path[-1])


def ns(*levels: str, catalog: str = "c") -> Securable:
    return Securable.of_namespace(catalog, tuple(levels))


def grants(*entries: tuple[Privilege, Securable]) -> Grants:
    return Grants(Grant("r", securable, privilege) for privilege, securable in entries)


def test_a_namespace_grant_covers_everything_beneath_it_and_nothing_beside() -> None:
    held = grants((P.TABLE_READ, ns("a")))
    assert held.check(P.TABLE_READ, table("a", "t")).allowed
    assert held.check(P.TABLE_READ, table("a", "b", "c", "t")).allowed
    assert not held.check(P.TABLE_READ, table("ab", "t")).allowed
    assert not held.check(P.TABLE_READ, table("t0", "a", "t")).allowed
    assert not held.check(P.TABLE_READ, table("a", "t", catalog="other")).allowed
    assert not held.check(P.TABLE_WRITE, table("a", "t")).allowed


def test_the_first_matching_scope_from_the_target_up_names_the_reason() -> None:
    held = grants((P.TABLE_READ, Securable.of_catalog("c")), (P.TABLE_READ, ns("a", "b")))
    decision = held.check(P.TABLE_READ, table("a", "b", "t"))
    assert decision.allowed and decision.reason == "table.read on namespace c.a.b via role r"
    assert held.check(P.TABLE_READ, table("x", "t")).reason == "table.read on catalog c via role r"
    assert grants((P.TABLE_READ, Securable.of_catalog("*"))).check(P.TABLE_READ, table("x", "t", catalog="z")).allowed


def test_write_implies_read_and_all_implies_everything() -> None:
    assert grants((P.TABLE_WRITE, ns("a"))).check(P.TABLE_READ, table("a", "t")).allowed
    assert not grants((P.TABLE_READ, ns("a"))).check(P.TABLE_WRITE, table("a", "t")).allowed
    assert grants((P.VIEW_REPLACE, ns("a"))).check(P.VIEW_READ, ns("a")).allowed
    every = grants((P.ALL, ns("a")))
    assert all(every.check(privilege, table("a", "t")).allowed for privilege in Privilege)


def test_a_table_grant_does_not_reach_its_siblings() -> None:
    held = grants((P.TABLE_READ, table("a", "t")))
    assert held.check(P.TABLE_READ, table("a", "t")).allowed
    assert not held.check(P.TABLE_READ, table("a", "u")).allowed
    decision = held.check(P.TABLE_LIST, ns("a"))
    assert not decision.allowed and decision.reason == "missing table.list on namespace c.a"


def test_touches_sees_grants_on_above_and_beneath_a_namespace() -> None:
    held = grants((P.TABLE_READ, table("a", "b", "t")))
    assert held.touches(Securable.of_catalog("c")) and held.touches(ns("a")) and held.touches(ns("a", "b"))
    assert not held.touches(ns("a", "x")) and not held.touches(ns("ab")) and not held.touches(ns("a", catalog="d"))
    assert grants((P.NAMESPACE_USE, ns("a"))).touches(ns("a", "deep", "er"))
    assert Grants((), admin=True).touches(ns("anything"))
    assert held.uses_catalog("c") and not held.uses_catalog("d")


def test_grant_targets_are_validated() -> None:
    target, privilege = grant_target("table.read", "c", ["a"], table="t")
    assert target == table("a", "t") and privilege is P.TABLE_READ
    assert grant_target("namespace.create", "c", [])[0] == Securable.of_catalog("c")
    for bad in (
        lambda: grant_target("table.fly", "c", []),
        lambda: grant_target("namespace.drop", "c", ["a"], table="t"),
        lambda: grant_target("table.read", "c", [], table="t"),
        lambda: grant_target("table.read", "c", ["a"], table="t", view="v"),
        lambda: grant_target("catalog.use", "c", ["a"]),
        lambda: grant_target("table.read", "c", ["a\x1fb"]),
    ):
        with pytest.raises(BadRequest):
            bad()
