"""The pointer cache: bounded, never stores an answer older than an invalidation, never serves a key this
process is moving, expires by ttl, and serves nothing while its change signal is not trusted."""

from __future__ import annotations

import asyncio

from irc_proxy.backends.pointer_cache import PointerCache


def _load(value: str | None, calls: list[int]) -> object:
    async def load() -> str | None:
        calls.append(1)
        return value

    return load


def test_warm_reads_are_hits_and_the_lru_is_bounded() -> None:
    cache = PointerCache("c", capacity=2)
    calls: list[int] = []

    async def scenario() -> None:
        for key in [("n", "a"), ("n", "a"), ("n", "b"), ("n", "c"), ("n", "a")]:
            await cache.read(key, _load(f"loc-{key[1]}", calls))  # type: ignore[arg-type]

    asyncio.run(scenario())
    assert len(calls) == 4  # a, b, c, then a again (evicted as least recently used)
    assert len(cache) == 2


def test_a_read_that_raced_an_invalidation_is_not_stored() -> None:
    cache = PointerCache("c")
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow_old_answer() -> str | None:
        started.set()
        await release.wait()
        return "old"

    async def scenario() -> str | None:
        reading = asyncio.create_task(cache.read(("n", "t"), slow_old_answer))
        await started.wait()
        cache.invalidate([("n", "t")])  # a commit landed while the read was in flight
        release.set()
        assert await reading == "old"
        return cache.get(("n", "t"))

    assert asyncio.run(scenario()) is None


def test_a_key_being_moved_is_neither_served_nor_stored() -> None:
    cache = PointerCache("c")
    generation = cache.generation
    cache.put(("n", "t"), "v1", generation)
    cache.moving([("n", "t")])
    assert cache.get(("n", "t")) is None
    cache.put(("n", "t"), "v1", cache.generation)
    assert cache.get(("n", "t")) is None
    cache.moved([("n", "t")])
    cache.put(("n", "t"), "v2", cache.generation)
    assert cache.get(("n", "t")) == "v2"


def test_entries_expire_after_the_ttl_and_an_untrusted_signal_serves_nothing() -> None:
    cache = PointerCache("c", ttl=0.05)
    cache.put(("n", "t"), "v1", cache.generation)
    assert cache.get(("n", "t")) == "v1"
    asyncio.run(asyncio.sleep(0.06))
    assert cache.get(("n", "t")) is None
    cache.put(("n", "t"), "v1", cache.generation)
    cache.trusted = lambda: False
    assert cache.get(("n", "t")) is None


def test_digests_name_the_keys_they_stand_for_after_evictions_and_expiry() -> None:
    from irc_proxy.backends.pointer_cache import key_digest

    cache = PointerCache("c", capacity=2)
    for name in ("a", "b", "c"):  # "a" evicted
        cache.put(("n", name), f"loc-{name}", cache.generation)
    cache.invalidate_digests([key_digest(("n", "a")), key_digest(("n", "b"))])
    assert cache.get(("n", "b")) is None and cache.get(("n", "c")) == "loc-c"
    assert cache._by_digest == {key_digest(("n", "c")): [("n", "c")]}
