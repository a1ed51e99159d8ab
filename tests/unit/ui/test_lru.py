"""The console's LRU map: bounded, least recently used out first, safe across threads."""

from __future__ import annotations

import threading

from irc_proxy.ui.lru import Lru


def test_the_least_recently_used_key_goes_first() -> None:
    cache: Lru[str, int] = Lru(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == (1, None, 3, 2)


def test_putting_a_key_again_replaces_its_value_and_refreshes_it() -> None:
    cache: Lru[str, int] = Lru(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), len(cache)) == (10, None, 2)


def test_many_threads_never_push_it_past_its_bound() -> None:
    cache: Lru[int, int] = Lru(50)

    def work(offset: int) -> None:
        for i in range(2000):
            cache.put(offset + i % 200, i)
            cache.get(offset + (i * 7) % 200)

    threads = [threading.Thread(target=work, args=(n * 1000,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 50
