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
import contextlib
import logging
import math
import time
from ssl import SSLError
from typing import Any

from hypercorn.asyncio import run as hypercorn_run
from hypercorn.asyncio.tcp_server import MAX_RECV, TCPServer
from hypercorn.events import Closed, Event, RawData
from hypercorn.protocol.h2 import H2Protocol
from hypercorn.protocol.h11 import H2CProtocolRequiredError

from irc_proxy.http import h2_stall
from irc_proxy.http.keep_alive import IdleTimer

log = logging.getLogger("irc_proxy")

CHECKED_VERSIONS = ("0.18.0",)
"""hypercorn versions whose ``TCPServer._read_data`` this module's loop reproduces (see the unit test)."""

EARLY = 0.001
REFUSAL_LOG_SECONDS = 60.0
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
    ``keep_alive.IdleTimer`` in place of its idle task restarted on every request; plus two bounds hypercorn does
    not have (``install`` sets them from the settings):

    - ``write_timeout``: a connection whose client takes no byte of its answer for this long (it stopped reading)
      ends, the unsent rest dropped. hypercorn waits for ever: each such client held its connection, its request's
      task and the unsent answer (up to the largest answer the server makes) for as long as it liked.
    - ``max_connections``: connections of this process past it are closed at once, before anything is read, so a
      flood of connections costs a bounded number of tasks and descriptors (it would otherwise run the process out
      of file descriptors, and every client with it).
    """

    write_timeout: float | None = None
    max_connections: int | None = None
    open_connections = 0
    """This process's connections now (all of them: hypercorn runs one event loop per worker process)."""
    _refused = 0
    _h2_watch: asyncio.TimerHandle | None = None
    """An h2 connection's timer for ``h2_stall`` (set on its first send)."""
    _refusal_logged = -math.inf

    async def run(self) -> None:
        cls = TimedReadTCPServer
        if cls.max_connections is not None and cls.open_connections >= cls.max_connections:
            cls._refuse(self.writer)
            return
        cls.open_connections += 1
        try:
            await super().run()
        finally:
            cls.open_connections -= 1

    @classmethod
    def _refuse(cls, writer: asyncio.StreamWriter) -> None:
        writer.transport.abort()
        cls._refused += 1
        now = time.monotonic()
        if now - cls._refusal_logged >= REFUSAL_LOG_SECONDS:  # one line a minute, however many are refused
            log.warning(
                "refused %d connection(s): this process holds server.max_connections (%d) already",
                cls._refused,
                cls.max_connections,
            )
            cls._refused, cls._refusal_logged = 0, now

    async def protocol_send(self, event: Event) -> None:
        timeout = self.write_timeout
        if timeout is None or not isinstance(event, RawData):
            await super().protocol_send(event)
            return
        if self._h2_watch is None and isinstance(getattr(self.protocol, "protocol", None), H2Protocol):
            self._h2_watch = self.loop.call_later(timeout, self._check_h2, timeout)  # h2: answers wait per stream
        async with self.send_lock:  # hypercorn's send, with a deadline on the wait for the client to read
            transport = self.writer.transport
            try:
                self.writer.write(event.data)
                if transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]:
                    await self._drain_while_taken(transport, timeout)  # a task only when it must wait
                else:
                    await self.writer.drain()
            except TimeoutError:
                transport.abort()  # what is unsent is dropped: the client is not reading it
                await self.protocol.handle(Closed())
            except (ConnectionError, RuntimeError):
                await self.protocol.handle(Closed())

    async def _drain_while_taken(self, transport: asyncio.WriteTransport, timeout: float) -> None:
        """Wait for the transport to drain while the client takes bytes: TimeoutError once it took none for
        ``timeout`` seconds (the read timeout's rule, on the other side: a slow reader is never cut)."""
        drain = asyncio.ensure_future(self.writer.drain())
        if not await _while_taken(transport, drain, timeout):
            raise TimeoutError("the client took no byte of its answer within the write timeout")
        drain.result()

    def _check_h2(self, timeout: float) -> None:
        """Every ``write_timeout`` while an h2 connection lives: reset its streams whose client took no byte of
        the answer for that long (``h2_stall``; a stream is cut between one and two timeouts after its last byte
        taken)."""
        self._h2_watch = None
        protocol = getattr(self.protocol, "protocol", None)
        if not isinstance(protocol, H2Protocol) or protocol.closed:
            return
        if stream_ids := h2_stall.stalled(protocol, timeout):
            try:
                self._task_group.spawn(h2_stall.reset, protocol, stream_ids)
            except RuntimeError:  # the connection's task group is ending: so are its streams
                return
        self._h2_watch = self.loop.call_later(timeout, self._check_h2, timeout)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.idle_task = IdleTimer(  # type: ignore[assignment]  # hypercorn types it AsyncioSingleTask
            self.loop, self.context, self.config.keep_alive_timeout, self._initiate_server_close
        )

    async def _close(self) -> None:
        await self.idle_task.stop()  # from now on the timer closes nothing (the close below may wait)
        if self._h2_watch is not None:
            self._h2_watch.cancel()
        try:
            if self.write_timeout is not None and self.writer.transport.get_write_buffer_size():
                await self._flush_while_taken(self.write_timeout)
            await super()._close()
        finally:
            await self.idle_task.end()  # type: ignore[attr-defined]

    async def _flush_while_taken(self, timeout: float) -> None:
        """Close with the write timeout's rule on the unsent tail: hypercorn's close waits for the transport to send
        it, for ever when the client reads nothing. An answer's tail below the high-water mark never waited in
        ``protocol_send`` (no drain was needed), so without this a client that asked for a few dozen KiB (or
        pipelined small requests) and read none of it held its connection, and a place under ``max_connections``,
        for as long as it liked: past the keep-alive, the read timeout and a graceful shutdown's wait."""
        transport = self.writer.transport
        with contextlib.suppress(NotImplementedError, OSError, RuntimeError):
            self.writer.write_eof()  # as hypercorn's close: the client learns the answer ends here
        self.writer.close()  # the transport closes once its buffer is sent
        closed = asyncio.ensure_future(self.writer.wait_closed())
        if not await _while_taken(transport, closed, timeout):
            transport.abort()  # the client took no byte of the tail for a whole write timeout
            return
        with contextlib.suppress(Exception):  # what hypercorn's close then meets again and ignores
            closed.result()

    async def _read_data(self) -> None:
        timeout = self.config.read_timeout
        if timeout is None:  # hypercorn's loop has no timer then either
            await super()._read_data()
        else:
            await self._timed_reads(timeout)
        await self._release_h2_answers()
        if not self._client_left():
            await self.idle_task.held()  # type: ignore[attr-defined]

    async def _release_h2_answers(self) -> None:
        """Wake the HTTP/2 answers still waiting to be sent, now that the connection is closed (the read loop has
        just handed ``Closed`` to the protocol, and hypercorn's h2 sender has stopped).

        hypercorn 0.18's ``H2Protocol`` leaves them waiting: an app's ``send`` blocked on a stream's buffer (full,
        or its end waiting to drain) is woken only by the sender, which ends at the close. A stream waits there as
        long as the client's flow-control window is shut, which an h2c client can make it from the start
        (``SETTINGS_INITIAL_WINDOW_SIZE`` 0): 100 streams (h2's concurrency limit) then a close or reset, and the
        server kept 100 app tasks and their answers, and the connection's task and its place under
        ``max_connections``, for as long as the worker ran (a graceful shutdown cancelled them after its timeout).
        Closing the buffers is what hypercorn itself does to a stream closed while blocked on flow control: the
        app's ``send`` returns, its next one is dropped, and the app ends."""
        inner = getattr(self.protocol, "protocol", None)
        if isinstance(inner, H2Protocol):
            for buffer in list(inner.stream_buffers.values()):
                await buffer.close()

    def _client_left(self) -> bool:
        """Whether the read loop ended because the client closed or reset the connection (not a read timeout).

        hypercorn's task group waited for its idle task even then: a connection its client had closed while idle
        was held (its socket, its task, its place under ``max_connections``) until the keep-alive ended. That made
        filling the cap nearly free: ``max_connections / keep_alive_timeout`` connect-and-close a second (10,000 /
        30 s: 333 a second, with no descriptor held by the client) refused every other client of the worker. Such
        a connection has nothing left to answer (a request in flight holds the connection through its task, not
        through this wait; a tail still unsent is flushed by ``_close`` under the write timeout), so it ends now.
        """
        reader = self.reader
        if reader.at_eof():
            return True
        error = reader.exception()
        return error is not None and not isinstance(error, TimeoutError)

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
                try:
                    await self.protocol.handle(RawData(data))
                except Exception as error:
                    if not _failed_upgrade(error):
                        raise
                    break  # the connection closes, as for a client that sent nothing more
        finally:
            watch.cancel()
        await self.protocol.handle(Closed())


