"""Anonymous clients against the connection bounds of a real ``irc-proxy serve`` (``irc_proxy/http/read_timeout.py``,
``h2_stall.py``) on two paths the other modules do not take: ``Expect: 100-continue`` (hypercorn answers
``100 Continue`` at once, before the app reads the body) and h2c reached through HTTP/1.1's ``Upgrade: h2c`` (the
first request is carried in HTTP/1.1 and answered as HTTP/2 stream 1, after a ``101`` sent by the h11 protocol).
What held is pinned here: the read timeout, the write timeout, the keep-alive and ``max_connections`` bound both
paths as they bound the others. What did not: a body that never came was a 500 with an ERROR traceback, and an
``HTTP2-Settings`` header h2 refuses an ERROR traceback from asyncio, each one per connection of any client."""

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

from tests.integration.security.test_connection_bounds import request
from tests.support.server import ProxyProcess

CAP = 3
EXPECT = b"Expect: 100-continue\r\n"


def expect_head(length: int, path: str = "/v1/namespaces") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n".encode()
        + EXPECT
        + b"\r\n"
    )


def received_until_closed(sock: socket.socket, limit: float) -> tuple[bytes, float]:
    """What the server sends until it ends ``sock`` (EOF or reset), and after how many seconds."""
    started, data = time.monotonic(), b""
    sock.settimeout(limit)
    with contextlib.suppress(ConnectionError):
        while piece := sock.recv(65536):
            data += piece
    return data, time.monotonic() - started


def reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_a_body_that_never_comes_is_not_a_server_error(tmp_path: Path) -> None:
    """An ``Expect: 100-continue`` client that never sends its body is cut by the read timeout, as any other. Its
    request was a 500 with a ~2.4 KB ERROR traceback (starlette's ``ClientDisconnect`` fell to the unexpected-error
    handler); one that sends the head and resets made one at once: ~1.5 MB of ERROR log a second from one anonymous
    client. Now a 400 and the access line alone."""
    proxy = ProxyProcess(tmp_path, "[server]\nread_timeout_seconds = 1\n").start()
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            sock.sendall(expect_head(100))
            data, took = received_until_closed(sock, 10)
        assert data.startswith(b"HTTP/1.1 100 "), data
        assert b"HTTP/1.1 400 " in data, data
        assert 0.9 < took < 3, took
        for _ in range(50):  # the head, then a reset: nothing waits for the read timeout
            sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            sock.sendall(expect_head(100) + b"{")
            sock.recv(100)  # the 100 Continue: the request is being handled
            reset(sock)
        time.sleep(0.5)
        log = proxy.log()
        assert log.count("POST /v1/namespaces 400") >= 40, log[-2000:]
        for trouble in ("unhandled error", "Traceback", "ERROR"):
            assert trouble not in log, log[-2000:]
    finally:
        proxy.stop()


def test_expect_requests_hold_the_cap_only_until_the_read_timeout(tmp_path: Path) -> None:
    """``CAP`` clients each send an ``Expect`` head and no body: they hold the worker's places (a fourth is
    refused) until the read timeout, not past it (the ``100 Continue`` sent does not count as progress)."""
    proxy = ProxyProcess(tmp_path, f"[server]\nread_timeout_seconds = 2\nmax_connections = {CAP}\n").start()
    held: list[socket.socket] = []
    try:
        time.sleep(0.5)  # the start-up probe's connection ends
        for _ in range(CAP):
            sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            sock.sendall(expect_head(100))
            assert sock.recv(100).startswith(b"HTTP/1.1 100 ")
            held.append(sock)
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            assert request(sock) == b""  # refused: the cap is held
        started = time.monotonic()
        for sock in held:
            received_until_closed(sock, 10)
        assert time.monotonic() - started < 3
        time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            assert request(sock).startswith(b"HTTP/1.1 200")
    finally:
        for sock in held:
            sock.close()
        proxy.stop()


