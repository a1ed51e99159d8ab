"""``LeanTransport``: pooled ``h11`` connections (``connection.py``), called directly (``exchange``: bytes in,
``Received`` out) or through httpx's transport seam (``handle_async_request``, what tests drive).

It speaks HTTP/1.1 only, to any origin, without proxies: ``RestUpstream`` uses it when HTTP/2 cannot apply
(``http2 = false``, or a plain ``http://`` upstream) and no HTTP proxy comes from the environment, and httpx's
own transport otherwise. Each origin has a pool of at most ``pool_size`` connections; an idle one is kept for
``keepalive_expiry`` seconds and reused only when the last exchange left both sides done. A request that finds
every connection busy waits for one at most the request's ``pool`` timeout (then ``httpx.PoolTimeout``, as
httpcore). Timeouts come with the request (``Timeouts``; through the seam, ``AsyncClient``'s ``httpx.Timeout``):
``connect`` for connecting, ``read`` for every wait for the peer, ``total`` for the whole exchange (the pool wait,
connecting, writing and reading end by then: a peer that sends one byte just before each ``read`` timeout cannot
hold a request longer). The answer is read whole, at most ``max_response_bytes`` of it (``ResponseTooLarge`` past that).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque
from typing import NamedTuple

import httpx

from irc_proxy.backends.rest.connection import Connection, Received, ResponseTooLarge

__all__ = ["LeanTransport", "Origin", "Received", "ResponseTooLarge", "Timeouts"]

Origin = tuple[str, str, int]
"""``(scheme, host, port)``: one pool of connections each."""


class Timeouts(NamedTuple):
    """Seconds (None: no bound): ``connect`` to open a connection, ``read`` for every wait for the peer,
    ``pool`` for a free connection, ``total`` for one exchange from its first wait to its last byte."""

    connect: float | None
    read: float | None
    pool: float | None
    total: float | None = None


_DEFAULT_PORTS = {"http": 80, "https": 443}


class _Pool:
    """The connections to one origin: idle ones (newest last), a count of all, and who waits for one."""

    def __init__(self, host: str, port: int, tls: ssl.SSLContext | None, size: int, expiry: float) -> None:
        self._host, self._port, self._tls = host, port, tls
        self._size, self._expiry = size, expiry
        self._idle: list[Connection] = []
        self._count = 0  # open, opening or in use
        self._closed = False
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()
        """Each gets a connection handed over, or None: a free slot to open one in."""

    async def acquire(
        self, connect_timeout: float | None, pool_timeout: float | None, deadline: float | None = None
    ) -> Connection:
        """A pooled connection, or a new one; waits at most ``pool_timeout`` for a free slot, connects within
        ``connect_timeout``, neither past ``deadline`` (the loop's clock)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable(now, self._expiry):
                return connection
            self._discard(connection)
        if self._count >= self._size:
            waiter: asyncio.Future[Connection | None] = loop.create_future()
            self._waiters.append(waiter)
            if deadline is not None:
                pool_timeout = _within(pool_timeout, deadline - now)
            try:
                async with asyncio.timeout(pool_timeout):
                    handed = await waiter
            except BaseException as exc:
                if waiter.done() and not waiter.cancelled():
                    self._give_back(waiter.result())  # handed over just as the wait ended: pass it on
                else:
                    waiter.cancel()
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(waiter)  # not left behind while every connection stays busy
                if isinstance(exc, TimeoutError):
                    raise httpx.PoolTimeout(f"no free connection to the upstream within {pool_timeout} s") from exc
                raise
            if handed is not None:
                return handed
        else:
            self._count += 1
        if deadline is not None:
            connect_timeout = _within(connect_timeout, deadline - loop.time())
        try:
            return await Connection.open(self._host, self._port, self._tls, connect_timeout)
        except BaseException:
            self._free_slot()
            raise

    def release(self, connection: Connection, reusable: bool) -> None:
        """Back to the pool after a request: handed to a waiter, kept idle, or closed."""
        if not reusable or connection.closed or self._closed:
            self._discard(connection)
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        connection.idle_since = asyncio.get_running_loop().time()
        self._idle.append(connection)

    def close(self) -> None:
        """Close the idle connections now and the busy ones when their requests end."""
        self._closed = True
        for connection in self._idle:
            connection.close()
        self._count -= len(self._idle)
        self._idle.clear()

    def _give_back(self, handed: Connection | None) -> None:
        if handed is None:
            self._free_slot()
        else:
            self.release(handed, reusable=True)

    def _discard(self, connection: Connection) -> None:
        connection.close()
        self._free_slot()

    def _free_slot(self) -> None:
        """One connection fewer: the first live waiter may open one."""
        self._count -= 1
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._count += 1
                waiter.set_result(None)
                return


def _within(timeout: float | None, left: float) -> float:
    """``timeout`` no longer than the ``left`` seconds of the exchange it is part of."""
    left = max(left, 0.0)
    return left if timeout is None else min(timeout, left)


class LeanTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 keep-alive pools per origin (see the module docstring)."""

    def __init__(
        self, *, tls: ssl.SSLContext, pool_size: int, keepalive_expiry: float, max_response_bytes: int
    ) -> None:
        """``tls`` is used for ``https://`` origins (``httpx.create_ssl_context`` gives httpx's defaults)."""
        self._tls, self._size, self._expiry = tls, pool_size, keepalive_expiry
        self._limit = max_response_bytes
        self._pools: dict[tuple[str, str, int], _Pool] = {}

    async def exchange(
        self,
        origin: Origin,
        method: bytes,
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        timeouts: Timeouts,
    ) -> Received:
        """Send one request to ``origin`` on a pooled connection and read its whole answer (its body as sent).

        ``headers`` must name the ``Host`` and frame ``body``; ``RestUpstream`` calls this directly, with no
        ``httpx.Request`` or ``httpx.Response`` built around it (they were a fifth of a forwarded request's CPU).
        """
        pool = self._pools.get(origin)
        if pool is None:
            scheme, host, port = origin
            if scheme not in _DEFAULT_PORTS:
                raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{scheme}://'.")
            tls = self._tls if scheme == "https" else None
            pool = self._pools[origin] = _Pool(host, port, tls, self._size, self._expiry)
        deadline = None if timeouts.total is None else asyncio.get_running_loop().time() + timeouts.total
        connection = await pool.acquire(timeouts.connect, timeouts.pool, deadline)
        reusable = False
        try:
            received = await connection.exchange(method, target, headers, body, timeouts.read, self._limit, deadline)
            reusable = True
        finally:
            pool.release(connection, reusable)
        return received

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """httpx's transport seam over ``exchange`` (tests drive the pool through an ``httpx.AsyncClient``)."""
        url = request.url
        if url.scheme not in _DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{url.scheme}://'.")
        try:
            body = request.content
        except httpx.RequestNotRead:
            body = await request.aread()
        timeouts = request.extensions.get("timeout", {})
        received = await self.exchange(
            (url.scheme, url.host, url.port or _DEFAULT_PORTS[url.scheme]),
            request.method.encode(),
            url.raw_path,
            request.headers.raw,
            body,
            Timeouts(timeouts.get("connect"), timeouts.get("read"), timeouts.get("pool")),
        )
        return httpx.Response(
            received.status,
            headers=received.headers,
            stream=httpx.ByteStream(received.body),
            extensions={"http_version": b"HTTP/" + received.http_version, "reason_phrase": received.reason},
        )

    async def aclose(self) -> None:
        """Close the idle connections; busy ones close when their request ends."""
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
