"""``RestUpstream`` over its own pool (no injected transport) against a scripted server on real sockets: which
pool it picks, the one resend of a read after a hang-up, a commit never resent, and answers over
``max_response_mb`` (raw or inflated) in the domain's errors."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from irc_proxy.backends.rest.transport import LeanTransport
from irc_proxy.backends.rest.upstream import RestUpstream
from irc_proxy.errors import CommitStateUnknown, ServiceUnavailable
from irc_proxy.settings import RestCatalogSettings
from irc_proxy.threads import ThreadRunner
from tests.support.scripted_http import ScriptedServer, Step, answer, self_signed

TABLE = b'{"metadata-location": "s3://b/t/metadata/00001.json", "metadata": {}}'


def make(uri: str, **settings: Any) -> RestUpstream:
    catalog = RestCatalogSettings.model_validate({"kind": "rest", "uri": uri, "timeout_seconds": 1.0} | settings)
    return RestUpstream("remote", catalog, ThreadRunner(2))


def scenario(
    script: list[Step], steps: Callable[[RestUpstream, ScriptedServer], Awaitable[Any]], **settings: Any
) -> Any:
    tls = settings.pop("server_tls", None)

    async def run() -> Any:
        async with ScriptedServer(script, tls) as server:
            upstream = make(server.url, **settings)
            try:
                return await steps(upstream, server)
            finally:
                await upstream.close()

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("uri", "settings", "lean"),
    [
        ("http://upstream.test", {}, True),
        ("https://upstream.test", {"http2": False}, True),
        ("https://upstream.test", {}, False),  # HTTP/2 may apply: httpx's pool
    ],
)
def test_the_lean_pool_serves_unless_http2_may_apply(uri: str, settings: dict[str, Any], lean: bool) -> None:
    upstream = make(uri, **settings)
    assert isinstance(upstream._pool, LeanTransport) is lean
    asyncio.run(upstream.close())


def test_an_http_proxy_from_the_environment_keeps_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    upstream = make("http://upstream.test")
    assert upstream._pool is None  # requests take the client's way, which routes through the proxy
    asyncio.run(upstream.close())


def test_a_read_the_upstream_hung_up_on_is_sent_once_more_on_a_new_connection() -> None:
    async def steps(upstream: RestUpstream, server: ScriptedServer) -> None:
        response = await upstream.send("GET", "/v1/namespaces/a/tables/t")
        assert (response.status_code, response.content) == (200, TABLE)
        assert (len(server.heads), server.connections) == (2, 2)

    scenario([None, answer(200, TABLE)], steps)


def test_a_commit_the_upstream_hung_up_on_is_commit_state_unknown_and_never_resent() -> None:
    async def steps(upstream: RestUpstream, server: ScriptedServer) -> None:
        with pytest.raises(CommitStateUnknown, match=r"did not answer \(RemoteProtocolError\)"):
            await upstream.send("POST", "/v1/namespaces/a/tables/t", content=b"{}", ambiguous=True)
        assert len(server.heads) == 1

    scenario([None, answer(200, TABLE)], steps)


def test_a_commit_that_times_out_is_commit_state_unknown() -> None:
    async def slow(writer: Any) -> None:
        await asyncio.sleep(2)

    async def steps(upstream: RestUpstream, server: ScriptedServer) -> None:
        with pytest.raises(CommitStateUnknown, match=r"\(ReadTimeout\)"):
            await upstream.send("POST", "/v1/namespaces/a/tables/t", content=b"{}", ambiguous=True)
        assert len(server.heads) == 1

    scenario([slow], steps)


def test_an_answer_over_max_response_mb_is_service_unavailable_or_commit_state_unknown() -> None:
    big = b'"' + b"x" * (1 << 20) + b'"'
    bomb = gzip.compress(b" " * (3 << 20))  # ~3 KB on the wire, 3 MiB inflated

    async def steps(upstream: RestUpstream, server: ScriptedServer) -> None:
        with pytest.raises(ServiceUnavailable, match=r"more than 1 MB \(max_response_mb\)"):
            await upstream.send("GET", "/v1/namespaces/a/tables/t")
        assert len(server.heads) == 1  # not fetched twice
        with pytest.raises(CommitStateUnknown, match="more than 1 MB"):
            await upstream.send("POST", "/v1/namespaces/a/tables/t", content=b"{}", ambiguous=True)
        with pytest.raises(ServiceUnavailable, match="more than 1 MB"):
            await upstream.send("GET", "/v1/namespaces/a/tables/gz")
        assert (await upstream.send("GET", "/v1/namespaces/a/tables/t")).content == TABLE

    script: list[Step] = [
        answer(200, big),
        answer(200, big),
        answer(200, bomb, ("content-encoding", "gzip")),
        answer(200, TABLE),
    ]
    scenario(script, steps, max_response_mb=1)


def test_an_https_upstream_with_a_ca_bundle_over_the_lean_pool(tmp_path: Path) -> None:
    server_tls, ca = self_signed(tmp_path)

    async def steps(upstream: RestUpstream, server: ScriptedServer) -> None:
        assert isinstance(upstream._pool, LeanTransport)
        for _ in range(3):
            assert (await upstream.send("GET", "/v1/namespaces/a/tables/t")).content == TABLE
        assert server.connections == 1

    scenario([answer(200, TABLE)], steps, server_tls=server_tls, http2=False, ca_bundle=str(ca))


def test_an_https_upstream_whose_certificate_is_not_trusted_is_unreachable(tmp_path: Path) -> None:
    server_tls, _ = self_signed(tmp_path)

    async def steps(upstream: RestUpstream, server: ScriptedServer) -> None:
        with pytest.raises(ServiceUnavailable, match=r"unreachable \(ConnectError\)"):
            await upstream.send("GET", "/v1/namespaces/a/tables/t")

    scenario([answer(200, TABLE)], steps, server_tls=server_tls, http2=False)


def test_answers_through_httpx_pool_are_bounded_too() -> None:
    bomb = gzip.compress(b" " * (3 << 20))

    async def run() -> None:
        async with ScriptedServer([answer(200, bomb, ("content-encoding", "gzip"))]) as server:
            catalog = RestCatalogSettings.model_validate({"kind": "rest", "uri": server.url, "max_response_mb": 1})
            upstream = RestUpstream("remote", catalog, ThreadRunner(2), transport=httpx.AsyncHTTPTransport())
            try:
                with pytest.raises(ServiceUnavailable, match="more than 1 MB"):
                    await upstream.send("GET", "/v1/namespaces/a/tables/gz")
            finally:
                await upstream.close()

    asyncio.run(run())


def test_the_lean_pool_sends_what_httpx_would_and_keeps_cookies() -> None:
    """The forwarder's own request type (no ``httpx.Request``) carries the same headers httpx's client did: its
    defaults, ``Content-Length: 0`` on an empty POST, forwarded headers (repeated ones joined), the request id,
    and cookies an upstream set, sent back on the next request."""

    async def steps(upstream: RestUpstream, server: ScriptedServer) -> None:
        with upstream.calling(None, "req-1"):
            first = await upstream.send("GET", "/v1/a", headers=[("Accept", "a/b"), ("if-none-match", '"x"')])
            await upstream.send("POST", "/v1/b", headers=[("if-none-match", '"y"'), ("If-None-Match", '"z"')])
        assert (first.status_code, first.headers["etag"], first.content) == (200, '"e1"', TABLE)
        get, post = (head.decode("latin-1").lower().split("\r\n") for head in server.heads)
        assert get[0] == "get /v1/a http/1.1" and f"host: 127.0.0.1:{server.url.rsplit(':', 1)[1]}" in get
        sent = {"accept: a/b", 'if-none-match: "x"', "accept-encoding: gzip, deflate", "x-request-id: req-1"}
        assert sent <= set(get)
        assert not any(line.startswith(("content-length", "cookie")) for line in get)
        assert {"content-length: 0", 'if-none-match: "y", "z"', "cookie: lb=node-2"} <= set(post)

    scenario([answer(200, TABLE, ("etag", '"e1"'), ("set-cookie", "lb=node-2; Path=/"))], steps)
