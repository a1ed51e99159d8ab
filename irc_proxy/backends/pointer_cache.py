"""An exact, bounded, per-process cache of table pointers (current metadata locations).

A warm loadTable or a 304 needs only the pointer to decide what to answer; reading it from the
catalog's store costs a database round trip (and a thread hop) or a Glue ``GetTable``. The cache
answers it from memory while the backend's change signal says nothing changed:

- this process's own commits, drops, renames and registers invalidate their keys right after they land;
- ``trusted`` (set by the backend) says whether entries may be served at all right now: a SQLite file
  whose wal-index header (``-shm``) moved, or a PostgreSQL change feed that has not proven itself caught up
  recently, answers False, and every read goes to the store;
- other replicas' changes arrive through the backend's feed (``backends.pointer_feed``, Glue events);
- ``ttl`` bounds how long an entry lives when writers may bypass the proxy (None: no bound needed).

A read that raced an invalidation is not stored: ``generation`` is taken before the store is asked,
and any invalidation bumps it, so an older answer never overwrites a newer invalidation (monotonic
reads within a process). While this process moves a pointer (``moving``), that key is neither served
nor stored: a replica that already reads the new pointer from the store must not meet this one still
answering the old. ``fence`` (set by a change feed) runs after a store read and before its answer is
used, so that an answer newer than another replica's cache is given only once that cache dropped it.
Everything runs on the event loop: no locks.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from irc_proxy.metrics import POINTER_CACHE_HITS, POINTER_CACHE_INVALIDATIONS, POINTER_CACHE_MISSES

if TYPE_CHECKING:
    from irc_proxy.backends.pointer_feed import PointerFeed

Key = tuple[str, str]
"""(flat namespace, table name)."""

DEFAULT_CAPACITY = 10_000
"""Entries kept per catalog: ~200 bytes for short names, so ~2 MB; with names of the longest length allowed
(255 bytes each) and long locations ~1.3 kB, so ~13 MB at most (measured with tracemalloc)."""


def key_digest(key: Key) -> str:
    """A key in 16 characters, for change messages whose keys in full would not fit a NOTIFY payload (a
    collision only costs an extra invalidation)."""
    return hashlib.blake2b(json.dumps(list(key)).encode(), digest_size=8).hexdigest()


def _always() -> bool:
    return True


async def _no_fence(key: Key) -> None:
    return None


class PointerCache:
    """Bounded LRU of (namespace, name) -> metadata location for one catalog."""

    def __init__(self, catalog: str, ttl: float | None = None, capacity: int = DEFAULT_CAPACITY) -> None:
        """``ttl`` None or positive; a catalog configured with 0 gets no cache at all (``enabled``)."""
        self._entries: OrderedDict[Key, tuple[str, float]] = OrderedDict()
        self._by_digest: dict[str, list[Key]] = {}
        self._ttl = ttl
        self._capacity = capacity
        self.generation = 0
        self.trusted: Callable[[], bool] = _always
        self.fence: Callable[[Key], Awaitable[None]] = _no_fence
        self._moving: Counter[Key] = Counter()
        self._hits = POINTER_CACHE_HITS.labels(catalog)
        self._misses = POINTER_CACHE_MISSES.labels(catalog)
        self._invalidations = {
            cause: POINTER_CACHE_INVALIDATIONS.labels(catalog, cause) for cause in ("commit", "feed", "flush")
        }

    def get(self, key: Key) -> str | None:
        """The cached location, or None (a miss: ask the store)."""
        entry = self._entries.get(key)
        if entry is None or key in self._moving or not self.trusted():
            return None
        location, stored = entry
        if self._ttl is not None and time.monotonic() - stored >= self._ttl:
            self._forget(key)
            return None
        self._entries.move_to_end(key)
        return location

    def put(self, key: Key, location: str | None, generation: int) -> None:
        """Remember what the store said, unless an invalidation happened since ``generation`` was taken."""
        if location is None or generation != self.generation or key in self._moving:
            return
        if key not in self._entries:
            self._by_digest.setdefault(key_digest(key), []).append(key)
        self._entries[key] = (location, time.monotonic())
        self._entries.move_to_end(key)
        if len(self._entries) > self._capacity:
            self._forget(next(iter(self._entries)))

    def _forget(self, key: Key) -> None:
        if self._entries.pop(key, None) is None:
            return
        digest = key_digest(key)
        same = self._by_digest.get(digest, [])
        if key in same:
            same.remove(key)
        if not same:
            self._by_digest.pop(digest, None)

    async def read(self, key: Key, load: Callable[[], Awaitable[str | None]]) -> str | None:
        """The pointer from the cache, else from ``load`` (then remembered)."""
        cached = self.get(key)
        if cached is not None:
            self._hits.inc()
            return cached
        self._misses.inc()
        generation = self.generation
        location = await load()
        await self.fence(key)
        self.put(key, location, generation)
        return location

    def moving(self, keys: Iterable[Key]) -> None:
        """This process starts moving these pointers: neither serve nor store them until ``moved``."""
        self.generation += 1
        for key in keys:
            self._forget(key)
            self._moving[key] += 1

    def moved(self, keys: Iterable[Key]) -> None:
        """The move ended (landed or not): forget the keys, cache them again from the next read."""
        self.generation += 1
        for key in keys:
            self._forget(key)
            self._moving[key] -= 1
            if self._moving[key] <= 0:
                del self._moving[key]
        self._invalidations["commit"].inc()

    def invalidate(self, keys: Iterable[Key], cause: str = "commit") -> None:
        """Forget these tables' pointers (and let no read in flight store an older one)."""
        self.generation += 1
        for key in keys:
            self._forget(key)
        self._invalidations[cause].inc()

    def invalidate_digests(self, digests: Iterable[str], cause: str = "feed") -> None:
        """Forget the pointers whose ``key_digest`` is one of these (a change too big to name its keys)."""
        self.invalidate([key for digest in digests for key in list(self._by_digest.get(digest, ()))], cause)

    def flush(self, cause: str = "flush") -> None:
        """Forget every pointer (the change signal may have missed changes)."""
        self.generation += 1
        self._entries.clear()
        self._by_digest.clear()
        self._invalidations[cause].inc()

    def __len__(self) -> int:
        return len(self._entries)


class Peers:
    """Who else may move this proxy's pointers, for a backend whose store sends no change signal (Glue).

    ``state_url``: the PostgreSQL state database the replicas share (their change feed runs on it);
    ``processes``: this server's worker processes (without a shared database they cannot hear each other);
    ``feeds``: this process's change feeds, one per database (``PointerFeed.shared``).
    """

    def __init__(self, state_url: str | None = None, processes: int = 1) -> None:
        self.state_url = state_url
        self.processes = processes
        self.feeds: dict[str, PointerFeed] = {}
