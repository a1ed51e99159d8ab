"""Anonymous clients against the keep-alive timer (irc_proxy/http/keep_alive.py) of a real ``irc-proxy serve``, one
worker and two: on SIGTERM every connection with no request running closes at once (idle after an answer, never
used, half-closed by its client) and the server exits well within its graceful timeout, with nothing in its log
about a task left pending or an error. The unit-level cases (``tests/unit/http/test_read_timeout.py``,
``tests/unit/http/test_keep_alive.py``) run hypercorn's own server beside ours."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import pytest

from tests.support.server import ProxyProcess

GRACEFUL = 15


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=GRACEFUL * 2)


def answered(sock: socket.socket) -> None:
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        assert piece, data
        data += piece
    assert data.startswith(b"HTTP/1.1 200"), data


def closed_after(sock: socket.socket, started: float) -> float:
    """Seconds from ``started`` until the server ends ``sock`` (EOF or reset; what it still sends is drained)."""
    try:
        while sock.recv(65536):
            pass
    except ConnectionError:
        pass
    return time.monotonic() - started


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_closes_connections_without_a_request_at_once(tmp_path: Path, workers: int) -> None:
    proxy = ProxyProcess(
        tmp_path,
        "[server]\nkeep_alive_timeout_seconds = 60\nread_timeout_seconds = 120\n"
        f"graceful_timeout_seconds = {GRACEFUL}\nworkers = {workers}\n",
    ).start()
    idle: list[socket.socket] = []
    unused: list[socket.socket] = []
    try:
        idle += [connect(proxy.port) for _ in range(20)]
        for sock in idle:
            answered(sock)
        half_closed = connect(proxy.port)
        idle.append(half_closed)
        answered(half_closed)
        half_closed.shutdown(socket.SHUT_WR)  # its read loop has ended: the keep-alive alone would hold it
        unused += [connect(proxy.port) for _ in range(5)]
        time.sleep(0.5)
        started = time.monotonic()
        proxy.send_signal(signal.SIGTERM)
        closes = [closed_after(sock, started) for sock in [*idle, *unused]]
        assert max(closes) < 3, closes
        assert proxy._process is not None
        assert proxy._process.wait(GRACEFUL) == 0
        assert time.monotonic() - started < GRACEFUL / 2
        log = proxy.log()
        for trouble in ("Task was destroyed", "Traceback", "ERROR", "Exception in callback", "never retrieved"):
            assert trouble not in log, log
    finally:
        for sock in [*idle, *unused]:
            sock.close()
        proxy.stop()
