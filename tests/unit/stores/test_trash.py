"""The trash: kept entries are listed, taken once, and expired by exactly one claimant (again after its lease)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
import sqlalchemy as sa

from irc_proxy.stores.trash import TrashEntry, TrashFilter, TrashStore, new_entry
from irc_proxy.threads import ThreadRunner


@pytest.fixture
def store(state_engine: sa.Engine, threads: ThreadRunner) -> TrashStore:
    return TrashStore(state_engine, threads)


def entry(catalog: str, name: str, retention: timedelta = timedelta(days=1), **kw: object) -> TrashEntry:
    fields: dict[str, object] = {"namespace": ("sales",), "kind": "table", "dropped_by": "alice"} | kw
    return new_entry(
        catalog,
        fields["kind"],  # type: ignore[arg-type]
        fields["namespace"],  # type: ignore[arg-type]
        name,
        f"s3://m/{name}.json",
        fields["dropped_by"],  # type: ignore[arg-type]
        False,
        retention,
    )


def test_an_entry_is_read_back_and_listed_newest_first_by_filter(store: TrashStore, uid: str) -> None:
    async def scenario() -> None:
        first = entry(uid, "a")
        second = entry(uid, "b", namespace=("ops",), dropped_by="bob")
        third = entry(uid, "c", kind="view")
        for e in (first, second, third):
            await store.add(e)
        assert await store.get(uid, first.entry_id) == first
        assert await store.get(f"other-{uid}", first.entry_id) is None
        names = lambda found: [e.name for e in found]  # noqa: E731
        assert names(await store.page(uid, TrashFilter(), 0, 10)) == ["c", "b", "a"]
        assert names(await store.page(uid, TrashFilter(), 1, 1)) == ["b"]
        assert names(await store.page(uid, TrashFilter(namespace=("sales",)), 0, 10)) == ["c", "a"]
        assert names(await store.page(uid, TrashFilter(kind="view"), 0, 10)) == ["c"]
        assert names(await store.page(uid, TrashFilter(dropped_by="bob"), 0, 10)) == ["b"]
        assert first.to_json()["identifier"] == {"namespace": ["sales"], "name": "a"}

    asyncio.run(scenario())


def test_a_kept_entry_is_removed_once(store: TrashStore, uid: str) -> None:
    kept = entry(uid, "t")

    async def scenario() -> list[bool]:
        await store.add(kept)
        return list(await asyncio.gather(*(store.remove(uid, kept.entry_id) for _ in range(3))))

    assert sorted(asyncio.run(scenario())) == [False, False, True]
    assert not asyncio.run(store.exists(uid, kept.entry_id))


def test_relocate_records_the_pointer_and_backend_entry_the_table_really_had(store: TrashStore, uid: str) -> None:
    kept = entry(uid, "t")
    asyncio.run(store.add(kept))
    asyncio.run(store.relocate(kept.entry_id, "s3://m/t-2.json", {"Parameters": {"k": "v"}}))
    found = asyncio.run(store.get(uid, kept.entry_id))
    assert found is not None
    assert (found.metadata_location, found.backend_entry) == ("s3://m/t-2.json", {"Parameters": {"k": "v"}})
    assert [e.entry_id for e in asyncio.run(store.kept_at(uid, "s3://m/t-2.json"))] == [kept.entry_id]


def test_an_expired_entry_is_claimed_by_exactly_one_claimant(store: TrashStore, uid: str) -> None:
    expired = entry(uid, "gone", retention=timedelta(seconds=-1))
    asyncio.run(store.add(expired))
    asyncio.run(store.add(entry(uid, "young")))

    async def scenario() -> list[TrashEntry | None]:
        return list(
            await asyncio.gather(*(store.claim_expired([uid], f"owner-{i}", timedelta(minutes=5)) for i in range(4)))
        )

    claims = asyncio.run(scenario())
    won = [c for c in claims if c is not None]
    assert [c.entry_id for c in won] == [expired.entry_id]
    owner = f"owner-{claims.index(won[0])}"
    assert asyncio.run(store.still_claimed(expired.entry_id, owner))
    assert not asyncio.run(store.still_claimed(expired.entry_id, "someone-else"))
    # Being expired, it is no longer kept: neither readable nor removable, yet it exists.
    assert asyncio.run(store.get(uid, expired.entry_id)) is None
    assert not asyncio.run(store.remove(uid, expired.entry_id))
    assert asyncio.run(store.exists(uid, expired.entry_id))
    assert not asyncio.run(store.finish(expired.entry_id, "someone-else"))
    assert asyncio.run(store.finish(expired.entry_id, owner))
    assert not asyncio.run(store.exists(uid, expired.entry_id))


def test_a_claim_older_than_the_lease_is_claimed_again(store: TrashStore, uid: str) -> None:
    expired = entry(uid, "gone", retention=timedelta(seconds=-1))
    asyncio.run(store.add(expired))
    first = asyncio.run(store.claim_expired([uid], "dead", timedelta(minutes=5)))
    assert first is not None
    assert asyncio.run(store.claim_expired([uid], "live", timedelta(minutes=5))) is None  # within the lease
    again = asyncio.run(store.claim_expired([uid], "live", timedelta(seconds=-1)))  # the lease has run out
    assert again is not None and again.entry_id == expired.entry_id
    assert not asyncio.run(store.still_claimed(expired.entry_id, "dead"))
    assert asyncio.run(store.claim_expired([f"other-{uid}"], "x", timedelta(seconds=-1))) is None


def test_a_metadata_file_registered_again_removes_its_entries_even_while_being_expired(
    store: TrashStore, uid: str
) -> None:
    kept, expiring = entry(uid, "t"), entry(uid, "t", retention=timedelta(seconds=-1))
    asyncio.run(store.add(kept))
    asyncio.run(store.add(expiring))
    assert asyncio.run(store.claim_expired([uid], "owner", timedelta(minutes=5))) is not None
    removed = asyncio.run(store.remove_location(uid, "s3://m/t.json"))
    assert sorted(e.entry_id for e in removed) == sorted([kept.entry_id, expiring.entry_id])
    assert not asyncio.run(store.still_claimed(expiring.entry_id, "owner"))
    assert asyncio.run(store.kept_at(uid, "s3://m/t.json")) == []
