"""The authorization policy: one rule per catalog operation, checked without HTTP."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from irc_proxy.errors import Forbidden
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.operations import policy
from irc_proxy.handling.security.access import Access
from irc_proxy.handling.security.authz import Authorizer, Grant, Grants, Privilege, Securable, SecurableType
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.http.routes import OPERATIONS
from irc_proxy.stores.authz import AuthzStore
from irc_proxy.threads import ThreadRunner

NO_CATALOG = cast(Catalog, None)  # only createNamespace's rule looks into the catalog


def test_every_catalog_operation_has_its_own_rule() -> None:
    """An operation missing from the table would silently be for administrators only."""
    assert {op.operation_id for op in OPERATIONS} == set(policy.POLICY)


def _access(*grants: Grant) -> Access:
    context = RequestContext("r", principal="alice", grants=Grants(grants))
    authorizer = Authorizer(cast(AuthzStore, None), ThreadRunner(1), enabled=True)
    return Access(context, authorizer, "lake")


def _grant(privilege: Privilege, namespace: tuple[str, ...], name: str = "") -> Grant:
    kind = SecurableType.TABLE if name else SecurableType.NAMESPACE
    return Grant("role", Securable(kind, "lake", namespace, name), privilege)


def _run(access: Access, operation: str, requested: policy.Requested) -> None:
    asyncio.run(policy.authorize(access, NO_CATALOG, operation, requested))


def test_a_staged_create_in_a_transaction_needs_table_create_and_writes_need_table_write() -> None:
    changes = ((TableIdent(("a",), "new"), True), (TableIdent(("b",), "old"), False))
    requested = policy.Requested(changes=changes)
    _run(
        _access(_grant(Privilege.TABLE_CREATE, ("a",)), _grant(Privilege.TABLE_WRITE, ("b",))),
        "commitTransaction",
        requested,
    )
    access = _access(_grant(Privilege.TABLE_CREATE, ("a",)))
    with pytest.raises(Forbidden, match=r"table.write on table lake.b.old"):
        _run(access, "commitTransaction", requested)
    assert access.context.audit.decision == "denied"


def test_a_filtered_listing_is_allowed_to_a_caller_with_a_grant_beneath_the_parent() -> None:
    access = _access(_grant(Privilege.TABLE_READ, ("a", "b"), "t"))
    _run(access, "listNamespaces", policy.Requested(namespace=("a",)))
    assert access.context.list_filtered
    with pytest.raises(Forbidden):
        _run(_access(_grant(Privilege.TABLE_READ, ("x",), "t")), "listNamespaces", policy.Requested(namespace=("a",)))


def test_existence_is_answered_to_whoever_may_create_the_object() -> None:
    _run(_access(_grant(Privilege.TABLE_CREATE, ("a",))), "tableExists", policy.Requested(("a",), "t"))
    with pytest.raises(Forbidden, match=r"table.read on table lake.a.t"):
        _run(_access(_grant(Privilege.VIEW_READ, ("a",))), "tableExists", policy.Requested(("a",), "t"))


def test_an_operation_without_a_rule_is_for_administrators() -> None:
    with pytest.raises(Forbidden, match="administrators only"):
        _run(_access(_grant(Privilege.ALL, ("a",))), "someFutureOperation", policy.Requested())


def test_register_needs_table_create_and_overwriting_needs_table_write() -> None:
    creator = _access(_grant(Privilege.TABLE_CREATE, ("a",)))
    _run(creator, "registerTable", policy.Requested(("a",), "t"))
    with pytest.raises(Forbidden, match=r"table.write on table lake.a.t"):
        _run(creator, "registerTable", policy.Requested(("a",), "t", overwrite=True))
