"""Run blocking SDK calls (SQLAlchemy, boto3, pyiceberg FileIO) in a bounded thread pool."""

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

    def __init__(self, limit: int = 32) -> None:
        self._limiter = CapacityLimiter(limit)

    async def run(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Call ``fn(*args, **kwargs)`` in a worker thread and return its result."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=self._limiter)
