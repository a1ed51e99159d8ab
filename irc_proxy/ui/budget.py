"""A console page's time budget (``server.ui_page_budget_seconds``): what is slow to build runs in a worker
thread and stops at a deadline.

A thread cannot be cancelled, so the work checks a :class:`Deadline` itself (between schema fields, schemas,
diff hunks) and raises :class:`PageTooCostly` past it; every list a page shows is a window of bounded size
(``ui.windows``), so the template is bounded too. At most ``RENDERERS`` pages build at once in each process,
beside the pool's other work: a flood of heavy pages waits for a slot (within the budget, then 503) instead
of taking every worker thread from the REST API. One principal builds one page at a time: its own flood
waits for its own turn, so it holds one slot at most and everyone else's pages keep building. Pure Python
releases the interpreter lock every few milliseconds, so the event loop keeps answering (``/healthz``)
while a page builds.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar
from weakref import WeakKeyDictionary

import anyio
from starlette.requests import Request

from irc_proxy.errors import ServiceUnavailable
from irc_proxy.http import parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.threads import ThreadRunner

R = TypeVar("R")
RENDERERS = 2
"""Console pages built at once per process (the machines have few cores; the REST API keeps the rest)."""
_RUNNERS: WeakKeyDictionary[ThreadRunner, ThreadRunner] = WeakKeyDictionary()
_DEADLINE = "irc_proxy.ui.deadline"


class PageTooCostly(ServiceUnavailable):
    """A console page took longer than its budget to build: answered 503 with an error page."""


@dataclass(frozen=True)
class Deadline:
    """When a page's work must stop (``time.monotonic``)."""

    at: float
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def check(self) -> None:
        """Raise PageTooCostly once the deadline has passed. Called every millisecond or so of work, it also
        hands the interpreter lock over (``sleep(0)``): the event loop then waits for it about that long
        instead of the interpreter's 5 ms switch interval at each of its many lock acquisitions per request."""
        time.sleep(0)
        if time.monotonic() > self.at:
            raise PageTooCostly(
                f"This page takes longer than {self.seconds:g} s to build (server.ui_page_budget_seconds): "
                "open a smaller part of it (the lists' 'more' links) or use the REST API"
            )


class _Turns:
    """A principal's turn to build a page: a lock and how many of its pages hold or wait for it."""

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0


_TURNS: dict[str, _Turns] = {}
"""Principals with a page building or waiting (an entry goes when its last page does)."""


@asynccontextmanager
async def _one_at_a_time(principal: str) -> AsyncIterator[None]:
    """One page at a time per principal: a principal opening many heavy pages at once waits for its own
    turn, so it holds at most one of the ``RENDERERS`` slots and other people's pages still build."""
    turns = _TURNS.setdefault(principal, _Turns())
    turns.users += 1
    try:
        async with turns.lock:
            yield
    finally:
        turns.users -= 1
        if not turns.users:
            del _TURNS[principal]


def _who(request: Request) -> str:
    """Whose turn a page takes: its principal (``auth.mode = "none"``: everyone is anonymous, so by address)."""
    principal = str(parsing.context(request).principal)
    if principal == "anonymous" and request.client is not None:
        return f"anonymous@{request.client.host}"
    return principal


@asynccontextmanager
async def turn(request: Request) -> AsyncIterator[None]:
    """The caller's turn, for costly work that runs on the event loop rather than in a slot (the console's search:
    many small listing queries): one principal runs one such page at a time, as it builds one page at a time."""
    async with _one_at_a_time(_who(request)):
        yield


def deadline(request: Request) -> Deadline:
    """The request's deadline, started the first time it is asked for."""
    found: Deadline | None = request.scope.get(_DEADLINE)
    if found is None:
        found = request.scope[_DEADLINE] = Deadline.after(app_state(request).settings.server.ui_page_budget_seconds)
    return found


async def run(request: Request, fn: Callable[[Deadline], R]) -> R:
    """``fn(deadline)`` in one of the console's worker slots; PageTooCostly when no slot frees up in time or
    ``fn`` overruns (``fn`` checks the deadline; the wait for a slot is cancelled at it)."""
    due = deadline(request)
    threads = app_state(request).threads
    runner = _RUNNERS.get(threads)
    if runner is None:
        runner = _RUNNERS[threads] = threads.limited(RENDERERS)
    with anyio.move_on_after(due.left()):
        async with _one_at_a_time(_who(request)):
            return await runner.run(fn, due)
    due.check()
    raise PageTooCostly(
        f"The console is busy: no page could be built within {due.seconds:g} s (server.ui_page_budget_seconds); "
        "try again"
    )
