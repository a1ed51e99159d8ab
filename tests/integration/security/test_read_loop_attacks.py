"""Anonymous clients against the per-connection read timer (irc_proxy/http/read_timeout.py) over real sockets:
no timing of bytes may hold a connection past what hypercorn's own read loop allows."""

from __future__ import annotations

import socket
import time

import pytest

from tests.support.server import ProxyProcess, Serve

CONFIG = """
[server]
read_timeout_seconds = 1
keep_alive_timeout_seconds = 1
"""


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "read-loop")


def connect(proxy: ProxyProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=5)


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server ends the connection (EOF or reset) within ``seconds``, draining what it sends."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            if not sock.recv(65536):
                return True
        except TimeoutError:
            return False
        except ConnectionError:
            return True
    return False


def test_silent_connection_is_cut(proxy: ProxyProcess) -> None:
    with connect(proxy) as sock:
        assert closed_within(sock, 4)


def test_byte_trickle_in_a_head_is_bounded_by_the_head_limit(proxy: ProxyProcess) -> None:
    """A byte every 0.5 s keeps reads alive (as in hypercorn); the head size limit must still end it."""
    with connect(proxy) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ")
        try:
            for _ in range(8):
                time.sleep(0.5)
                sock.sendall(b"a" * 4096)
        except ConnectionError:
            return  # cut while trickling: bounded
        assert closed_within(sock, 4)


def test_h2c_prior_knowledge_silent_connection_is_cut(proxy: ProxyProcess) -> None:
    with connect(proxy) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        assert closed_within(sock, 5)


def test_half_closed_client_is_cut(proxy: ProxyProcess) -> None:
    with connect(proxy) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.shutdown(socket.SHUT_WR)
        assert closed_within(sock, 4)
