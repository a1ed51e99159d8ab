"""The local backend's pointer cache and how it hears that a pointer moved.

On SQLite, the wal-index header in the ``-shm`` file (``WalIndex``, read through a mmap: ~0.8 us, no
syscall) moves whenever any connection (this process's writers, another worker process, a bare sqlite3
writer) commits to the file: checked on every cached read, it makes the cache exact with no ttl. When the
header is in doubt (a write in progress, garbage, no mapping), ``PRAGMA data_version`` on the event-loop
reader connection answers instead (built on the same header; a read lock, two ``fcntl`` calls, ~20 us in
the server). On PostgreSQL, the ``PointerFeed``
(``LISTEN/NOTIFY``) carries every replica's changes, each sent in the transaction that makes it; the ttl
then bounds what writers bypassing the proxy may go unseen.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection, func, select

from irc_proxy.backends.pointer_cache import Key, Peers, PointerCache
from irc_proxy.backends.pointer_feed import CHANNEL, PointerFeed
from irc_proxy.backends.sqlite_wal_index import WalIndex

Change = tuple[int, str]
"""A change message about to be sent: (its number, its payload)."""


class LocalPointers:
    """Cached pointer reads and announced pointer moves for one local catalog."""

    def __init__(
        self,
        catalog: str,
        dialect: str,
        database_url: str,
        fast_reads: sqlite3.Connection | None,
        ttl: float,
        peers: Peers | None = None,
        wal_index: WalIndex | None = None,
    ) -> None:
        """``peers``: the server's shared state (its change feeds: one per database, whatever the catalogs);
        ``wal_index``: the ``-shm`` header of the file ``fast_reads`` reads (SQLite in WAL mode)."""
        self._catalog = catalog
        self._fast_reads = fast_reads
        self._wal_index = wal_index
        self._header: bytes | None = None
        self._data_version: int | None = None
        self._cache: PointerCache | None = None
        self._feed: PointerFeed | None = None
        if ttl > 0 and dialect == "postgresql":
            self._cache = PointerCache(catalog, ttl=ttl)
            self._feed = PointerFeed.shared((peers or Peers()).feeds, database_url)
            self._feed.attach(catalog, self._cache)
        elif ttl > 0 and fast_reads is not None:  # any writer moves the wal-index header: no ttl needed
            self._cache = PointerCache(catalog)
            self._cache.trusted = self._sqlite_unchanged

    def _sqlite_unchanged(self) -> bool:
        """Whether no other connection committed since the last look; when one did, the cache is flushed
        (and trusted again from this look on)."""
        assert self._fast_reads is not None and self._cache is not None
        header = None if self._wal_index is None else self._wal_index.header()
        if header is not None:
            if header == self._header:
                return True
            self._header = header
            self._data_version = None  # the next PRAGMA look (if any) starts over: it flushes
            self._cache.flush("feed")
            return False
        self._header = None  # in doubt: SQLite's own look, and the next header look flushes
        try:
            version = self._fast_reads.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:
            return False
        if version != self._data_version:
            self._data_version = version
            self._cache.flush("feed")
            return False
        return True

    async def read(self, key: Key, load: Callable[[], Awaitable[str | None]]) -> str | None:
        if self._cache is None:
            return await load()
        return await self._cache.read(key, load)

    def change(self, keys: Sequence[Key]) -> Change | None:
        """Before a transaction that may move ``keys``: stop serving them; the message it sends (PostgreSQL)."""
        if self._cache is not None:
            self._cache.moving(keys)
        return None if self._feed is None else self._feed.change(self._catalog, keys)

    @staticmethod
    def announce(conn: Connection, change: Change | None) -> None:
        """Send the change in the transaction that makes it: it is heard exactly when it is visible."""
        if change is not None:
            conn.execute(select(func.pg_notify(CHANNEL, change[1])))

    async def changed(self, keys: Sequence[Key], change: Change | None, committed: bool = True) -> None:
        """After the transaction (landed or not): forget ``keys`` here and, when ``change`` was committed,
        wait until the other replicas did too (``PointerFeed.settle``)."""
        if self._cache is not None:
            self._cache.moved(keys)
        if self._feed is None or change is None:
            return
        if committed:
            await self._feed.settle(change[0], time.monotonic())
        else:
            self._feed.abandon(change[0])

    @contextmanager
    def moved_elsewhere(self, key: Key) -> Iterator[None]:
        """Another process may move ``key`` meanwhile (``TableCommits.moved_elsewhere``)."""
        if self._cache is None:
            yield
            return
        self._cache.moving([key])
        try:
            yield
        finally:
            self._cache.moved([key])

    async def close(self) -> None:
        if self._feed is not None:
            await self._feed.close()
