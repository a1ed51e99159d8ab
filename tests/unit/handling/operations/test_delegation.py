"""Which storage access a caller may be delegated for a table (``handling/operations/delegation.py``)."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from irc_proxy.errors import Forbidden
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.operations import delegation
from irc_proxy.handling.security.access import Access, Delegation
from irc_proxy.handling.security.authz import Authorizer, Grant, Grants, Privilege, Securable, SecurableType
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.stores.authz import AuthzStore
from irc_proxy.threads import ThreadRunner

T = TableIdent(("a",), "t")


def _access(*privileges: Privilege) -> Access:
    grants = Grants(
        tuple(Grant("role", Securable(SecurableType.TABLE, "lake", T.namespace, T.name), p) for p in privileges)
    )
    authorizer = Authorizer(cast(AuthzStore, None), ThreadRunner(1), enabled=True)
    return Access(RequestContext("r", principal="alice", grants=grants), authorizer, "lake")


@pytest.mark.parametrize(
    ("privileges", "expected"),
    [
        ((Privilege.CREDENTIALS_WRITE, Privilege.TABLE_WRITE), Delegation.READ_WRITE),
        ((Privilege.CREDENTIALS_WRITE, Privilege.TABLE_READ), Delegation.READ),
        ((Privilege.CREDENTIALS_READ, Privilege.TABLE_READ), Delegation.READ),
        ((Privilege.TABLE_WRITE,), None),
        ((), None),
    ],
)
def test_offered_needs_both_the_credentials_and_the_table_privilege(
    privileges: tuple[Privilege, ...], expected: Delegation | None
) -> None:
    assert asyncio.run(delegation.offered(_access(*privileges), T)) is expected


def test_required_refuses_a_caller_without_a_delegation_privilege_and_audits_it() -> None:
    access = _access(Privilege.TABLE_READ)
    with pytest.raises(Forbidden, match=r"credentials.read on table lake.a.t"):
        asyncio.run(delegation.required(access, T))
    assert access.context.audit.decision == "denied"
    assert (
        asyncio.run(delegation.required(_access(Privilege.CREDENTIALS_READ, Privilege.TABLE_READ), T))
        is Delegation.READ
    )


def test_nothing_is_delegated_when_no_mode_is_asked() -> None:
    access = _access(Privilege.CREDENTIALS_WRITE, Privilege.TABLE_WRITE)
    granted = asyncio.run(
        delegation.table_access(access, cast(Catalog, _NoVending()), T, ["s3://b/t"], delegation.Asked())
    )
    assert granted == delegation.Granted()


class _NoVending:
    name = "lake"
    vending = None
