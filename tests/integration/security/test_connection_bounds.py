"""An anonymous client against the connection bounds of a real ``irc-proxy serve`` (``server.max_connections``,
``server.write_timeout_seconds``; ``irc_proxy/http/read_timeout.py``), one worker and two: connections past the cap
are closed before anything is read, with one warning in the log, and the ones held go on being served. The write
timeout's own cases run at unit level against hypercorn's server (``tests/unit/http/test_read_timeout.py``: a client
that reads nothing of an 8 MB answer is cut, one that reads slowly is not); here, that the settings reach every
worker."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest

from tests.support.server import ProxyProcess

CAP = 3
KEEP_ALIVE = 3


def request(sock: socket.socket) -> bytes:
    """The whole answer to one ``GET /healthz`` (empty: the server closed the connection)."""
    data = b""
    with contextlib.suppress(ConnectionError):
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        while not data.endswith(b"}") and (piece := sock.recv(65536)):
            data += piece
    return data


@pytest.mark.parametrize("workers", [1, 2])
def test_connections_past_the_cap_are_closed_and_the_held_ones_still_served(tmp_path: Path, workers: int) -> None:
    proxy = ProxyProcess(
        tmp_path,
        f"[server]\nmax_connections = {CAP}\nwrite_timeout_seconds = 5\nkeep_alive_timeout_seconds = {KEEP_ALIVE}\n"
        f"workers = {workers}\n",
    ).start()
    sockets: list[socket.socket] = []
    try:
        # The start-up probes' connections: closed by their client, they end at once (not held until their
        # keep-alive, as hypercorn held them); the wait covers one its client would have left open.
        time.sleep(KEEP_ALIVE + 1)
        served = []
        for _ in range(CAP * workers + 5):
            sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            sockets.append(sock)
            head = request(sock)
            if head:
                assert head.startswith(b"HTTP/1.1 200"), head
                served.append(sock)
        assert 0 < len(served) <= CAP * workers
        if workers == 1:
            assert len(served) == CAP
        for sock in served:  # the held connections are served as before
            assert request(sock).startswith(b"HTTP/1.1 200")
        assert f"server.max_connections ({CAP})" in proxy.log()
    finally:
        for sock in sockets:
            sock.close()
        proxy.stop()


def test_connect_and_close_does_not_fill_the_cap(tmp_path: Path) -> None:
    """An anonymous client that connects and closes (or resets) at once, holding nothing itself: each connection
    once kept its place until its keep-alive ended, so ``max_connections / keep_alive_timeout`` of them a second
    (10,000 / 30 s by default: 333 a second) refused every other client of the worker. Here: the cap's worth ten
    times over, with a 30 s keep-alive; a client right after is served."""
    proxy = ProxyProcess(tmp_path, f"[server]\nmax_connections = {CAP}\nkeep_alive_timeout_seconds = 30\n")
    proxy.start()
    try:
        time.sleep(1)  # the start-up probe's connection: closed by its client, it ends at once too
        for index in range(CAP * 10):
            sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            if index % 2:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset
            sock.close()
        time.sleep(0.5)
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            assert request(sock).startswith(b"HTTP/1.1 200")
        assert "server.max_connections" not in proxy.log()
    finally:
        proxy.stop()


def shut_window_requests(sock: socket.socket) -> h2.connection.H2Connection:
    """An h2c client (prior knowledge) on ``sock`` whose flow-control window is 0, having asked ``/healthz`` 100
    times (h2's concurrency limit): its answers can only wait."""
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    client.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    for _ in range(100):
        headers = [(":method", "GET"), (":path", "/healthz"), (":scheme", "http"), (":authority", "x")]
        client.send_headers(client.get_next_available_stream_id(), headers, end_stream=True)
    sock.sendall(client.data_to_send())
    return client


def test_h2_answers_held_on_a_shut_window_do_not_outlive_their_connection(tmp_path: Path) -> None:
    """An anonymous h2c client (prior knowledge) offers a window of 0, asks ``/healthz`` 100 times and resets:
    hypercorn's h2 left the 100 app tasks waiting for a sender that had stopped, and the connection held its
    place under the cap for as long as the worker ran. ``CAP`` such clients refused everyone, for good."""
    proxy = ProxyProcess(tmp_path, f"[server]\nmax_connections = {CAP}\nkeep_alive_timeout_seconds = 30\n")
    proxy.start()
    try:
        time.sleep(1)
        for _ in range(CAP):
            sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            shut_window_requests(sock)
            time.sleep(0.5)  # the answers are made, and wait for the window
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        time.sleep(0.5)
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            assert request(sock).startswith(b"HTTP/1.1 200")
        assert "server.max_connections" not in proxy.log()
        assert "Error in ASGI Framework" not in proxy.log()
    finally:
        proxy.stop()


def test_h2_answers_on_a_window_kept_shut_are_reset_after_the_write_timeout(tmp_path: Path) -> None:
    """An anonymous h2c client keeps its window shut and pings now and then (the read timeout never comes): its
    100 answers waited in hypercorn's h2 buffers, where the write timeout did not look, for as long as it liked
    (50 such connections: +125 MB in the worker). Each is reset once it waited ``write_timeout`` unread."""
    proxy = ProxyProcess(tmp_path, "[server]\nwrite_timeout_seconds = 1\nread_timeout_seconds = 30\n").start()
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            client = shut_window_requests(sock)
            started, resets = time.monotonic(), 0
            sock.settimeout(0.2)
            while resets < 100 and time.monotonic() - started < 6:
                client.ping(b"12345678")
                sock.sendall(client.data_to_send())
                with contextlib.suppress(TimeoutError):
                    events = client.receive_data(sock.recv(1 << 20))
                    resets += sum(isinstance(event, h2.events.StreamReset) for event in events)
            assert resets == 100, resets
            assert time.monotonic() - started < 4
        assert "Error in ASGI Framework" not in proxy.log()
    finally:
        proxy.stop()