def upgraded(port: int, window: int | None = None) -> tuple[socket.socket, h2.connection.H2Connection]:
    """An h2c client reached through ``Upgrade: h2c`` on ``GET /healthz`` (HTTP/2 stream 1 once upgraded), its
    settings (``window``: its flow-control window) in ``HTTP2-Settings``; raises ConnectionError if refused."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    if window is not None:
        values = {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window}
        client.local_settings = h2.settings.Settings(client=True, initial_values=values)
    settings = client.initiate_upgrade_connection()
    assert settings is not None  # a client's upgrade always carries its settings
    sock.sendall(
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
        b"HTTP2-Settings: " + settings + b"\r\n\r\n"
    )
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece:
            sock.close()
            raise ConnectionError("closed before the 101")
        data += piece
    assert data.startswith(b"HTTP/1.1 101 "), data
    sock.sendall(client.data_to_send())
    client.receive_data(data.split(b"\r\n\r\n", 1)[1])
    return sock, client


def pinged_until(
    sock: socket.socket, client: h2.connection.H2Connection, seconds: float, resets_wanted: int = 0
) -> tuple[set[int], float]:
    """Ping every 0.2 s (so the read timeout never comes) for up to ``seconds``, until the server closes or (if
    ``resets_wanted``) resets that many streams: the streams it reset, and the seconds that took."""
    started, resets = time.monotonic(), set[int]()
    sock.settimeout(0.2)
    with contextlib.suppress(ConnectionError):
        while time.monotonic() - started < seconds and not 0 < resets_wanted <= len(resets):
            client.ping(b"12345678")
            sock.sendall(client.data_to_send())
            with contextlib.suppress(TimeoutError):
                data = sock.recv(1 << 20)
                if not data:
                    break
                events = client.receive_data(data)
                resets |= {event.stream_id for event in events if isinstance(event, h2.events.StreamReset)}
    return resets, time.monotonic() - started


def test_the_upgraded_request_on_a_shut_window_is_reset_after_the_write_timeout(tmp_path: Path) -> None:
    """The request carried in HTTP/1.1 (stream 1) is answered on a window the client shut in ``HTTP2-Settings``,
    with the ``101`` sent by the h11 protocol before the connection became h2: its answer is reset by ``h2_stall``
    like any stream's, as are 99 more, while the client pings to keep the read timeout away."""
    proxy = ProxyProcess(tmp_path, "[server]\nwrite_timeout_seconds = 1\nread_timeout_seconds = 30\n").start()
    try:
        sock, client = upgraded(proxy.port, window=0)
        with sock:
            headers = [(":method", "GET"), (":path", "/healthz"), (":scheme", "http"), (":authority", "localhost")]
            for _ in range(99):
                client.send_headers(client.get_next_available_stream_id(), headers, end_stream=True)
            sock.sendall(client.data_to_send())
            resets, took = pinged_until(sock, client, 6, resets_wanted=100)
        assert 1 in resets and len(resets) == 100, sorted(resets)[:5]
        assert took < 4, took
        assert "Error in ASGI Framework" not in proxy.log()
    finally:
        proxy.stop()


def test_upgraded_connections_are_under_the_cap_and_the_keep_alive(tmp_path: Path) -> None:
    """Upgraded connections take a place under ``max_connections`` (a fourth is refused before its ``101``); once
    answered, an idle one ends at the keep-alive though it pings (a ping is not a request), and its place is free."""
    proxy = ProxyProcess(
        tmp_path,
        f"[server]\nmax_connections = {CAP}\nkeep_alive_timeout_seconds = 1\nread_timeout_seconds = 30\n",
    ).start()
    held: list[tuple[socket.socket, h2.connection.H2Connection]] = []
    try:
        time.sleep(0.5)
        held += [upgraded(proxy.port) for _ in range(CAP)]
        with contextlib.suppress(ConnectionError):
            upgraded(proxy.port)[0].close()
            raise AssertionError("a connection past the cap was upgraded")
        for sock, client in held:
            _, lived = pinged_until(sock, client, 6)
            assert lived < 3, lived
        sock, _ = upgraded(proxy.port)
        sock.close()
    finally:
        for sock, _ in held:
            sock.close()
        proxy.stop()


BAD_SETTINGS = [b"AAA", b"AAAA", b"AASAAAAA", b"AAUAAAAB"]
"""``HTTP2-Settings`` values h2 refuses: not base64, a SETTINGS body cut short, an initial window of 2^31, a
largest frame of 1 byte."""


def test_a_malformed_http2_settings_header_ends_the_connection_without_an_error(tmp_path: Path) -> None:
    """hypercorn sends the ``101``, then h2 raises on the header and nothing catches it: the connection's task
    ended with an ERROR and a ~3 KB traceback in the log, one per connection of any anonymous client. Now the
    connection just closes, its place under the cap is free, and the log has nothing but the access lines."""
    proxy = ProxyProcess(tmp_path, f"[server]\nmax_connections = {CAP}\nread_timeout_seconds = 5\n").start()
    try:
        for settings in BAD_SETTINGS * CAP:
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
                sock.sendall(
                    b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                    b"Upgrade: h2c\r\nHTTP2-Settings: " + settings + b"\r\n\r\n"
                )
                data, took = received_until_closed(sock, 10)
            assert data.startswith(b"HTTP/1.1 101 "), data
            assert took < 1, took
        time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            assert request(sock).startswith(b"HTTP/1.1 200")
        log = proxy.log()
        for trouble in ("ERROR", "Traceback", "client_connected_cb", "max_connections"):
            assert trouble not in log, log[-3000:]
    finally:
        proxy.stop()
