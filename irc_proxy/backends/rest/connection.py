"""One HTTP/1.1 connection to an upstream: ``h11`` driven over an asyncio protocol.

Why not httpcore: for a forwarded ``loadTable`` the proxy spent most of its CPU in httpcore's and anyio's
layers (~700 us a request against ~150 us for h11 alone, ``benchmarks/bench_rest_passthrough.py``). Why a
protocol rather than ``asyncio.open_connection`` streams: a pooled connection must be recognised as spoiled
when the upstream wrote to it or closed it while it sat idle (a ``408`` before closing, say), and a
``StreamReader`` does not tell what it has buffered. The protocol buffers what arrives, pauses the socket
past a high-water mark and wakes the one request using the connection.

Failures are raised as httpcore would raise them, so ``RestUpstream._send_once`` keeps its meaning:
``ConnectError``/``ConnectTimeout`` before anything was sent; ``RemoteProtocolError`` for a closed, truncated
or malformed answer (more than ``MAX_INFORMATIONAL`` 1xx answers before the final one included);
``ReadError``/``WriteError`` for a reset; ``ReadTimeout``/``WriteTimeout`` when nothing moves for the request's
timeout, or the exchange passes its deadline. One of our own: ``RequestNotSent`` when h11 refuses to write the
request (nothing was sent, so the upstream cannot have acted on it).
"""

from __future__ import annotations

import asyncio
import select
import ssl
from typing import NamedTuple, cast

import h11
import httpx

_HIGH_WATER = 256 << 10
"""Bytes buffered before the socket is paused (the request reads them into h11 when it resumes)."""
_MAX_HEADERS = 100 << 10
"""Largest status line plus headers (httpcore's ``h11`` limit)."""
MAX_INFORMATIONAL = 8
"""Informational (1xx) answers accepted before the final one: each restarts the wait for the peer, so without a
bound a hostile upstream could hold a request with ``100 Continue`` forever."""


class ResponseTooLarge(httpx.TransportError):
    """The upstream's answer passed the catalog's ``max_response_mb``; the connection is dropped."""


class RequestNotSent(httpx.TransportError):
    """The request could not be written (h11 refused it: a header value HTTP does not allow, say); nothing was
    sent. Its message never names the refused value (it may be a credential)."""


