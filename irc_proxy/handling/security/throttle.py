"""Brute-force brakes for the token endpoint: failed logins per client id and per address, and a bound
on concurrent secret checks.

Failures are counted in the state database (:mod:`irc_proxy.stores.login_failures`), so a caller cannot
spread its guesses over replicas. A key (client id or address) that has had ``limit`` failures within the
window is refused until the oldest of them leaves it. Refused attempts are not counted (a flood costs one
remembered "blocked until" per key here, and no database work). Keys are independent: failures of one
client id from one address never block another client id from another address.

Secret checks (scrypt: ~16 MiB and tens of milliseconds each, by design) run in worker threads, at most
``max_concurrent`` at a time; the rest wait up to ``wait_seconds`` and are then refused.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import TypeVar

from irc_proxy.stores.login_failures import LoginFailureStore
from irc_proxy.threads import ThreadRunner

T = TypeVar("T")
CLIENT, ADDRESS = "client", "address"


class Busy(Exception):
    """No secret check could start within the wait."""


class LoginThrottle:
    """Refuses logins of a client id or from an address that failed too often lately (see the module)."""

    def __init__(
        self, store: LoginFailureStore, per_client: int, per_address: int, memory_entries: int = 10_000
    ) -> None:
        self.store = store
        self.per_client = per_client
        self.per_address = per_address
        self._memory_entries = memory_entries
        self._blocked: dict[tuple[str, str], float] = {}

    async def retry_after(self, client_id: str, address: str) -> int | None:
        """Seconds until ``client_id`` from ``address`` may try again, or None if it may try now."""
        now = time.time()
        keys = [(CLIENT, client_id, self.per_client), (ADDRESS, address, self.per_address)]
        until = max(self._blocked.get((kind, key), 0.0) for kind, key, _ in keys)
        if until <= now:
            blocked = await self.store.blocked_until(keys, now)
            self._remember(blocked, now)
            until = max(blocked.values(), default=0.0)
        return math.ceil(until - now) if until > now else None

    async def failed(self, client_id: str | None, address: str) -> None:
        """Count a failed attempt against the address, and against the client id when there is one."""
        keys = [(ADDRESS, address)] + ([(CLIENT, client_id)] if client_id else [])
        await self.store.record(keys, time.time())

    def _remember(self, blocked: dict[tuple[str, str], float], now: float) -> None:
        if len(self._blocked) + len(blocked) > self._memory_entries:
            self._blocked = {key: until for key, until in self._blocked.items() if until > now}
            if len(self._blocked) + len(blocked) > self._memory_entries:
                self._blocked.clear()
        self._blocked.update(blocked)


class HashGate:
    """At most ``max_concurrent`` secret checks at once, each in a worker thread."""

    def __init__(self, threads: ThreadRunner, max_concurrent: int, wait_seconds: float) -> None:
        self._slots = asyncio.Semaphore(max_concurrent)  # also bounds how many of the pool's threads hash
        self._threads = threads
        self.wait_seconds = wait_seconds

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a worker thread once a slot is free.

        Raises:
            Busy: no slot freed up within ``wait_seconds``.
        """
        if self._slots.locked():
            try:
                async with asyncio.timeout(self.wait_seconds):  # cancels a waiting acquire cleanly
                    await self._slots.acquire()
            except TimeoutError:
                raise Busy from None
        else:
            await self._slots.acquire()  # free: returns at once
        try:
            return await self._threads.run(fn)
        finally:
            self._slots.release()
