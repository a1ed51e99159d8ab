"""Principals, roles and grants: the store's checks answer with the domain's errors, and nothing half-made stays."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from irc_proxy.errors import AlreadyExists, BadRequest, NotFound
from irc_proxy.stores.authz import AuthzStore
from irc_proxy.threads import ThreadRunner


@pytest.fixture
def store(state_engine: sa.Engine, threads: ThreadRunner) -> AuthzStore:
    return AuthzStore(state_engine, threads)


def test_a_principal_is_created_with_its_roles_sorted(store: AuthzStore, uid: str) -> None:
    async def scenario() -> None:
        await store.create_role(f"writer-{uid}")
        await store.create_role(f"admin-{uid}")
        made = await store.create_principal(f"etl-{uid}", "hash", [f"writer-{uid}", f"admin-{uid}", f"writer-{uid}"])
        assert made.roles == (f"admin-{uid}", f"writer-{uid}")
        assert made.has_secret
        assert (await store.principal(f"etl-{uid}")).roles == made.roles
        assert store.roles_of_sync(f"etl-{uid}") in {made.roles, made.roles[::-1]}

    asyncio.run(scenario())


def test_creating_a_principal_with_a_missing_role_creates_nothing(store: AuthzStore, uid: str) -> None:
    async def scenario() -> None:
        await store.create_role(f"r-{uid}")
        with pytest.raises(BadRequest, match=f"Roles do not exist: ghost-{uid}"):
            await store.create_principal(f"p-{uid}", None, [f"r-{uid}", f"ghost-{uid}"])
        with pytest.raises(NotFound):
            await store.principal(f"p-{uid}")

    asyncio.run(scenario())


def test_an_existing_principal_or_role_is_already_exists(store: AuthzStore, uid: str) -> None:
    async def scenario() -> None:
        await store.create_principal(f"p-{uid}", None)
        with pytest.raises(AlreadyExists, match=f"Principal already exists: p-{uid}"):
            await store.create_principal(f"p-{uid}", "other")
        await store.create_role(f"r-{uid}")
        with pytest.raises(AlreadyExists, match=f"Role already exists: r-{uid}"):
            await store.create_role(f"r-{uid}")

    asyncio.run(scenario())


def test_concurrent_creates_of_one_principal_make_exactly_one(store: AuthzStore, uid: str) -> None:
    async def scenario() -> list[object]:
        return await asyncio.gather(
            *(store.create_principal(f"race-{uid}", None) for _ in range(4)), return_exceptions=True
        )

    outcomes = asyncio.run(scenario())
    assert sum(not isinstance(o, BaseException) for o in outcomes) == 1
    assert all(isinstance(o, AlreadyExists) for o in outcomes if isinstance(o, BaseException))


def test_secrets_are_set_read_and_missing_principals_are_not_found(store: AuthzStore, uid: str) -> None:
    async def scenario() -> None:
        await store.create_principal(f"p-{uid}", None)
        assert await store.secret_hash(f"p-{uid}") is None
        assert not (await store.principal(f"p-{uid}")).has_secret
        await store.set_secret(f"p-{uid}", "salted")
        assert await store.secret_hash(f"p-{uid}") == "salted"
        assert await store.secret_hash(f"nobody-{uid}") is None
        with pytest.raises(NotFound, match="Principal does not exist"):
            await store.set_secret(f"nobody-{uid}", "x")
        with pytest.raises(NotFound):
            await store.delete_principal(f"nobody-{uid}")

    asyncio.run(scenario())


def test_assign_is_idempotent_and_unassign_of_an_unheld_role_is_not_found(store: AuthzStore, uid: str) -> None:
    async def scenario() -> None:
        await store.create_principal(f"p-{uid}", None)
        await store.create_role(f"r-{uid}")
        await store.assign(f"p-{uid}", f"r-{uid}")
        await store.assign(f"p-{uid}", f"r-{uid}")
        assert (await store.principal(f"p-{uid}")).roles == (f"r-{uid}",)
        with pytest.raises(NotFound, match="Role does not exist"):
            await store.assign(f"p-{uid}", f"ghost-{uid}")
        await store.unassign(f"p-{uid}", f"r-{uid}")
        with pytest.raises(NotFound, match=f"does not hold role r-{uid}"):
            await store.unassign(f"p-{uid}", f"r-{uid}")

    asyncio.run(scenario())


def test_grants_are_idempotent_keep_nested_namespaces_and_are_revoked_by_their_role(
    store: AuthzStore, uid: str
) -> None:
    async def scenario() -> None:
        role, other = f"r-{uid}", f"o-{uid}"
        await store.create_role(role)
        await store.create_role(other)
        grant = await store.add_grant(role, "lake", "table", ["a", "b"], "t", "TABLE_READ_DATA")
        assert await store.add_grant(role, "lake", "table", ["a", "b"], "t", "TABLE_READ_DATA") == grant
        assert grant.namespace == ("a", "b")
        top = await store.add_grant(role, "lake", "catalog", [], "", "CATALOG_MANAGE_CONTENT")
        assert top.namespace == ()
        assert [g.id for g in await store.grants(role)] == [grant.id, top.id]
        assert store.grants_of_sync([other]) == []
        assert store.grants_of_sync([]) == []
        with pytest.raises(NotFound, match=f"Role {other} has no grant {grant.id}"):
            await store.revoke(other, grant.id)
        await store.revoke(role, grant.id)
        assert [g.id for g in await store.grants(role)] == [top.id]
        with pytest.raises(NotFound, match="Role does not exist"):
            await store.grants(f"ghost-{uid}")

    asyncio.run(scenario())


def test_deleting_a_role_takes_its_grants_and_assignments(store: AuthzStore, uid: str) -> None:
    async def scenario() -> None:
        await store.create_role(f"r-{uid}")
        await store.create_principal(f"p-{uid}", None, [f"r-{uid}"])
        await store.add_grant(f"r-{uid}", "lake", "catalog", [], "", "CATALOG_READ_PROPERTIES")
        await store.delete_role(f"r-{uid}")
        assert (await store.principal(f"p-{uid}")).roles == ()
        assert store.grants_of_sync([f"r-{uid}"]) == []
        assert f"r-{uid}" not in await store.roles()
        await store.delete_principal(f"p-{uid}")
        assert f"p-{uid}" not in [p.name for p in await store.principals()]

    asyncio.run(scenario())