class Received(NamedTuple):
    """An answer as it came: the status, the headers as sent (names in their case), the body still encoded."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    http_version: bytes
    reason: bytes

    @property
    def framed_twice(self) -> bool:
        """Framed both by ``Content-Length`` and ``Transfer-Encoding`` (see ``Connection.exchange``)."""
        names = {name.lower() for name, _ in self.headers}
        return b"transfer-encoding" in names and b"content-length" in names


class _Link(asyncio.Protocol):
    """The socket side of a connection: what arrived, whether it ended, whether writing must wait."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: list[bytes] = []
        self.buffered = 0
        self.ended = False
        self.error: Exception | None = None
        self.busy = False
        self.spoiled = False
        self.write_paused = False
        self._waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if not self.busy:
            self.spoiled = True  # nothing was asked: whatever this is, the next answer could not be told from it
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered > _HIGH_WATER and self.transport is not None:
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._wake()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        self._wake()

    def take(self) -> list[bytes]:
        """What arrived since the last call; lets the socket read again if it was paused."""
        chunks, self.chunks, self.buffered = self.chunks, [], 0
        if self.transport is not None and not self.transport.is_reading() and not self.transport.is_closing():
            self.transport.resume_reading()
        return chunks

    async def wait(self, timeout: float | None, deadline: float | None = None) -> None:
        """Until something arrives, the connection ends or writing may go on; TimeoutError after ``timeout``
        seconds, or at ``deadline`` (the loop's clock) if that comes first. One timer per wait: ``asyncio.timeout``
        around the exchange and rescheduled after every wait cost twice the timers and a few percent of a
        forwarded request's CPU."""
        loop = asyncio.get_running_loop()
        if deadline is not None:
            left = deadline - loop.time()
            if timeout is None or left < timeout:
                timeout = max(left, 0.0)
        waiter = self._waiter = loop.create_future()
        timer = None if timeout is None else loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class Connection:
    """One keep-alive HTTP/1.1 connection, used by one request at a time."""

    def __init__(self, link: _Link) -> None:
        self._link = link
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEADERS)
        self.idle_since = 0.0
        self._poll: select.poll | None = None
        """The socket registered once for ``_readable`` (a poll object per check was a few syscalls more)."""

    @classmethod
    async def open(cls, host: str, port: int, tls: ssl.SSLContext | None, timeout: float | None) -> Connection:
        """Connect (and shake hands over TLS) within ``timeout``."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                _, link = await loop.create_connection(
                    _Link, host, port, ssl=tls, server_hostname=host if tls is not None else None
                )
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"no connection to {host}:{port} within {timeout} s") from exc
        except OSError as exc:  # refused, unreachable, a certificate refused (ssl.SSLError is an OSError)
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        return cls(link)

    def reusable(self, now: float, expiry: float) -> bool:
        """Idle for less than ``expiry`` seconds, and the upstream neither wrote nor hung up meanwhile."""
        link = self._link
        if link.spoiled or link.ended or link.transport is None or link.transport.is_closing():
            return False
        if now - self.idle_since >= expiry:
            return False
        return not self._readable(link.transport)  # what the kernel knows and the loop has not read yet

    def _readable(self, transport: asyncio.Transport) -> bool:
        """Whether the socket has something to read (the upstream wrote or hung up) without reading it."""
        try:
            if self._poll is None:
                sock = transport.get_extra_info("socket")
                if sock is None:
                    return False
                if not hasattr(select, "poll"):
                    return bool(select.select([sock.fileno()], [], [], 0)[0])
                self._poll = select.poll()
                self._poll.register(sock.fileno(), select.POLLIN)
            return bool(self._poll.poll(0))
        except (OSError, ValueError):
            return True

    @property
    def closed(self) -> bool:
        transport = self._link.transport
        return transport is None or transport.is_closing() or self._link.ended

    def close(self) -> None:
        if self._link.transport is not None:
            self._link.transport.close()

    async def exchange(
        self,
        method: bytes,
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        timeout: float | None,
        limit: int,
        deadline: float | None = None,
    ) -> Received:
        """Send a request and read its whole answer; ``timeout`` bounds each wait for the peer, ``deadline`` (the
        loop's clock, None: none) the whole exchange, however the peer trickles.

        ``headers`` must frame ``body`` (``Content-Length``) and name the ``Host``; h11 validates them (a value it
        refuses is ``RequestNotSent``). On success the connection is ready for the next request, or closed if
        either side will not keep it. On any failure it is closed.
        """
        link, parser = self._link, self._h11
        try:
            out = [parser.send(h11.Request(method=method, target=target, headers=headers))]
            if body:
                out.append(parser.send(h11.Data(data=body)))
            out.append(parser.send(h11.EndOfMessage()))
        except h11.LocalProtocolError:
            self.close()  # h11 is in its error state now; nothing was written
            raise RequestNotSent("h11 refused to write the request (a header HTTP/1.1 does not allow)") from None
        link.busy = True
        writing = True
        try:
            if link.transport is None or link.transport.is_closing():
                raise httpx.WriteError("the connection was closed before the request was written")
            link.transport.write(b"".join(out))
            while link.write_paused and not link.ended:
                await link.wait(timeout, deadline)
            writing = False
            received = await self._read(parser, link, timeout, limit, deadline)
        except TimeoutError as exc:
            self.close()
            late = deadline is not None and asyncio.get_running_loop().time() >= deadline
            why = "the exchange passed its deadline (total_timeout_seconds)" if late else f"no progress in {timeout} s"
            raise (httpx.WriteTimeout if writing else httpx.ReadTimeout)(why) from exc
        except h11.RemoteProtocolError as exc:
            self.close()
            raise httpx.RemoteProtocolError(str(exc)) from exc
        except h11.LocalProtocolError as exc:
            self.close()
            raise httpx.LocalProtocolError(str(exc)) from exc
        except BaseException:
            self.close()
            raise
        finally:
            link.busy = False
        extra, _ = parser.trailing_data
        done = parser.our_state is h11.DONE and parser.their_state is h11.DONE
        if done and not extra and not link.chunks and not received.framed_twice:
            parser.start_next_cycle()
        else:
            # Connection: close, an answer that ended the connection, or one framed both by Content-Length and
            # Transfer-Encoding (RFC 9112 6.3: a sign of response splitting; something between us and the
            # upstream may have framed it the other way, so what follows on the connection is not trusted)
            self.close()
        return received

    async def _read(
        self, parser: h11.Connection, link: _Link, timeout: float | None, limit: int, deadline: float | None
    ) -> Received:
        head: h11.Response | None = None
        body: list[bytes] = []
        size, heard, informational = 0, False, 0
        if not link.chunks and not link.ended:
            await link.wait(timeout, deadline)  # nothing can be parsed before the answer starts arriving
        while True:
            if link.chunks:  # fed before asking h11, which spares it a call that could only answer NEED_DATA
                heard = True
                for chunk in link.take():
                    parser.receive_data(chunk)
            event = parser.next_event()
            if event is h11.NEED_DATA:
                if link.ended and not link.chunks:
                    if not heard:
                        if isinstance(link.error, OSError):
                            raise httpx.ReadError(str(link.error)) from link.error
                        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
                    parser.receive_data(b"")  # h11 tells a complete close-delimited body from a truncated one
                elif not link.chunks:
                    await link.wait(timeout, deadline)
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > limit:
                    raise ResponseTooLarge(f"the answer is larger than {limit} bytes")
                body.append(bytes(event.data))
            elif isinstance(event, h11.Response):
                head = event
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None  # h11 orders the events
                raw = head.headers.raw_items()
                return Received(head.status_code, raw, b"".join(body), head.http_version, head.reason)
            elif isinstance(event, h11.ConnectionClosed):
                raise httpx.RemoteProtocolError("Server disconnected without sending a complete response.")
            elif event is h11.PAUSED:  # cannot come before EndOfMessage; never spin on it
                raise httpx.RemoteProtocolError("the answer ended in an unexpected state")
            elif isinstance(event, h11.InformationalResponse):  # a 1xx: the final answer follows, within a bound
                informational += 1
                if informational > MAX_INFORMATIONAL:
                    raise httpx.RemoteProtocolError(f"more than {MAX_INFORMATIONAL} informational (1xx) answers")
