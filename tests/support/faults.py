"""A TCP fault proxy: sits between the proxy and a backend (moto, PostgreSQL, a remote catalog) on 127.0.0.1.

It relays bytes both ways and, as a test tells it to, can

* ``down()`` / ``up()``: stop listening (new connections are *refused*, as by a stopped server) and reset
  every open connection; then listen again on the same port;
* ``hang = True``: accept connections but never relay anything (a black hole: the client times out);
* ``delay = seconds``: hold each chunk back before relaying it, both ways;
* ``cut_after_request(marker, after=None)``: for every request whose bytes contain ``marker`` (e.g.
  ``b"AWSGlue.UpdateTable"``), relay the request to the backend, wait for the backend's first reply bytes, drop
  them and reset the client's connection: the backend acted, the client never hears of it. With ``after``,
  only on a connection that has already sent ``after`` (``b"COMMIT"`` after ``b"UPDATE iceberg_tables"``: the
  commit of a pointer swap, not of any other transaction);
* ``cut_all()``: reset every open connection now.

Threads, not asyncio, so it runs beside any test without an event loop. Everything is counted in ``stats``.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

_CHUNK = 65536


def _reset(sock: socket.socket) -> None:
    """Cut the connection now: the peer sees it end or reset, as when a link or process dies.

    ``shutdown`` first: a plain ``close`` while another thread is blocked in ``recv`` on the socket would not
    release it (the kernel keeps it open for that call), so the peer would never notice.
    """
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class _Link:
    """One client connection and its backend connection."""

    def __init__(self, client: socket.socket, backend: socket.socket) -> None:
        self.client = client
        self.backend = backend
        self.doomed = False
        self.armed: set[bytes] = set()
        self.closed = threading.Event()

    def reset(self) -> None:
        if not self.closed.is_set():
            self.closed.set()
            _reset(self.client)
            _reset(self.backend)


class FaultProxy:
    """Relay ``127.0.0.1:<port>`` to ``upstream_host:upstream_port`` with injectable faults."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.delay = 0.0
        self.hang = False
        self.stats: Counter[str] = Counter()
        self._rules: list[tuple[bytes, bytes | None]] = []
        self._links: set[_Link] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._listener: socket.socket | None = None
        self.port = 0
        self._listen()
        self._thread = threading.Thread(target=self._accept_loop, name="fault-proxy", daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self.down()
        self._thread.join(timeout=5)

    # Controls -------------------------------------------------------------------------------------------
    def down(self) -> None:
        """Refuse new connections and reset the open ones."""
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.close()
        self.cut_all()

    def up(self) -> None:
        """Listen again on the same port and relay faithfully (no delay, hang or cut rules)."""
        self.heal()
        with self._lock:
            if self._listener is None:
                self._listen(self.port)

    def heal(self) -> None:
        """Drop the delay, hang and cut rules (open connections stay)."""
        self.delay, self.hang = 0.0, False
        with self._lock:
            self._rules.clear()

    def cut_after_request(self, marker: bytes, after: bytes | None = None) -> None:
        with self._lock:
            self._rules.append((marker, after))

    def cut_all(self) -> None:
        with self._lock:
            links = list(self._links)
        for link in links:
            link.reset()
        self.stats["cut"] += len(links)

    # Relaying -------------------------------------------------------------------------------------------
    def _listen(self, port: int = 0) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        listener.settimeout(0.1)
        self._listener = listener
        self.port = listener.getsockname()[1]

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            listener = self._listener
            if listener is None:
                time.sleep(0.05)
                continue
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            self.stats["accepted"] += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        client.settimeout(None)
        if self.hang:
            self.stats["hung"] += 1
            link = _Link(client, socket.socket())
            with self._lock:
                self._links.add(link)
            link.closed.wait()
            return
        try:
            backend = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            self.stats["upstream_unreachable"] += 1
            _reset(client)
            return
        backend.settimeout(None)
        link = _Link(client, backend)
        with self._lock:
            self._links.add(link)
        upstream = threading.Thread(target=self._pump, args=(link, True), daemon=True)
        upstream.start()
        self._pump(link, False)
        upstream.join()
        with self._lock:
            self._links.discard(link)
        if not link.closed.is_set():
            link.closed.set()
            for sock in (client, backend):
                with contextlib.suppress(OSError):
                    sock.close()

    def _pump(self, link: _Link, to_backend: bool) -> None:
        """Relay one direction until end of stream (then half-close the other side) or a fault."""
        source, target = (link.client, link.backend) if to_backend else (link.backend, link.client)
        try:
            while not link.closed.is_set():
                data = source.recv(_CHUNK)
                if not data:
                    with contextlib.suppress(OSError):
                        target.shutdown(socket.SHUT_WR)
                    return
                if self.delay:
                    time.sleep(self.delay)
                if to_backend:
                    self._inspect(link, data)
                elif link.doomed:
                    self.stats["cut_after_request"] += 1
                    link.reset()  # the backend answered; the client never hears it
                    return
                target.sendall(data)
        except OSError:
            link.reset()

    def _inspect(self, link: _Link, data: bytes) -> None:
        with self._lock:
            rules = list(self._rules)
        for marker, after in rules:
            if marker in data and (after is None or after in link.armed):
                link.doomed = True
                self.stats["doomed"] += 1
            if after is not None and after in data:
                link.armed.add(after)


@contextmanager
def fault_proxy(upstream_host: str, upstream_port: int) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream_host, upstream_port).start()
    try:
        yield proxy
    finally:
        proxy.stop()
