"""hypercorn's keep-alive timeout with one timer per connection instead of two tasks and a timer per request.

Why: hypercorn 0.18's asyncio ``TCPServer`` keeps an idle task per connection (an ``AsyncioSingleTask`` running
``_idle_timeout``: ``wait_for(context.terminated.wait(), keep_alive_timeout)``, then close). Every request stops
it (cancel the task, await it) and every answer restarts it (a new task, which ``wait_for`` wraps in another task
and a timer), each under a lock: on a bare hypercorn app that was ~20-35 us of the ~140 us a keep-alive request
costs the server. :class:`IdleTimer` stands in for that ``SingleTask`` (``restart`` when the connection goes
idle, ``stop`` when a request starts) and only notes *when* the connection went idle; no task runs while the
connection lives. Its close starts on whichever comes first:

* the keep-alive deadline: one timer, armed when the connection goes idle with none armed, checks the note
  lazily when it fires (idle since long enough: close; busy: disarm; idle since later: re-arm for that);
* the worker's graceful shutdown (``context.terminated``): idle connections close at once, a busy one as soon as
  its answer is sent, as with hypercorn's ``wait_for``. One task per worker waits for it (:class:`_Idle`).

The close itself is hypercorn's (``TCPServer._initiate_server_close``, shielded as hypercorn shields it), run as a
task of the connection's task group, made only then. Where hypercorn's task group waited for its idle task (a
connection whose read loop ended while idle lasts until its keep-alive), ``held`` waits the same way, but only
after a read timeout (``read_timeout.TimedReadTCPServer._read_data``: a connection its client closed or reset ends at
once); ``end``,
when the connection closes, cancels the timer as hypercorn's ``stop`` cancelled its task.
``tests/unit/http/test_read_timeout.py`` runs hypercorn's server and this one side by side over real sockets
and pins the source of what is replaced.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from hypercorn.asyncio.worker_context import WorkerContext

EARLY = 0.001
"""How early a timer may fire and still count as the deadline (uvloop's timers have millisecond steps)."""


class _Idle:
    """One worker's idle connections, all woken when the worker shuts down gracefully (one task per worker)."""

    def __init__(self, context: WorkerContext) -> None:
        self.timers: set[IdleTimer] = set()
        self.task = asyncio.get_running_loop().create_task(self._close_at_shutdown(context))

    async def _close_at_shutdown(self, context: WorkerContext) -> None:
        await context.terminated.wait()
        for timer in list(self.timers):
            timer.expire()


_WORKERS: weakref.WeakKeyDictionary[WorkerContext, _Idle] = weakref.WeakKeyDictionary()


class IdleTimer:
    """A connection's keep-alive timer, in the place of hypercorn's ``idle_task`` (its ``SingleTask`` methods)."""

    __slots__ = (
        "_close",
        "_closing",
        "_context",
        "_ended",
        "_group",
        "_handle",
        "_idle",
        "_loop",
        "_released",
        "_since",
        "_timeout",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        context: WorkerContext,
        timeout: float,
        close: Callable[[], Awaitable[None]],
    ) -> None:
        self._loop, self._context, self._timeout, self._close = loop, context, timeout, close
        self._since: float | None = None
        """Loop time the connection went idle; None while a request runs."""
        self._handle: asyncio.TimerHandle | None = None
        self._group: asyncio.TaskGroup | None = None
        self._idle: _Idle | None = None
        self._closing = self._ended = False
        self._released: asyncio.Future[None] | None = None
        """What ``held`` waits on, while the connection is idle after its read loop ended."""

    async def restart(self, task_group: Any, action: Callable[..., Any]) -> None:
        """The connection is idle from now (hypercorn's ``action``, its ``_idle_timeout``, is not run: the timer
        does what it did)."""
        if self._ended:
            return
        self._since = self._loop.time()
        if self._idle is None:  # the first time
            self._group = task_group._task_group
            self._idle = _WORKERS.get(self._context) or _WORKERS.setdefault(self._context, _Idle(self._context))
        if self._context.terminated.is_set():
            self.expire()
            return
        self._idle.timers.add(self)
        if self._handle is None:
            self._handle = self._loop.call_at(self._since + self._timeout, self._check)

    async def stop(self) -> None:
        """A request started (or the connection is closing): not idle."""
        self._since = None
        if self._idle is not None:
            self._idle.timers.discard(self)

    async def held(self) -> None:
        """Wait, if the connection is idle, until the keep-alive closes it: hypercorn's task group waited for its
        idle task the same way once the read loop had ended (a silent connection lasts until its keep-alive).
        Not once the close has begun: the group waits for that task itself, and nothing would release a wait
        begun after it (a close whose unsent bytes held the read loop's end back past it: the connection's
        task then waited for ever, and a graceful shutdown its whole timeout)."""
        if self._since is not None and not self._ended and not self._closing:
            self._released = self._loop.create_future()
            await self._released

    async def end(self) -> None:
        """The connection closed: nothing left to time (as hypercorn's ``stop`` cancelled its idle task)."""
        self._ended = True
        await self.stop()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._release()

    def expire(self) -> None:
        """Close the connection now (it is idle, and its keep-alive ended or the worker shuts down), once."""
        if self._closing or self._ended or self._group is None:
            return
        close = self._close_connection()
        try:
            self._group.create_task(close)
        except RuntimeError:  # the group is finished or aborting: the connection is ending, and closes itself
            close.close()
            return
        self._closing = True

    def _check(self) -> None:
        self._handle = None
        since = self._since
        if since is None or self._ended:  # busy: re-armed when the connection goes idle again
            return
        due = since + self._timeout
        if due <= self._loop.time() + EARLY:
            self.expire()
        else:
            self._handle = self._loop.call_at(due, self._check)

    async def _close_connection(self) -> None:
        try:
            await asyncio.shield(self._close())
        finally:
            self._release()

    def _release(self) -> None:
        if self._released is not None and not self._released.done():
            self._released.set_result(None)
