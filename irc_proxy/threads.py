"""The one pool for blocking work (SQLAlchemy, boto3, pyiceberg FileIO, password hashing).

``app.py`` builds one :class:`ThreadRunner` and hands it to everything that blocks. A component
that must also bound its own concurrency (Glue's ``max_concurrency``, the password-hash gate) takes
``runner.limited(n)``: the same pool, with a second bound of ``n`` on top.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter

P = ParamSpec("P")
R = TypeVar("R")


class ThreadRunner:
    """Runs sync callables off the event loop, at most ``limit`` at a time."""

    def __init__(self, limit: int) -> None:
        self._limiter = CapacityLimiter(limit)

    async def run(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Call ``fn(*args, **kwargs)`` in a worker thread and return its result."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=self._limiter)

    def limited(self, limit: int) -> ThreadRunner:
        """This pool, with at most ``limit`` of the returned runner's calls running (or waiting in it) at once."""
        return _Limited(self, limit)


class _Limited(ThreadRunner):
    def __init__(self, pool: ThreadRunner, limit: int) -> None:
        self._pool = pool
        self._bound = CapacityLimiter(limit)

    async def run(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        async with self._bound:
            return await self._pool.run(fn, *args, **kwargs)
