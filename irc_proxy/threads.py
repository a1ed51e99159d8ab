"""The one pool for blocking work (SQLAlchemy, boto3, pyiceberg FileIO, password hashing).

``app.py`` builds one :class:`ThreadRunner` and hands it to everything that blocks. A component
that must also bound its own concurrency (Glue's ``max_concurrency``, the password-hash gate) takes
``runner.limited(n)``: the same pool, with a second bound of ``n`` on top.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter

log = logging.getLogger("irc_proxy")
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


_IMPORTING: set[str] = set()
"""Modules :func:`warm_imports` was asked for (each imported at most once on its thread)."""


def warm_imports(*modules: str) -> threading.Thread | None:
    """Import ``modules`` now on a daemon thread of their own, the first time they are asked for; the thread
    (started), or None when every one of them was asked for before (a set lookup: cheap on a hot path).

    Why: a module first imported while a request is served is imported on whatever thread asks, the event loop
    included, and holds the GIL meanwhile. ``pyiceberg.io.pyarrow`` (and pyarrow behind it) takes ~0.2-0.3 s of
    CPU: the first scan plan after a start paid it in its answer. The first loadTable warms it (a client that
    loads a table plans, reads or commits next); the start itself still imports none of it
    (``tests/unit/test_import_cost.py``). A module that fails to import fails again where it is used, with that
    caller's error."""
    if _IMPORTING.issuperset(modules):  # every loadTable asks: no list built on that path
        return None
    wanted = [name for name in modules if name not in _IMPORTING]
    _IMPORTING.update(wanted)

    def run() -> None:
        for name in wanted:
            try:
                importlib.import_module(name)
            except Exception:  # reported by the import that needs it
                log.debug("background import of %s failed", name, exc_info=True)

    thread = threading.Thread(target=run, name="irc-proxy-imports", daemon=True)
    thread.start()
    return thread
