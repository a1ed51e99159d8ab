"""A PostgreSQL ``LISTEN/NOTIFY`` change feed for the pointer caches of replicas sharing one database.

Why the cache stays exact (read-your-writes and monotonic reads across replicas):

1. A pointer swap sends its *change* message (``pg_notify``) in the swap's own transaction: the change is
   announced exactly when it becomes visible, and a crash cannot separate them.
2. Every replica listens on one connection and sends on another. Each ``HEARTBEAT_SECONDS`` it sends a
   *sync* message and notes when it sent it. PostgreSQL delivers notifications in commit order, so when
   its own sync comes back, every change committed before the sync was sent has been applied to its
   cache. A replica serves cached pointers only while its last returned sync was sent less than
   ``LEASE_SECONDS`` ago (``caught_up``); otherwise it reads the database. A stalled listener, a lost
   connection or a stalled event loop therefore stops cache answers within one lease.
3. A replica that receives another's change invalidates the keys, then sends an *ack*. The committing
   replica answers its client only when (a) its own change came back (so it has heard every replica whose
   sync committed before its change: the "members"; only once it has listened for a lease itself, else
   it cannot know them) and every member acked, or (b) one lease has passed
   since its transaction returned: then no replica can still trust a cache older than the change (the
   sync it trusts was sent before the commit, so more than a lease ago). A client that then loads through any
   replica sees its commit; a dead replica costs commits at most one lease until it leaves the members.
4. Monotonic reads: a replica whose cache misses reads the store, then *fences* before answering: it
   sends a sync and, once it came back (it has heard every change committed before its read), waits until
   the members it knew then acked each change to that key (or a lease passed). So no replica answers a
   pointer newer than another replica still serves from its cache. (The committing replica itself stops
   serving the key from its cache before its transaction starts: ``PointerCache.moving``.)
5. Reconnecting flushes the caches (changes may have been missed) and waits for a sync before trusting.
   While this replica's feed is down, it serves nothing from cache and does not fence (reads then rely
   on the others' leases alone); its commits wait one lease.

A store that is not this database (Glue) cannot send the change in its transaction: its backend
``publish``es it right after the change landed, and settles from when that NOTIFY committed; a crash in
between leaves the other replicas' entries to their ``pointer_cache_seconds``.

Writers that bypass the proxy send no change message: the catalog's ``pointer_cache_seconds`` bounds
how long their changes may go unseen.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg
from sqlalchemy import make_url

from irc_proxy.backends.pointer_cache import Key, PointerCache, key_digest

log = logging.getLogger("irc_proxy.pointer_feed")

CHANNEL = "irc_proxy_pointers"
APPLICATION_NAME = "irc-proxy pointer feed"
"""How the feed's two connections show in ``pg_stat_activity``."""
LEASE_SECONDS = 1.0
"""How long a returned sync lets a replica trust its cache; also the longest a commit waits for acks."""
HEARTBEAT_SECONDS = 0.2
"""How often a replica sends a sync (a fifth of the lease: four may be lost before trust lapses)."""
RECONNECT_SECONDS = 1.0
STALL_SECONDS = 5 * LEASE_SECONDS
"""No sync came back for this long although the sender works: the listener connection is dead; reconnect."""
MAX_PAYLOAD = 7000
"""PostgreSQL refuses payloads of 8000 bytes or more: a change whose keys do not fit names their digests
(``h``, ~350 fit), and only a bigger one names no keys (flush the catalog). A flush per commit would let a
writer empty every replica's cache of the whole catalog with transactions over its own long-named tables."""


def _conninfo(database_url: str) -> str:
    """psycopg's connection string for a SQLAlchemy URL (also what identifies the database)."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


@dataclass
class _Waiter:
    """A commit of this replica waiting for the other replicas' acks."""

    members: set[str] | None = None
    acked: set[str] = field(default_factory=set)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def check(self) -> None:
        if self.members is not None and self.members <= self.acked:
            self.done.set()


