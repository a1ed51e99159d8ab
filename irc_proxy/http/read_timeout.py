"""hypercorn's read timeout with one timer per connection instead of a task and a timer per socket read.

Why: with ``config.read_timeout`` set (``server.read_timeout_seconds``), hypercorn 0.18's asyncio
``TCPServer._read_data`` wraps every ``reader.read`` in ``asyncio.wait_for``; on Python 3.11 that is a new
task and a timer for each read, about as much event-loop work as the rest of a warm loadTable's transport.
hypercorn has no setting or hook for the read loop, so :func:`install` swaps the ``TCPServer`` name that
``hypercorn.asyncio.run`` builds each connection with for :class:`TimedReadTCPServer`, whose read loop only
notes when each read starts. One timer per connection, armed when the connection's first read starts,
checks that note lazily when it fires: if a read has been waiting for ``read_timeout`` seconds, the read
fails with ``TimeoutError`` (through ``StreamReader.set_exception``) and the connection closes exactly as
hypercorn's own loop closes it; otherwise the timer re-arms for the running read's deadline (or a full
timeout ahead, while the data just read is being handled). Same guarantee, same deadline: a read that gets
no byte for ``read_timeout`` seconds ends the connection (the slowloris protection), a client that keeps
sending is never cut. The same class also swaps hypercorn's keep-alive task, restarted on every request, for
``keep_alive.IdleTimer`` (same deadline, same close, same graceful shutdown).

The swap is guarded: :func:`install` leaves hypercorn's loop in place (and logs why) unless hypercorn's
version is one this module was checked against and the names it replaces are where it expects them;
``tests/unit/http/test_read_timeout.py`` pins the source of the replaced method, so a hypercorn upgrade
fails that test instead of silently changing the read loop.
"""

from __future__ import annotations

import asyncio
import logging
from ssl import SSLError
from typing import Any

from hypercorn.asyncio import run as hypercorn_run
from hypercorn.asyncio.tcp_server import MAX_RECV, TCPServer
from hypercorn.events import Closed, RawData

from irc_proxy.http.keep_alive import IdleTimer

log = logging.getLogger("irc_proxy")

CHECKED_VERSIONS = ("0.18.0",)
"""hypercorn versions whose ``TCPServer._read_data`` this module's loop reproduces (see the unit test)."""

EARLY = 0.001
"""How early a timer may fire and still count as the deadline (uvloop's timers have millisecond steps)."""


class ReadWatch:
    """The per-connection timer: ``started`` is the loop time the running read began (None between reads)."""

    __slots__ = ("handle", "loop", "reader", "started", "timeout")

    def __init__(self, loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, timeout: float) -> None:
        self.loop = loop
        self.reader = reader
        self.timeout = timeout
        self.started: float | None = loop.time()
        self.handle: asyncio.TimerHandle | None = loop.call_at(self.started + timeout, self.check)

    def check(self) -> None:
        """Fail the waiting read if its deadline has come; else wait for the earliest deadline still possible."""
        now = self.loop.time()
        started = self.started
        if started is None:  # the data just read is being handled: the next read starts no earlier than now
            due = now + self.timeout
        else:
            due = started + self.timeout
            if due <= now + EARLY:
                self.handle = None
                self.reader.set_exception(TimeoutError("no data within the read timeout"))
                return
        self.handle = self.loop.call_at(due, self.check)

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


class TimedReadTCPServer(TCPServer):
    """hypercorn's ``TCPServer`` with :class:`ReadWatch` in place of a ``wait_for`` around each read, and
    ``keep_alive.IdleTimer`` in place of its idle task restarted on every request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.idle_task = IdleTimer(  # type: ignore[assignment]  # hypercorn types it AsyncioSingleTask
            self.loop, self.context, self.config.keep_alive_timeout, self._initiate_server_close
        )

    async def _close(self) -> None:
        await self.idle_task.stop()  # from now on the timer closes nothing (the close below may wait)
        try:
            await super()._close()
        finally:
            await self.idle_task.end()  # type: ignore[attr-defined]

    async def _read_data(self) -> None:
        timeout = self.config.read_timeout
        if timeout is None:  # hypercorn's loop has no timer then either
            await super()._read_data()
        else:
            await self._timed_reads(timeout)
        await self.idle_task.held()  # type: ignore[attr-defined]

    async def _timed_reads(self, timeout: float) -> None:
        reader = self.reader
        loop = self.loop
        watch = ReadWatch(loop, reader, timeout)
        try:
            while not reader.at_eof():
                watch.started = loop.time()
                try:
                    data = await reader.read(MAX_RECV)
                except (ConnectionError, OSError, TimeoutError, SSLError) as error:
                    if reader.exception() is error and isinstance(error, TimeoutError):
                        # the timer's: off the reader, where StreamWriter.drain would raise it into the app's
                        # writes (hypercorn's wait_for leaves the reader alone; the connection ends the same way)
                        reader._exception = None  # type: ignore[attr-defined]  # no public way to clear it
                    break
                watch.started = None
                await self.protocol.handle(RawData(data))
        finally:
            watch.cancel()
        await self.protocol.handle(Closed())


def install() -> bool:
    """Make hypercorn's asyncio server build :class:`TimedReadTCPServer` connections; False (logged) when
    this hypercorn is not one the swap was checked against, which keeps hypercorn's own read loop."""
    from importlib.metadata import version

    problem = ""
    found = version("hypercorn")
    current = getattr(hypercorn_run, "TCPServer", None)
    if found not in CHECKED_VERSIONS:
        problem = f"hypercorn {found} is not one of {', '.join(CHECKED_VERSIONS)}"
    elif current not in (TCPServer, TimedReadTCPServer) or not callable(getattr(TCPServer, "_read_data", None)):
        problem = "hypercorn.asyncio.run no longer builds connections with hypercorn's TCPServer"
    if problem:
        log.warning("keeping hypercorn's read loop (a task per socket read): %s", problem)
        return False
    hypercorn_run.TCPServer = TimedReadTCPServer  # type: ignore[attr-defined]  # not exported by hypercorn
    return True
