"""Commit retries: one lock per object, commits to one object queue up, locks go when no one holds them."""

from __future__ import annotations

import asyncio
import gc
import time

from irc_proxy.handling.tables.retry import KeyedLocks, backoff


def test_one_key_is_one_lock_and_other_keys_do_not_wait() -> None:
    locks = KeyedLocks()

    async def scenario() -> None:
        lock = locks(("lake", "sales", "orders"))
        assert locks(("lake", "sales", "orders")) is lock
        async with lock:
            other = locks(("lake", "sales", "items"))
            assert other is not lock
            await asyncio.wait_for(other.acquire(), 1)  # free while the first is held
            other.release()

    asyncio.run(scenario())


def test_commits_to_one_object_run_one_at_a_time() -> None:
    locks = KeyedLocks()
    inside, most = 0, 0

    async def commit() -> None:
        nonlocal inside, most
        async with locks("t"):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.005)
            inside -= 1

    async def scenario() -> None:
        await asyncio.gather(*(commit() for _ in range(10)))

    asyncio.run(scenario())
    assert most == 1


def test_a_lock_no_one_holds_is_forgotten() -> None:
    locks = KeyedLocks()
    held = locks("held")
    locks("dropped")
    gc.collect()
    assert list(locks._locks) == ["held"]  # one lock per live key, not per key ever committed to
    assert locks("held") is held


def test_backoff_grows_with_the_attempt_and_stays_under_100_ms() -> None:
    async def slept(attempt: int) -> float:
        start = time.monotonic()
        await backoff(attempt)
        return time.monotonic() - start

    assert asyncio.run(slept(0)) < 0.05  # at most 2 ms asked for (plus scheduling)
    assert all(asyncio.run(slept(attempt)) < 0.2 for attempt in (10, 31))