@dataclass
class _Heard:
    """Another replica's change as this replica heard it: the members that must still drop it."""

    catalog: str
    keys: frozenset[Key] | None
    """None: every key (a flush), unless ``digests`` names them."""
    waiter: _Waiter
    deadline: float
    digests: frozenset[str] | None = None

    def touches(self, catalog: str, key: Key) -> bool:
        if catalog != self.catalog:
            return False
        if self.digests is not None:
            return key_digest(key) in self.digests
        return self.keys is None or key in self.keys


class PointerFeed:
    """One database's change feed, serving the pointer caches of the catalogs stored in it."""

    def __init__(self, database_url: str) -> None:
        self._conninfo = _conninfo(database_url)
        self._users = 0
        self.replica = uuid.uuid4().hex[:16]
        self._caches: dict[str, PointerCache] = {}
        self._numbers = itertools.count(1)
        self._syncs: dict[int, float] = {}
        self._synced_at: float | None = None
        self._listening_since: float | None = None
        self._members: dict[str, float] = {}
        self._waiters: dict[int, _Waiter] = {}
        self._outbox: asyncio.Queue[tuple[dict[str, Any], int | asyncio.Future[float] | None]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._heard: dict[tuple[str, int], _Heard] = {}
        self._sync_waits: dict[int, asyncio.Future[None]] = {}
        self._unsent: tuple[int, asyncio.Future[None]] | None = None
        self._sync_numbers = itertools.count(1)

    @classmethod
    def shared(cls, feeds: dict[str, PointerFeed], database_url: str) -> PointerFeed:
        """The feed of ``database_url`` in ``feeds`` (one server's), created on first use.

        One feed per database and process, whatever the number of catalogs stored in it: a feed per
        catalog would open two connections each and send a sync every heartbeat that every feed of every
        replica receives, parses and counts as a member (so acks too): N catalogs cost N^2 deliveries."""
        key = _conninfo(database_url)
        if key not in feeds:
            feeds[key] = cls(database_url)
        return feeds[key]

    def attach(self, catalog: str, cache: PointerCache) -> None:
        """Feed ``cache`` (the pointers of ``catalog``) and let it trust itself only while caught up; each
        catalog attached ``close``s the feed once (the last one closes it)."""
        self._caches[catalog] = cache
        self._users += 1
        cache.trusted = self.caught_up
        cache.fence = functools.partial(self.fence, catalog)

    def caught_up(self) -> bool:
        """Whether the last sync that came back was sent less than a lease ago (starts the feed on first use)."""
        if self._task is None:
            self._start()
        return self._synced_at is not None and time.monotonic() - self._synced_at < LEASE_SECONDS

    def _start(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._outbox = asyncio.Queue()
        self._task = loop.create_task(self._run(), name="pointer-feed")

    async def close(self) -> None:
        """One attached catalog is done with the feed; the connections close with the last one."""
        self._users = max(self._users - 1, 0)
        if self._users:
            return
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    # Commits ------------------------------------------------------------------------------------
    def change(self, catalog: str, keys: Iterable[Key] | None) -> tuple[int, str]:
        """The change message a transaction moving these pointers sends (None: the whole catalog)."""
        if self._task is None:
            self._start()
        number = next(self._numbers)
        body: dict[str, Any] = {"k": "c", "r": self.replica, "n": number, "c": catalog}
        body["t"] = None if keys is None else [list(key) for key in keys]
        payload = json.dumps(body)
        if len(payload.encode()) > MAX_PAYLOAD and keys is not None:  # "t" absent: older replicas flush
            hashed = {k: v for k, v in body.items() if k != "t"} | {"h": [key_digest(key) for key in body["t"]]}
            payload = json.dumps(hashed)
        if len(payload.encode()) > MAX_PAYLOAD:
            payload = json.dumps(body | {"t": None})
        self._waiters[number] = _Waiter()
        return number, payload

    async def settle(self, number: int, started: float) -> None:
        """Wait until every replica dropped what change ``number`` replaced, or until none can still trust
        it (one lease after ``started``, the monotonic time taken once its transaction returned)."""
        waiter = self._waiters.get(number)
        try:
            remaining = started + LEASE_SECONDS - time.monotonic()
            if waiter is not None and remaining > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter.done.wait(), remaining)
        finally:
            self._waiters.pop(number, None)

    async def publish(self, catalog: str, keys: Iterable[Key]) -> None:
        """Announce a change that landed in another store (Glue), then ``settle`` it; bounded by two leases."""
        number, payload = self.change(catalog, keys)
        if self._outbox is None:
            self.abandon(number)
            return
        sent: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._outbox.put_nowait((json.loads(payload), sent))
        try:
            started = await asyncio.wait_for(asyncio.shield(sent), LEASE_SECONDS)
        except TimeoutError:  # the feed is down: the others' entries live until their ttl
            self.abandon(number)
            return
        await self.settle(number, started)

    def abandon(self, number: int) -> None:
        """The transaction that would have sent change ``number`` did not commit."""
        self._waiters.pop(number, None)

    async def fence(self, catalog: str, key: Key) -> None:
        """Return once no replica still serves an older pointer of ``key`` from its cache than what this
        replica just read from the store (see the module docstring, 4); at most one lease."""
        if not self.caught_up() or self._outbox is None:
            return
        deadline = time.monotonic() + LEASE_SECONDS
        if self._unsent is None:
            number = next(self._sync_numbers)
            self._unsent = (number, asyncio.get_running_loop().create_future())
            self._sync_waits[number] = self._unsent[1]
            self._outbox.put_nowait(({"k": "s", "r": self.replica, "n": number}, number))
        returned = self._unsent[1]
        try:
            await asyncio.wait_for(asyncio.shield(returned), deadline - time.monotonic())
            pending = [h.waiter.done.wait() for h in self._heard.values() if h.touches(catalog, key)]
            if pending:
                await asyncio.wait_for(asyncio.gather(*pending), deadline - time.monotonic())
        except TimeoutError:
            pass

    # The feed -----------------------------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            try:
                await self._serve()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any failure: flush, then reconnect
                log.warning("pointer change feed lost (%s); caches flushed, reconnecting", exc)
            self._lost()
            await asyncio.sleep(RECONNECT_SECONDS)

    async def _serve(self) -> None:
        connect = psycopg.AsyncConnection.connect
        listener = await connect(self._conninfo, autocommit=True, application_name=APPLICATION_NAME)
        sender = await connect(self._conninfo, autocommit=True, application_name=APPLICATION_NAME)
        async with listener, sender:
            await listener.execute(f"LISTEN {CHANNEL}")
            self._listening_since = time.monotonic()
            for cache in self._caches.values():  # anything committed before LISTEN was not heard
                cache.flush()
            tasks = [
                asyncio.create_task(self._listen(listener)),
                asyncio.create_task(self._heartbeat()),
                asyncio.create_task(self._send(sender)),
            ]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()
                raise ConnectionError("the change feed stopped")
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    def _lost(self) -> None:
        self._synced_at = None
        self._listening_since = None
        self._syncs.clear()
        self._members.clear()
        self._heard.clear()
        self._unsent = None
        for future in self._sync_waits.values():
            if not future.done():
                future.set_result(None)  # a fence waiting on the lost feed gives up (the feed is not caught up)
        self._sync_waits.clear()
        for cache in self._caches.values():
            cache.flush()

    async def _listen(self, listener: psycopg.AsyncConnection[Any]) -> None:
        async for note in listener.notifies():
            try:
                message = json.loads(note.payload)
            except ValueError:
                continue
            if isinstance(message, dict):
                self._receive(message)

    async def _heartbeat(self) -> None:
        assert self._outbox is not None
        connected = time.monotonic()
        while True:
            number = next(self._sync_numbers)
            self._outbox.put_nowait(({"k": "s", "r": self.replica, "n": number}, number))
            await asyncio.sleep(HEARTBEAT_SECONDS)
            self._forget_departed(time.monotonic())
            last = self._synced_at if self._synced_at is not None else connected
            if time.monotonic() - last > STALL_SECONDS:
                raise ConnectionError("no sync came back: the listener connection is stalled")

    async def _send(self, sender: psycopg.AsyncConnection[Any]) -> None:
        assert self._outbox is not None
        while True:
            message, sync = await self._outbox.get()
            if isinstance(sync, asyncio.Future):
                await sender.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps(message)))
                if not sync.done():
                    sync.set_result(time.monotonic())
                continue
            if sync is not None:
                self._syncs[sync] = time.monotonic()  # before the NOTIFY commits: a conservative lease start
                if self._unsent is not None and self._unsent[0] == sync:
                    self._unsent = None  # a fence asked later needs a later sync
            await sender.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps(message)))

    def _receive(self, message: Mapping[str, Any]) -> None:
        kind, origin, number = message.get("k"), str(message.get("r")), message.get("n")
        now = time.monotonic()
        if origin != self.replica:
            self._members[origin] = now
        if kind == "s" and origin == self.replica and isinstance(number, int):
            sent = self._syncs.pop(number, None)
            for older in [n for n in self._syncs if n < number]:
                del self._syncs[older]
            if sent is not None and (self._synced_at is None or sent > self._synced_at):
                self._synced_at = sent
            for waiting in [n for n in self._sync_waits if n <= number]:
                future = self._sync_waits.pop(waiting)
                if not future.done():
                    future.set_result(None)
        elif kind == "c" and isinstance(number, int):
            if origin == self.replica:
                self._returned(number, now)
            else:
                self._invalidate(message)
                self._hear(origin, number, message, now)
                if self._outbox is not None:
                    self._outbox.put_nowait(({"k": "a", "r": self.replica, "o": origin, "n": number}, None))
        elif kind == "a" and isinstance(number, int):
            waiter = self._waiters.get(number) if message.get("o") == self.replica else None
            heard = self._heard.get((str(message.get("o")), number))
            for found in (waiter, heard.waiter if heard is not None else None):
                if found is not None:
                    found.acked.add(origin)
                    found.check()

    def _forget_departed(self, now: float) -> None:
        """Drop the replicas not heard for a lease (no wait counts them any more): every restart of a
        replica (or a forged origin) would otherwise stay in ``_members`` for this process's lifetime,
        and every change heard or returned scans them."""
        self._members = {m: seen for m, seen in self._members.items() if now - seen < LEASE_SECONDS}

    def _hear(self, origin: str, number: int, message: Mapping[str, Any], now: float) -> None:
        """Remember who must still drop another replica's change (for ``fence``); forget settled ones."""
        for done in [k for k, h in self._heard.items() if h.waiter.done.is_set() or h.deadline < now]:
            del self._heard[done]
        keys = message.get("t")
        members = {m for m, seen in self._members.items() if now - seen < LEASE_SECONDS and m != origin}
        waiter = _Waiter(members=members if self._knows_members(now) else None)
        waiter.check()
        if not waiter.done.is_set():
            frozen = None if not isinstance(keys, list) else frozenset((str(k[0]), str(k[1])) for k in keys)
            digests = _digests(message) if frozen is None else None
            heard = _Heard(str(message.get("c")), frozen, waiter, now + LEASE_SECONDS, digests)
            self._heard[(origin, number)] = heard

    def _returned(self, number: int, now: float) -> None:
        """This replica's change came back: the replicas heard within a lease must ack it."""
        waiter = self._waiters.get(number)
        if waiter is not None and self._knows_members(now):
            waiter.members = {m for m, seen in self._members.items() if now - seen < LEASE_SECONDS}
            waiter.check()

    def _knows_members(self, now: float) -> bool:
        """Whether this replica has listened for a lease: every replica that may trust its cache now sent a
        sync since, so it was heard. Before that, waits run to their deadline."""
        return self._listening_since is not None and now - self._listening_since >= LEASE_SECONDS

    def _invalidate(self, message: Mapping[str, Any]) -> None:
        cache = self._caches.get(str(message.get("c")))
        if cache is None:
            return
        keys = message.get("t")
        digests = _digests(message)
        if isinstance(keys, list):
            cache.invalidate([(str(k[0]), str(k[1])) for k in keys if isinstance(k, list) and len(k) == 2], "feed")
        elif digests is not None:
            cache.invalidate_digests(digests, "feed")
        else:
            cache.flush("feed")


def _digests(message: Mapping[str, Any]) -> frozenset[str] | None:
    """The key digests a change too big to name its keys carries (None: it carries none)."""
    digests = message.get("h")
    return frozenset(str(d) for d in digests) if isinstance(digests, list) else None
