"""Forwarding to a remote REST catalog, attacked from both ends over real sockets: a client of the front that
shapes the path sent upstream, and a hostile remote whose answers try to exhaust the front's memory.

The front is a real ``irc-proxy serve``; the remote is a small HTTP stand-in that records every request it gets
and answers a table load as the test scripts it (a gzip or zstd bomb, a body its encoding does not decode).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from irc_proxy.backends.rest.transport import LeanTransport
from tests.support.federation import rest_catalog, start_front
from tests.support.scripted_http import ScriptedServer, answer
from tests.support.server import ProxyProcess

_LOADED = json.dumps({"metadata-location": "s3://b/t/metadata/1.json", "metadata": {}}).encode()


class _Remote:
    """Records ``METHOD path`` of every request; answers ``/v1/config``, and anything else with ``answer``."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.answer: tuple[bytes, str | None] = (_LOADED, None)
        remote = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                remote.seen.append(f"{self.command} {self.path}")
                body, encoding = (b'{"overrides": {"prefix": "p"}}', None)
                if not self.path.startswith("/v1/config"):
                    body, encoding = remote.answer
                self.send_response(200)
                self.send_header("content-type", "application/json")
                if encoding:
                    self.send_header("content-encoding", encoding)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = do_HEAD = _any  # http.server's names

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture(scope="module")
def remote() -> Iterator[_Remote]:
    remote = _Remote()
    yield remote
    remote.server.shutdown()


@pytest.fixture(scope="module")
def front(remote: _Remote, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    front = start_front(
        tmp_path_factory.mktemp("front"), rest_catalog("fed", remote.url, max_response_mb=16, auth={"mode": "none"})
    )
    yield front
    front.stop()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/v1/fed/namespaces/mine/tables/.."),  # was DELETE /v1/p/namespaces/mine: a namespace drop
        ("GET", "/v1/fed/namespaces/mine/tables/."),  # was GET …/mine/tables: an unfiltered listing
        ("GET", "/v1/fed/namespaces/mine/tables/%2E%2E"),  # a server that decodes before resolving
        ("POST", "/v1/fed/namespaces/mine/tables/../metrics"),  # was POST …/mine/metrics
        ("POST", "/v1/fed/namespaces/../tables/rename"),  # was POST /v1/p/tables/rename: rename anything
    ],
)
def test_a_dot_segment_name_cannot_change_the_path_sent_upstream(
    front: ProxyProcess, remote: _Remote, method: str, path: str
) -> None:
    remote.seen.clear()
    body = b'{"source": {"namespace": ["a"], "name": "b"}, "destination": {"namespace": ["c"], "name": "d"}}'
    status, answer = _raw_request(front, method, path, body if method == "POST" else b"")
    assert status == 400, answer
    assert json.loads(answer)["error"]["type"] == "BadRequestException"
    assert [seen for seen in remote.seen if not seen.startswith("GET /v1/config")] == []


def _raw_request(front: ProxyProcess, method: str, path: str, body: bytes) -> tuple[int, bytes]:
    """One request over a plain socket: every HTTP client resolves dot segments before sending."""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", front.port), timeout=30) as sock:
        sock.sendall(head.encode() + body)
        answer = b"".join(iter(lambda: sock.recv(65536), b""))
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def test_a_name_with_dots_that_is_no_dot_segment_is_still_forwarded(front: ProxyProcess, remote: _Remote) -> None:
    remote.seen.clear()
    reply = httpx.get(f"{front.url}/v1/fed/namespaces/mine/tables/..t", timeout=30)
    assert reply.status_code == 200, reply.text
    assert remote.seen[-1] == "GET /v1/p/namespaces/mine/tables/..t"


def _bomb(encoding: str, mib: int) -> bytes:
    """``mib`` MiB of zeros compressed, made 1 MiB at a time."""
    if encoding == "gzip":  # ~1 KB on the wire per MiB
        gzipper = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(gzipper.compress(bytes(1 << 20)) for _ in range(mib)) + gzipper.flush()
    zstandard = pytest.importorskip("zstandard")  # test-only: how a hostile remote makes one
    zstder = zstandard.ZstdCompressor().compressobj()  # ~30 bytes per MiB
    return b"".join(zstder.compress(bytes(1 << 20)) for _ in range(mib)) + zstder.flush()


@pytest.mark.parametrize("encoding", ["gzip", "zstd"])
def test_a_compressed_bomb_is_refused_without_inflating_it(front: ProxyProcess, remote: _Remote, encoding: str) -> None:
    remote.answer = (_bomb(encoding, 512), encoding)  # under max_response_mb on the wire, 512 MiB inflated
    Path(f"/proc/{front.pid}/clear_refs").write_text("5")  # the peak restarts here (not the previous test's)
    before = front.peak_rss_kib()
    try:
        reply = httpx.get(f"{front.url}/v1/fed/namespaces/mine/tables/t", timeout=60)
    finally:
        remote.answer = (_LOADED, None)
    assert reply.status_code == 503, reply.text
    # gzip: inflated up to the bound and refused; zstd (httpx inflated it whole): never asked for, refused
    assert ("max_response_mb" if encoding == "gzip" else "Content-Encoding") in reply.json()["error"]["message"]
    grown_mib = (front.peak_rss_kib() - before) >> 10
    assert grown_mib < 100, f"the front peaked {grown_mib} MiB higher for one answer"  # was +1 GiB (gzip)


def test_a_body_its_encoding_does_not_decode_is_the_upstreams_fault(front: ProxyProcess, remote: _Remote) -> None:
    remote.answer = (b"this is not gzip", "gzip")
    try:
        reply = httpx.get(f"{front.url}/v1/fed/namespaces/mine/tables/t", timeout=60)
    finally:
        remote.answer = (_LOADED, None)
    assert reply.status_code == 503, reply.text  # was a 500 (an error of the proxy's own)
    assert "Content-Encoding" in reply.json()["error"]["message"]
    fine = httpx.get(f"{front.url}/v1/fed/namespaces/mine/tables/t", timeout=60)
    assert (fine.status_code, fine.content) == (200, _LOADED)


def test_an_answer_framed_both_ways_is_read_by_transfer_encoding_and_its_connection_not_reused() -> None:
    """Content-Length and Transfer-Encoding together (RFC 9112 6.3: handle as an error): whatever sits between
    the proxy and the upstream may have framed it by the length, so the next caller must not read that tail."""
    both = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"

    async def run() -> tuple[list[bytes], int]:
        async with ScriptedServer([both, answer(200, _LOADED)]) as server:
            pool = LeanTransport(
                tls=httpx.create_ssl_context(), pool_size=1, keepalive_expiry=5, max_response_bytes=1 << 20
            )
            async with httpx.AsyncClient(transport=pool, timeout=5) as client:
                bodies = [(await client.get(f"{server.url}/v1/{n}")).content for n in range(2)]
            return bodies, server.connections

    bodies, connections = asyncio.run(run())
    assert bodies == [b"abc", _LOADED]
    assert connections == 2  # was 1: the second request rode the connection the odd answer came on
