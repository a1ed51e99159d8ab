"""The management handler on a real SQLite state database: all-or-nothing creates, the validation every caller
shares, the caches it clears, and the one JSON shape."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from irc_proxy.errors import AlreadyExists, BadRequest, NoSuchWarehouse, NotFound
from irc_proxy.handling.operations import management
from irc_proxy.handling.operations.management import GrantSpec, Management
from irc_proxy.handling.security.authz import Authorizer, Caller, Privilege, Securable, SecurableType
from irc_proxy.stores import db
from irc_proxy.stores.authz import AuthzStore
from irc_proxy.threads import ThreadRunner


@pytest.fixture
def handler(tmp_path: Path) -> Iterator[Management]:
    engine = db.create_state_engine(f"sqlite:///{tmp_path / 'state.db'}")
    db.ensure_schema(engine, True)
    threads = ThreadRunner(2)
    store = AuthzStore(engine, threads)
    authorizer = Authorizer(store, threads, enabled=True, cache_seconds=3600)
    yield Management(store, threads, ["local"], authorizer=authorizer)
    engine.dispose()


def test_a_create_with_a_missing_role_creates_nothing(handler: Management) -> None:
    async def scenario() -> None:
        await handler.create_role("present")
        with pytest.raises(BadRequest, match="Roles do not exist: missing"):
            await handler.create_principal("job", ["present", "missing"], credentials=True)
        with pytest.raises(NotFound):
            await handler.principal("job")
        created = await handler.create_principal("job", ["present", "present"])
        assert created.principal.roles == ("present",) and created.secret is None  # no tokens issued here
        with pytest.raises(AlreadyExists):
            await handler.create_principal("job")

    asyncio.run(scenario())


def test_the_store_refuses_a_missing_role_in_its_own_transaction(handler: Management) -> None:
    """The handler's pre-check is only a shortcut: the store checks again where it writes."""

    async def scenario() -> None:
        with pytest.raises(BadRequest):
            await handler.store.create_principal("raced", None, ["gone"])
        assert await handler.principals() == []

    asyncio.run(scenario())


@pytest.mark.parametrize("name", ["", "x" * 256, "tab\there", "del\x7f"])
def test_names_are_validated_for_every_caller(handler: Management, name: str) -> None:
    with pytest.raises(BadRequest, match="Invalid role name"):
        asyncio.run(handler.create_role(name))
    with pytest.raises(BadRequest, match="Invalid principal name"):
        asyncio.run(handler.create_principal(name))


def test_grants_name_a_configured_catalog_and_clear_the_cache(handler: Management) -> None:
    async def scenario() -> None:
        await handler.create_role("reader")
        await handler.create_principal("alice", ["reader"])
        assert handler.authorizer is not None
        before = await handler.authorizer.grants_for(Caller("alice"))
        with pytest.raises(NoSuchWarehouse):
            await handler.add_grant("reader", GrantSpec("table.read", "elsewhere"))
        grant = await handler.add_grant("reader", GrantSpec("table.read", "local", ["sales"], table="orders"))
        after = await handler.authorizer.grants_for(Caller("alice"))  # cached for an hour, unless cleared
        orders = Securable(SecurableType.TABLE, "local", ("sales",), "orders")
        assert not before.check(Privilege.TABLE_READ, orders).allowed
        assert after.check(Privilege.TABLE_READ, orders).allowed
        assert management.grant_json(grant) == {
            "id": grant.id,
            "role": "reader",
            "privilege": "table.read",
            "type": "table",
            "catalog": "local",
            "namespace": ["sales"],
            "table": "orders",
        }
        assert await handler.grant("reader", grant.id) == grant
        await handler.revoke("reader", grant.id)
        with pytest.raises(NotFound):
            await handler.grant("reader", grant.id)

    asyncio.run(scenario())
