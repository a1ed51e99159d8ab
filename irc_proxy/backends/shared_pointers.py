"""The pointer cache of a backend whose store announces nothing (Glue): the proxy's replicas tell each
other through the state database's change feed, outside writers through an optional event queue, and a
ttl bounds what neither reports.

Without a PostgreSQL state database the processes of one server cannot hear each other: with several
worker processes there is then no cache at all (each would miss its siblings' commits).

Glue names are case-insensitive (it stores them in lower case, finds ``T`` as ``t``, and its events name
``t``): every key is folded to lower case, or a table loaded as ``T`` would keep its cached pointer
through commits, drops and events about ``t`` for the whole ttl.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager

from irc_proxy.backends.glue_events import GlueEvents
from irc_proxy.backends.pointer_cache import Key, Peers, PointerCache
from irc_proxy.backends.pointer_feed import PointerFeed


def _folded(key: Key) -> Key:
    return key[0].lower(), key[1].lower()


class SharedPointers:
    """Cached pointer reads and announced pointer moves for one catalog."""

    def __init__(self, catalog: str, ttl: float, peers: Peers) -> None:
        self._catalog = catalog
        self.cache: PointerCache | None = None
        self._feed: PointerFeed | None = None
        self._events: GlueEvents | None = None
        if ttl <= 0 or (peers.state_url is None and peers.processes > 1):
            return
        self.cache = PointerCache(catalog, ttl=ttl)
        if peers.state_url is not None:
            self._feed = PointerFeed.shared(peers.feeds, peers.state_url)
            self._feed.attach(catalog, self.cache)

    def listen(self, events: GlueEvents) -> None:
        """Also forget the tables the store's own change events name (started with the first read)."""
        if self.cache is not None:
            self._events = events

    def heard(self, keys: Iterable[Key] | None) -> None:
        """The store's events say these tables changed (None: too many to name, forget every pointer)."""
        if self.cache is None:
            return
        if keys is None:
            self.cache.flush("feed")
        else:
            self.cache.invalidate([_folded(key) for key in keys], "feed")

    async def read(self, key: Key, load: Callable[[], Awaitable[str | None]]) -> str | None:
        if self.cache is None:
            return await load()
        if self._events is not None:
            self._events.start(asyncio.get_running_loop())
        return await self.cache.read(_folded(key), load)

    @asynccontextmanager
    async def moving(self, keys: list[Key]) -> AsyncIterator[None]:
        """Around a pointer move: not served from cache meanwhile, forgotten and announced after (landed
        or not: a failed call may have landed)."""
        if self.cache is None:
            yield
            return
        keys = [_folded(key) for key in keys]
        self.cache.moving(keys)
        try:
            yield
        finally:
            self.cache.moved(keys)
            if self._feed is not None:
                await self._feed.publish(self._catalog, keys)

    @contextmanager
    def moved_elsewhere(self, key: Key) -> Iterator[None]:
        """Another process of this server moves ``key`` meanwhile (a maintenance child): not served from cache,
        forgotten after. That process announces its own moves on the feed, if there is one."""
        if self.cache is None:
            yield
            return
        keys = [_folded(key)]
        self.cache.moving(keys)
        try:
            yield
        finally:
            self.cache.moved(keys)

    async def close(self) -> None:
        if self._events is not None:
            self._events.close()
        if self._feed is not None:
            await self._feed.close()
