"""Storage roots: containment both ways, literal prefixes, replacing, adding, moving and releasing roots."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from irc_proxy.stores.locations import LocationStore, Owner, ancestors
from irc_proxy.threads import ThreadRunner

ORDERS = Owner("table", "sales", "orders")
ITEMS = Owner("table", "sales", "items")


@pytest.fixture
def store(state_engine: sa.Engine, threads: ThreadRunner) -> LocationStore:
    return LocationStore(state_engine, threads)


def test_ancestors_run_from_the_authority_down_to_the_location() -> None:
    assert ancestors("s3://lake/wh/sales/orders") == [
        "s3://lake",
        "s3://lake/wh",
        "s3://lake/wh/sales",
        "s3://lake/wh/sales/orders",
    ]


def test_holders_are_the_roots_above_equal_to_or_beneath_a_location(store: LocationStore, uid: str) -> None:
    async def scenario() -> None:
        await store.hold(uid, ORDERS, ["s3://lake/wh/sales/orders"])
        await store.hold(uid, ITEMS, ["s3://lake/wh/sales/items/deep"])
        owners = lambda found: sorted(h.owner.name for h in found)  # noqa: E731
        assert owners(await store.holders(uid, ["s3://lake/wh/sales/orders/data"])) == ["orders"]  # above
        assert owners(await store.holders(uid, ["s3://lake/wh/sales/orders"])) == ["orders"]  # equal
        assert owners(await store.holders(uid, ["s3://lake/wh/sales"])) == ["items", "orders"]  # beneath
        assert owners(await store.holders(uid, ["s3://lake/wh/sales/order"])) == []  # a sibling by prefix only
        assert owners(await store.holders(uid, ["s3://lake/wh/sales"], exclude=[ORDERS])) == ["items"]
        assert await store.holders(f"other-{uid}", ["s3://lake/wh/sales"]) == []  # per catalog
        (found,) = await store.holders(uid, ["s3://lake/wh/sales/orders"])
        assert found.since is not None and found.since.tzinfo is not None

    asyncio.run(scenario())


def test_like_wildcards_in_a_location_are_literal(store: LocationStore, uid: str) -> None:
    async def scenario() -> None:
        await store.hold(uid, ORDERS, ["s3://lake/wh/aXb/t"])
        assert await store.holders(uid, ["s3://lake/wh/a_b"]) == []
        assert await store.holders(uid, ["s3://lake/wh/a%"]) == []
        await store.hold(uid, ITEMS, ["s3://lake/wh/a_b/t"])
        assert [h.owner for h in await store.holders(uid, ["s3://lake/wh/a_b"])] == [ITEMS]

    asyncio.run(scenario())


def test_hold_replaces_add_keeps_and_duplicates_are_stored_once(store: LocationStore, uid: str) -> None:
    async def scenario() -> None:
        await store.hold(uid, ORDERS, ["s3://a/1", "s3://a/1", "s3://a/2"])
        assert sorted(await store.held(uid, ORDERS)) == ["s3://a/1", "s3://a/2"]
        await store.hold(uid, ORDERS, ["s3://a/3"])
        assert await store.held(uid, ORDERS) == ["s3://a/3"]
        await store.add(uid, ORDERS, ["s3://a/3", "s3://a/4", "s3://a/4"])
        assert sorted(await store.held(uid, ORDERS)) == ["s3://a/3", "s3://a/4"]
        await store.release(uid, ORDERS)
        assert await store.held(uid, ORDERS) == []

    asyncio.run(scenario())


def test_a_moved_owner_keeps_its_roots_and_replaces_the_targets(store: LocationStore, uid: str) -> None:
    target = Owner("table", "archive", "orders")

    async def scenario() -> None:
        await store.hold(uid, ORDERS, ["s3://a/orders"])
        await store.hold(uid, target, ["s3://a/stale"])
        await store.move(uid, ORDERS, target)
        assert await store.held(uid, ORDERS) == []
        assert await store.held(uid, target) == ["s3://a/orders"]

    asyncio.run(scenario())


def test_a_catalog_is_marked_indexed_once_even_when_marked_twice(store: LocationStore, uid: str) -> None:
    async def scenario() -> None:
        assert not await store.indexed(uid)
        await asyncio.gather(store.mark_indexed(uid), store.mark_indexed(uid))
        await store.mark_indexed(uid)
        assert await store.indexed(uid)

    asyncio.run(scenario())