def _failed_upgrade(error: Exception) -> bool:
    """Whether ``error`` is hypercorn's h2c upgrade failing on the client's ``HTTP2-Settings`` header (not base64,
    a truncated SETTINGS body, a value out of range: ``binascii.Error``, hyperframe's ``InvalidFrameError``, h2's
    ``InvalidSettingsValueError``), raised while hypercorn handles its ``H2CProtocolRequiredError``.

    hypercorn 0.18 sends the ``101`` and then parses the header with nothing to catch what h2 raises: the error
    ended the connection's task, and asyncio logged it as an ERROR with a ~3 KB traceback ("Unhandled exception in
    client_connected_cb"), at once and for any anonymous client: a log flood one request a connection. The
    connection closed all the same (hypercorn's ``finally``); now it closes without the traceback."""
    context = error.__context__
    for _ in range(8):  # hyperframe chains its own cause in between; a few links are plenty
        if context is None or isinstance(context, H2CProtocolRequiredError):
            break
        context = context.__context__
    return isinstance(context, H2CProtocolRequiredError)


async def _while_taken(transport: asyncio.WriteTransport, pending: asyncio.Future[Any], timeout: float) -> bool:
    """Wait for ``pending`` (a drain, a close) while the client takes bytes of what the transport holds: True once
    it is done, False (it is cancelled) once the client took none for a whole ``timeout``."""
    try:
        while True:
            unsent = transport.get_write_buffer_size()
            done, _ = await asyncio.wait({pending}, timeout=timeout)
            if done:
                return True
            if transport.get_write_buffer_size() >= unsent:
                return False
    finally:
        pending.cancel()  # nothing once it is done


def install(write_timeout: float | None = None, max_connections: int | None = None) -> bool:
    """Make hypercorn's asyncio server build :class:`TimedReadTCPServer` connections, with ``write_timeout`` and
    ``max_connections`` (None: unbounded, as hypercorn); False (logged) when this hypercorn is not one the swap was
    checked against, which keeps hypercorn's own read loop (and neither bound)."""
    from importlib.metadata import version

    TimedReadTCPServer.write_timeout, TimedReadTCPServer.max_connections = write_timeout, max_connections

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
    h2_stall.install()  # h2 answers under the write timeout too
    return True
