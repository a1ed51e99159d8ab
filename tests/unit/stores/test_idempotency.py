"""Idempotency-Key outcomes: claimed once, replayed, refused for another request, taken over from a dead holder."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta

import pytest
import sqlalchemy as sa

from irc_proxy.stores import idempotency
from irc_proxy.stores.holders import ProcessHolderLocks
from irc_proxy.stores.idempotency import SMALL_BODY, IdempotencyStore
from irc_proxy.threads import ThreadRunner

HOUR = timedelta(hours=1)


@pytest.fixture
def store(state_engine: sa.Engine, threads: ThreadRunner) -> Iterator[IdempotencyStore]:
    made = IdempotencyStore(state_engine, threads, HOUR)
    yield made
    asyncio.run(made.close())


def test_a_finished_outcome_is_replayed_to_the_same_request(store: IdempotencyStore, uid: str) -> None:
    async def scenario() -> None:
        claim = await store.claim(uid, "k1", "fp", 0)
        assert claim.state == "claimed"
        await store.finish(uid, "k1", claim.owner, 201, [("content-type", "application/json")], b'{"ok":1}')
        replay = await store.claim(uid, "k1", "fp", 0)
        assert (replay.state, replay.status, replay.headers, replay.body) == (
            "finished",
            201,
            [("content-type", "application/json")],
            b'{"ok":1}',
        )
        assert (await store.claim(uid, "k1", "another request", 0)).state == "mismatch"
        assert (await store.claim(f"other-{uid}", "k1", "another request", 0)).state == "claimed"  # per principal

    asyncio.run(scenario())


def test_a_key_held_by_a_running_request_is_in_progress_after_the_wait(store: IdempotencyStore, uid: str) -> None:
    async def scenario() -> None:
        claim = await store.claim(uid, "k", "fp", 0)
        assert claim.state == "claimed"
        assert (await store.claim(uid, "k", "fp", 0.05)).state == "in-progress"
        assert (await store.claim(uid, "k", "other", 0)).state == "mismatch"  # known from the row, no wait

    asyncio.run(scenario())


def test_a_waiting_request_gets_the_outcome_once_the_holder_finishes(store: IdempotencyStore, uid: str) -> None:
    async def scenario() -> str:
        claim = await store.claim(uid, "k", "fp", 0)

        async def finish_later() -> None:
            await asyncio.sleep(0.1)
            await store.finish(uid, "k", claim.owner, 200, [], b"done")

        waited, _ = await asyncio.gather(store.claim(uid, "k", "fp", 10), finish_later())
        assert waited.body == b"done"
        return waited.state

    assert asyncio.run(scenario()) == "finished"


def test_a_released_key_is_claimed_again(store: IdempotencyStore, uid: str) -> None:
    async def scenario() -> None:
        first = await store.claim(uid, "k", "fp", 0)
        await store.release(uid, "k", first.owner)
        second = await store.claim(uid, "k", "fp", 0)
        assert second.state == "claimed" and second.owner != first.owner

    asyncio.run(scenario())


def test_a_claim_whose_holder_died_is_taken_over_and_the_old_owner_stores_nothing(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    # Two processes' holder locks; the first process's lock is gone (it died), its in-progress row stays.
    dead = IdempotencyStore(state_engine, threads, HOUR, holders=ProcessHolderLocks())
    live = IdempotencyStore(state_engine, threads, HOUR, holders=ProcessHolderLocks())

    async def scenario() -> None:
        lost = await dead.claim(uid, "k", "fp", 0)
        taken = await live.claim(uid, "k", "fp", 0)
        assert (lost.state, taken.state) == ("claimed", "claimed")
        assert taken.owner != lost.owner
        await dead.finish(uid, "k", lost.owner, 500, [], b"late")  # lost its claim: nothing is stored
        await live.finish(uid, "k", taken.owner, 200, [], b"fresh")
        assert (await dead.claim(uid, "k", "fp", 0)).body == b"fresh"

    asyncio.run(scenario())


def test_an_expired_outcome_is_purged_and_not_replayed(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    store = IdempotencyStore(state_engine, threads, timedelta(seconds=-1), holders=ProcessHolderLocks())

    async def scenario() -> None:
        first = await store.claim(uid, "k", "fp", 0)
        await store.finish(uid, "k", first.owner, 200, [], b"old")
        assert (await store.claim(uid, "k", "other", 0)).state == "claimed"
        assert await store.purge() >= 1

    asyncio.run(scenario())


def test_large_outcomes_past_the_principals_bound_are_released_not_kept(
    store: IdempotencyStore, uid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(idempotency, "MAX_PRINCIPAL_BYTES", 3 * SMALL_BODY)
    large = b"x" * (2 * SMALL_BODY)

    async def scenario() -> list[str]:
        states: list[str] = []
        for key, body in (("a", large), ("b", large), ("c", b"small")):
            claim = await store.claim(uid, key, "fp", 0)
            await store.finish(uid, key, claim.owner, 200, [], body)
            states.append((await store.claim(uid, key, "fp", 0)).state)
        return states

    # a: kept (2 of 3 units); b: would make 4, so released (a retry runs again); c: small, always kept.
    assert asyncio.run(scenario()) == ["finished", "claimed", "finished"]
