"""``LeanTransport``: httpx's transport seam over pooled ``h11`` connections (``connection.py``).

It speaks HTTP/1.1 only, to any origin, without proxies: ``RestUpstream`` uses it when HTTP/2 cannot apply
(``http2 = false``, or a plain ``http://`` upstream) and no HTTP proxy comes from the environment, and httpx's
own transport otherwise. Each origin has a pool of at most ``pool_size`` connections; an idle one is kept for
``keepalive_expiry`` seconds and reused only when the last exchange left both sides done. A request that finds
every connection busy waits for one at most the request's ``pool`` timeout (then ``httpx.PoolTimeout``, as
httpcore). Timeouts come from the request (``AsyncClient``'s ``httpx.Timeout``): ``connect`` for connecting,
``read`` for every wait for the peer. The answer is read whole, at most ``max_response_bytes`` of it
(``ResponseTooLarge`` past that).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque

import httpx

from irc_proxy.backends.rest.connection import Connection, ResponseTooLarge

__all__ = ["LeanTransport", "ResponseTooLarge"]

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

    async def acquire(self, connect_timeout: float | None, pool_timeout: float | None) -> Connection:
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


class LeanTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 keep-alive pools per origin (see the module docstring)."""

    def __init__(
        self, *, tls: ssl.SSLContext, pool_size: int, keepalive_expiry: float, max_response_bytes: int
    ) -> None:
        """``tls`` is used for ``https://`` origins (``httpx.create_ssl_context`` gives httpx's defaults)."""
        self._tls, self._size, self._expiry = tls, pool_size, keepalive_expiry
        self._limit = max_response_bytes
        self._pools: dict[tuple[str, str, int], _Pool] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in _DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{url.scheme}://'.")
        port = url.port or _DEFAULT_PORTS[url.scheme]
        origin = (url.scheme, url.host, port)
        pool = self._pools.get(origin)
        if pool is None:
            tls = self._tls if url.scheme == "https" else None
            pool = self._pools[origin] = _Pool(url.host, port, tls, self._size, self._expiry)
        try:
            body = request.content
        except httpx.RequestNotRead:
            body = await request.aread()
        timeouts = request.extensions.get("timeout", {})
        connection = await pool.acquire(timeouts.get("connect"), timeouts.get("pool"))
        reusable = False
        try:
            response = await connection.exchange(request, body, timeouts.get("read"), self._limit)
            reusable = True
        finally:
            pool.release(connection, reusable)
        return response

    async def aclose(self) -> None:
        """Close the idle connections; busy ones close when their request ends."""
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
