"""One HTTP/1.1 connection to an upstream over an asyncio protocol: the plain exchange in bytes (``wire``),
anything else through ``h11``.

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

from irc_proxy import h11_linear
from irc_proxy.backends.rest import wire

h11_linear.install()  # the fallback reader gets a hostile upstream's odd heads: no quadratic regex on them

_HIGH_WATER = 256 << 10
"""Bytes buffered before the socket is paused (the request reads them into h11 when it resumes)."""
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


def _put_back(link: _Link, chunks: list[bytes]) -> None:
    """``chunks`` (taken from ``link``, in order) in front of what arrived since, for h11 to read."""
    link.chunks[:0] = chunks
    link.buffered += sum(len(chunk) for chunk in chunks)


def _h11_parser() -> h11.Connection:
    return h11.Connection(h11.CLIENT, max_incomplete_event_size=wire.MAX_HEAD)


def _h11_request(
    parser: h11.Connection, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes
) -> bytes:
    """The request written by h11 (raises h11.LocalProtocolError when it refuses to)."""
    out = [parser.send(h11.Request(method=method, target=target, headers=headers))]
    if body:
        out.append(parser.send(h11.Data(data=body)))
    out.append(parser.send(h11.EndOfMessage()))
    return b"".join(b for b in out if b)


def _body(chunks: list[bytes], start: int, end: int) -> bytes:
    """Bytes ``start:end`` of the ``chunks`` put end to end, copied once. Why: joining the chunks and then slicing
    the body out held the answer three times at the peak (a hostile remote's answer of ``max_response_mb`` cost
    three times that in memory, h11's path two)."""
    if len(chunks) == 1:
        return chunks[0][start:end]
    parts, offset = [], 0
    for chunk in chunks:  # bytes past ``end`` may span several chunks (they close the connection)
        low, high = max(start - offset, 0), min(end - offset, len(chunk))
        if low < high:
            parts.append(memoryview(chunk)[low:high])
        offset += len(chunk)
    return b"".join(parts)


def _bounded_head(parser: h11.Connection, fed: int, read: int) -> int:
    """Where the head h11 just read ends in the ``fed`` bytes (``read``: where the one before it ended); raises when
    it is larger than ``wire.MAX_HEAD``. Why: h11's ``max_incomplete_event_size`` bounds only a head still
    incomplete, and one that arrived whole (the socket reads up to 256 KiB before pausing) was read at any size."""
    end = fed - len(parser.trailing_data[0])  # a copy of what h11 has not read yet: once a head, on h11's path
    if end - read > wire.MAX_HEAD + 4:
        raise httpx.RemoteProtocolError(f"the answer's head is larger than {wire.MAX_HEAD} bytes")
    return end


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class Connection:
    """One keep-alive HTTP/1.1 connection, used by one request at a time."""

    def __init__(self, link: _Link) -> None:
        self._link = link
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

        ``headers`` must frame ``body`` (``Content-Length``) and name the ``Host``; a value h11 would refuse is
        ``RequestNotSent``. The plain shape of an exchange is written and read by ``wire``, anything else by h11
        (see ``wire``). On success the connection is ready for the next request, or closed if either side will not
        keep it. On any failure it is closed.
        """
        link = self._link
        parser: h11.Connection | None = None
        request = wire.request_bytes(method, target, headers, body)
        if request is None:
            parser = _h11_parser()
            try:
                request = _h11_request(parser, method, target, headers, body)
            except h11.LocalProtocolError:
                self.close()  # nothing was written
                raise RequestNotSent("h11 refused to write the request (a header HTTP/1.1 does not allow)") from None
        link.busy = True
        writing = True
        try:
            if link.transport is None or link.transport.is_closing():
                raise httpx.WriteError("the connection was closed before the request was written")
            link.transport.write(request)
            while link.write_paused and not link.ended:
                await link.wait(timeout, deadline)
            writing = False
            read = None if parser is not None else await self._read_plain(method, link, timeout, limit, deadline)
            if read is None:  # not the plain shape: h11 reads it all, from the first byte
                if parser is None:
                    parser = _h11_parser()
                    _h11_request(parser, method, target, headers, body)  # h11 as if it had written it
                read = await self._read_h11(parser, link, timeout, limit, deadline)
            received, keep = read
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
        if not keep or link.chunks:  # bytes past the answer: what follows on the connection is not trusted
            self.close()
        return received

    async def _read_plain(
        self, method: bytes, link: _Link, timeout: float | None, limit: int, deadline: float | None
    ) -> tuple[Received, bool] | None:
        """The answer and whether the connection may be kept, when ``wire`` reads it: its head complete in what
        arrived first, its body framed by ``Content-Length``, the connection not ended before the body did. None
        otherwise, with every byte taken put back for h11 (which reads a trickled head, and tells a truncated
        answer with its own error)."""
        while not link.chunks:
            if link.ended:
                return None
            await link.wait(timeout, deadline)
        taken = link.take()
        data = taken[0] if len(taken) == 1 else b"".join(taken)
        head = wire.read_head(data, method, limit)
        if head is None:
            _put_back(link, [data])
            return None
        end = head.start + head.length
        chunks, size = [data], len(data)
        while size < end:
            if link.chunks:
                for chunk in link.take():
                    chunks.append(chunk)
                    size += len(chunk)
            elif link.ended:
                _put_back(link, chunks)
                return None
            else:
                await link.wait(timeout, deadline)
        received = Received(head.status, head.headers, _body(chunks, head.start, end), b"1.1", head.reason)
        return received, head.keep_alive and size == end

    async def _read_h11(
        self, parser: h11.Connection, link: _Link, timeout: float | None, limit: int, deadline: float | None
    ) -> tuple[Received, bool]:
        """The answer read by h11, and whether the connection may be kept. Not kept: ``Connection: close``, an
        answer that ended the connection, or one framed both by Content-Length and Transfer-Encoding (RFC 9112
        6.3: a sign of response splitting; something between us and the upstream may have framed it the other
        way, so what follows on the connection is not trusted)."""
        received = await self._read(parser, link, timeout, limit, deadline)
        extra, _ = parser.trailing_data
        done = parser.our_state is h11.DONE and parser.their_state is h11.DONE
        return received, done and not extra and not received.framed_twice

    async def _read(
        self, parser: h11.Connection, link: _Link, timeout: float | None, limit: int, deadline: float | None
    ) -> Received:
        head: h11.Response | None = None
        body: list[bytes] = []
        size, heard, informational = 0, False, 0
        fed = read = 0  # bytes given to h11; bytes of it h11 had read up to the end of the last head
        if not link.chunks and not link.ended:
            await link.wait(timeout, deadline)  # nothing can be parsed before the answer starts arriving
        while True:
            if link.chunks:  # fed before asking h11, which spares it a call that could only answer NEED_DATA
                heard = True
                for chunk in link.take():
                    fed += len(chunk)
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
                read = _bounded_head(parser, fed, read)
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
                read = _bounded_head(parser, fed, read)
                informational += 1
                if informational > MAX_INFORMATIONAL:
                    raise httpx.RemoteProtocolError(f"more than {MAX_INFORMATIONAL} informational (1xx) answers")
