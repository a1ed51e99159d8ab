"""Server-side commit retry: per-object serialisation inside a process, jittered backoff across replicas."""

from __future__ import annotations

import asyncio
import random
import weakref
from collections.abc import Hashable

MAX_COMMIT_ATTEMPTS = 32


async def backoff(attempt: int) -> None:
    """Sleep a random time that grows with ``attempt`` (capped at 100 ms) after a lost swap."""
    await asyncio.sleep(random.uniform(0, min(0.1, 0.002 * 2**attempt)))  # noqa: S311 - jitter, not crypto


class KeyedLocks:
    """One asyncio lock per key (a table or view), created on demand and freed when unused.

    Commits to one object through one process queue up instead of racing each other, so the
    compare-and-swap only has to settle races between replicas.
    """

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[Hashable, asyncio.Lock] = weakref.WeakValueDictionary()

    def __call__(self, key: Hashable) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        return lock
