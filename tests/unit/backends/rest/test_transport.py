"""The lean HTTP/1.1 pool against a scripted server on real sockets: keep-alive reuse, what makes a connection
unusable, every failure as the httpx exception httpcore would raise, the pool's bound, the answer's bound."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from irc_proxy.backends.rest.connection import RequestNotSent
from irc_proxy.backends.rest.transport import LeanTransport, ResponseTooLarge, Timeouts
from tests.support.scripted_http import ScriptedServer, Step, answer, chunked, self_signed

BODY = b'{"metadata-location": "s3://b/t/metadata/00001.json"}' + b" " * 6000


def transport(
    size: int = 4, expiry: float = 5.0, limit: int = 1 << 20, tls: ssl.SSLContext | None = None
) -> LeanTransport:
    return LeanTransport(
        tls=tls or ssl.create_default_context(), pool_size=size, keepalive_expiry=expiry, max_response_bytes=limit
    )


def scenario(
    script: list[Step],
    steps: Callable[[LeanTransport, ScriptedServer, httpx.AsyncClient], Awaitable[Any]],
    **options: Any,
) -> Any:
    """Run ``steps`` with a client whose pool is a ``LeanTransport`` and a server answering ``script``."""
    tls = options.pop("server_tls", None)

    async def run() -> Any:
        pool = transport(**options)
        async with (
            ScriptedServer(script, tls) as server,
            httpx.AsyncClient(base_url=server.url, transport=pool, timeout=httpx.Timeout(1.0, pool=0.3)) as client,
        ):
            return await steps(pool, server, client)

    return asyncio.run(run())


def test_many_requests_share_one_kept_alive_connection() -> None:
    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        for _ in range(20):
            response = await client.get("/v1/t", headers={"x-request-id": "r1"})
            assert (response.status_code, response.content, response.headers["etag"]) == (200, BODY, '"e1"')
        posted = await client.post("/v1/commit", content=b'{"updates": []}')
        assert posted.status_code == 200
        assert server.connections == 1
        assert server.bodies[-1] == b'{"updates": []}'
        assert server.heads[0].startswith(b"GET /v1/t HTTP/1.1\r\n") and b"x-request-id: r1" in server.heads[0].lower()

    scenario([answer(200, BODY, ("etag", '"e1"'))], steps)


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    async def close_after(writer: Any) -> None:
        writer.write(answer(200, BODY))
        await writer.drain()
        writer.close()

    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        for _ in range(3):
            assert (await client.get("/v1/t")).content == BODY
            await asyncio.sleep(0.05)  # the close reaches the client while the connection is idle
        assert server.connections == 3

    scenario([close_after], steps)


def test_an_idle_connection_expires_and_one_the_server_wrote_to_is_dropped() -> None:
    async def then_408(writer: Any) -> None:
        writer.write(answer(200, BODY))
        await asyncio.sleep(0.05)
        writer.write(answer(408, b"timeout"))  # unsolicited: must never be read as the next answer

    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        assert (await client.get("/v1/a")).status_code == 200
        await asyncio.sleep(0.2)
        assert (await client.get("/v1/b")).status_code == 200  # a new connection, past the 0.1 s expiry
        await asyncio.sleep(0.2)
        assert (await client.get("/v1/c")).status_code == 200
        assert server.connections == 3

    scenario([answer(200, BODY), answer(200, BODY), then_408, answer(200, BODY)], steps, expiry=0.1)
    scenario([then_408, answer(200, BODY)], lambda p, s, c: _twice_on_two_connections(s, c))


async def _twice_on_two_connections(server: ScriptedServer, client: httpx.AsyncClient) -> None:
    assert (await client.get("/v1/a")).status_code == 200
    await asyncio.sleep(0.2)
    assert (await client.get("/v1/b")).status_code == 200
    assert server.connections == 2


def test_connection_close_from_the_server_ends_the_connection() -> None:
    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        for _ in range(2):
            assert (await client.get("/v1/t")).content == BODY
        assert server.connections == 2

    scenario([answer(200, BODY, ("connection", "close"))], steps)


def test_chunked_head_and_informational_answers_are_read_and_keep_the_connection() -> None:
    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        assert (await client.get("/v1/chunked")).content == b'{"a": 1, "b": 2}'
        head = await client.head("/v1/t")
        assert (head.status_code, head.content, head.headers["content-length"]) == (200, b"", str(len(BODY)))
        continued = await client.post("/v1/commit", content=b"{}")
        assert (continued.status_code, continued.content) == (200, BODY)
        assert server.connections == 1

    head_answer = answer(200, b"", length=len(BODY))
    script: list[Step] = [
        chunked(b'{"a": 1, ', b'"b": 2}'),
        head_answer,
        b"HTTP/1.1 100 Continue\r\n\r\n" * 8 + answer(200, BODY),  # up to 8 informational answers are fine
    ]
    scenario(script, steps)


def test_a_head_in_pieces_is_read_by_h11_and_bytes_past_an_answer_drop_the_connection() -> None:
    """The plain path (``wire``) reads a head that arrived whole; one that trickles in is handed to h11 from its
    first byte (and the connection is kept as h11 says). Bytes after an answer's body (a second answer nobody
    asked for: response splitting) are never read as the next answer: the connection is dropped."""

    async def in_pieces(writer: Any) -> None:
        whole = answer(200, BODY, ("etag", '"e1"'))
        for piece in (whole[:5], whole[5:30], whole[30:]):
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.02)

    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        for _ in range(2):
            response = await client.get("/v1/t")
            assert (response.status_code, response.content, response.headers["etag"]) == (200, BODY, '"e1"')
        assert server.connections == 1
        assert (await client.get("/v1/split")).content == b"{}"
        assert (await client.get("/v1/t")).content == BODY  # not the smuggled 404
        assert server.connections == 2

    smuggled = answer(200, b"{}") + answer(404, b"smuggled")
    scenario([in_pieces, in_pieces, smuggled, answer(200, BODY)], steps)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (answer(200, b"{}", length=100), "peer closed connection without sending complete message body"),
        (b"HTTP/1.1 abc\r\n\r\n", "illegal status line"),
        (b"garbage\r\n\r\n", "illegal status line"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nxx", "conflicting Content-Length"),
        (b"HTTP/1.1 102 Processing\r\n\r\n" * 9 + answer(200, b"{}"), "more than 8 informational"),
    ],
)
def test_a_truncated_or_malformed_answer_is_a_remote_protocol_error(reply: bytes, message: str) -> None:
    async def truncated(writer: Any) -> None:
        writer.write(reply)
        await writer.drain()
        writer.close()

    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        with pytest.raises(httpx.RemoteProtocolError, match=message):
            await client.get("/v1/t")
        assert (await client.get("/v1/t")).status_code == 200  # a new connection after the failed one
        assert server.connections == 2

    scenario([truncated, answer(200, BODY)], steps)


def test_a_hang_up_without_an_answer_is_a_remote_protocol_error() -> None:
    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await client.post("/v1/commit", content=b"{}")

    scenario([None], steps)


def test_an_answer_slower_than_the_read_timeout_is_a_read_timeout() -> None:
    async def slow(writer: Any) -> None:
        await asyncio.sleep(3)

    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> float:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            await client.get("/v1/t", timeout=httpx.Timeout(5, read=0.3))
        return time.monotonic() - started

    assert 0.3 <= scenario([slow], steps) < 1.5


def test_a_trickle_keeps_the_read_timeout_per_wait_and_the_total_bounds_the_exchange() -> None:
    """``read`` bounds each wait, as httpcore's does (a trickle within it goes on); ``total`` bounds the exchange
    (``total_timeout_seconds``): one byte just before each read timeout cannot hold a request longer."""

    async def trickle(writer: Any) -> None:
        head = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n"
        writer.write(head)
        for byte in b"0123456789":
            await asyncio.sleep(0.15)
            writer.write(bytes([byte]))

    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/t", timeout=httpx.Timeout(5, read=0.4))  # 1.5 s in all
        assert response.content == b"0123456789"
        origin = ("http", "127.0.0.1", int(server.url.rsplit(":", 1)[1]))
        head = [(b"host", b"127.0.0.1")]
        within = await pool.exchange(origin, b"GET", b"/v1/t", head, b"", Timeouts(5, 0.4, 5, total=5))
        assert within.body == b"0123456789"
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout, match="total_timeout_seconds"):
            await pool.exchange(origin, b"GET", b"/v1/t", head, b"", Timeouts(5, 0.4, 5, total=0.5))
        assert time.monotonic() - started < 1.2  # cut at the total, not after the whole trickle (1.5 s)
        connections = server.connections
        assert (await pool.exchange(origin, b"GET", b"/v1/t", head, b"", Timeouts(5, 0.4, 5))).body == b"0123456789"
        assert server.connections == connections + 1  # the cut connection was not reused

    scenario([trickle], steps)


def test_a_full_pool_makes_a_request_wait_bounded_then_hands_over_the_connection() -> None:
    async def slow(writer: Any) -> None:
        await asyncio.sleep(0.6)
        writer.write(answer(200, BODY))

    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        first = asyncio.create_task(client.get("/v1/slow"))
        await asyncio.sleep(0.1)
        with pytest.raises(httpx.PoolTimeout):
            await client.get("/v1/t")  # pool timeout 0.3 s, the one connection is busy for 0.6 s
        waiting = asyncio.create_task(client.get("/v1/t", timeout=httpx.Timeout(2)))
        assert (await first).status_code == 200
        assert (await waiting).status_code == 200
        assert server.connections == 1  # handed over, not a second connection

    scenario([slow, answer(200, BODY)], steps, size=1)


def test_a_failed_connect_frees_its_slot_and_a_refused_one_is_a_connect_error() -> None:
    async def run() -> None:
        pool = transport(size=1)
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        async with httpx.AsyncClient(transport=pool, timeout=1) as client:
            for _ in range(3):  # with pool_size 1 a leaked slot would make the second one a PoolTimeout
                with pytest.raises(httpx.ConnectError):
                    await client.get(f"http://127.0.0.1:{port}/v1/config")

    asyncio.run(run())


def test_an_answer_over_the_limit_is_response_too_large_and_drops_the_connection() -> None:
    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        with pytest.raises(ResponseTooLarge):
            await client.get("/v1/big")
        with pytest.raises(ResponseTooLarge):
            await client.get("/v1/big-chunked")
        assert (await client.get("/v1/t")).content == BODY
        assert server.connections == 3

    big = b"x" * (64 << 10)
    scenario([answer(200, big * 3), chunked(*[big] * 3), answer(200, BODY)], steps, limit=128 << 10)


def test_tls_with_a_trusted_ca_and_a_refused_certificate(tmp_path: Path) -> None:
    server_tls, ca = self_signed(tmp_path)

    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        for _ in range(3):
            assert (await client.get("/v1/t")).content == BODY
        assert server.connections == 1
        async with httpx.AsyncClient(base_url=server.url, transport=transport(), timeout=1) as untrusting:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await untrusting.get("/v1/t")

    client_tls = ssl.create_default_context(cafile=str(ca))
    scenario([answer(200, BODY)], steps, tls=client_tls, server_tls=server_tls)


def test_closing_the_transport_closes_idle_connections() -> None:
    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        assert (await client.get("/v1/t")).status_code == 200
        await pool.aclose()
        for _ in range(50):
            if not server._writers:
                break
            await asyncio.sleep(0.01)
        assert not server._writers  # the server saw the connection end

    scenario([answer(200, BODY)], steps)


def test_a_request_h11_refuses_to_write_is_not_sent_and_frees_its_connection() -> None:
    """``RequestNotSent``, not a ``LocalProtocolError`` that the upstream client read as "may have been sent" (a
    commit of unknown state): h11 refuses before one byte is written."""

    async def steps(pool: LeanTransport, server: ScriptedServer, client: httpx.AsyncClient) -> None:
        origin = ("http", "127.0.0.1", int(server.url.rsplit(":", 1)[1]))
        bad = [(b"host", b"127.0.0.1"), (b"user-agent", b"a\x0bb")]
        with pytest.raises(RequestNotSent):
            await pool.exchange(origin, b"POST", b"/v1/t", bad, b"{}", Timeouts(1, 1, 0.3))
        assert (await client.get("/v1/t")).status_code == 200  # the pool's one slot was given back
        assert [head.split(b"\r\n")[0] for head in server.heads] == [b"GET /v1/t HTTP/1.1"]

    scenario([answer(200, BODY)], steps, size=1)
