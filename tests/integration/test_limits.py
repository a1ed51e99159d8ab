"""Request limits and logs: oversized bodies are 413, stalled clients are cut off, JSON log lines
carry the request id."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.rest import assert_error
from tests.support.server import ProxyProcess, Serve

LIMITS = """
[server]
max_body_bytes = 4096
read_timeout_seconds = 1
keep_alive_timeout_seconds = 1
log_format = "json"
"""

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def limited(serve: Serve) -> ProxyProcess:
    return serve(LIMITS, "limits")


def big_namespace_body(size: int) -> bytes:
    return json.dumps({"namespace": ["big"], "properties": {"pad": "x" * size}}).encode()


def test_body_over_the_limit_is_413(limited: ProxyProcess) -> None:
    response = httpx.post(
        f"{limited.url}/v1/local/namespaces", content=big_namespace_body(10_000), headers=JSON, timeout=10
    )
    assert_error(response, 413, "RequestEntityTooLargeException", "4096 bytes")


def test_chunked_body_over_the_limit_is_413(limited: ProxyProcess) -> None:
    body = big_namespace_body(10_000)

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    response = httpx.post(f"{limited.url}/v1/local/namespaces", content=chunks(), headers=JSON, timeout=10)
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "RequestEntityTooLargeException")
    assert httpx.head(f"{limited.url}/v1/local/namespaces/big", timeout=10).status_code == 404


def test_body_under_the_limit_is_served(limited: ProxyProcess) -> None:
    response = httpx.post(
        f"{limited.url}/v1/local/namespaces", content=big_namespace_body(1000), headers=JSON, timeout=10
    )
    assert response.status_code == 200, response.text


def test_stalled_client_is_disconnected(limited: ProxyProcess) -> None:
    with socket.create_connection(("127.0.0.1", limited.port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/local/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{"
        )
        started = time.monotonic()
        data = sock.recv(65536)  # the server gives up on the body and closes the connection
        while data and b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        elapsed = time.monotonic() - started
    assert elapsed < 8, elapsed
    assert not data or data.startswith(b"HTTP/1.1 4") or data.startswith(b"HTTP/1.1 5"), data[:80]


def test_idle_connection_is_closed(limited: ProxyProcess) -> None:
    with socket.create_connection(("127.0.0.1", limited.port), timeout=10) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""
        assert time.monotonic() - started < 8


def test_json_log_lines_carry_the_request_id(limited: ProxyProcess) -> None:
    response = httpx.get(f"{limited.url}/v1/local/namespaces/missing", headers={"X-Request-Id": "trace-42"}, timeout=10)
    assert response.status_code == 404 and response.headers["x-request-id"] == "trace-42"
    time.sleep(0.2)
    lines = [json.loads(line) for line in limited.log().splitlines() if line.strip()]
    assert all({"time", "level", "logger", "message", "request_id"} <= set(entry) for entry in lines)
    mine = [entry for entry in lines if entry["request_id"] == "trace-42"]
    assert any(entry["logger"] == "irc_proxy.access" and " 404 " in entry["message"] for entry in mine)
