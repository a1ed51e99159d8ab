"""Forwarding over plain data: what goes upstream for an ``UpstreamCall`` and what comes back."""

from __future__ import annotations

import asyncio
import json

import httpx

from irc_proxy.backends.rest.upstream import RestUpstream
from irc_proxy.handling.federation.forwarding import Forwarder, UpstreamCall, UpstreamReply
from irc_proxy.handling.naming import NamespaceCodec
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.settings import RestCatalogSettings
from irc_proxy.threads import ThreadRunner

TABLE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"
CONFIG = {"overrides": {"prefix": "up"}, "endpoints": [f"GET {TABLE}", f"POST {TABLE}"]}


def forward(call: UpstreamCall, answer: httpx.Response, seen: list[httpx.Request]) -> UpstreamReply:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/config":
            return httpx.Response(200, json=CONFIG)
        seen.append(request)
        return answer

    settings = RestCatalogSettings(kind="rest", uri="http://upstream.test")  # type: ignore[arg-type]
    upstream = RestUpstream("remote", settings, ThreadRunner(1), httpx.MockTransport(handle))
    forwarder = Forwarder("remote", upstream, NamespaceCodec(":"))

    async def run() -> UpstreamReply:
        await upstream.config()
        return await forwarder.send(RequestContext(request_id="r1"), call)

    return asyncio.run(run())


def test_a_head_the_upstream_lacks_goes_as_a_get_and_answers_204_without_a_body() -> None:
    seen: list[httpx.Request] = []
    headers = (("user-agent", "spark"), ("cookie", "secret"), ("x-forwarded-for", "10.0.0.1"))
    call = UpstreamCall(f"HEAD {TABLE}", ("a", "b c"), {"table": "t%20x"}, b"", headers)
    reply = forward(call, httpx.Response(200, json={"x": 1}, headers={"ETag": '"e1"'}), seen)
    assert (reply.status, reply.body, reply.headers) == (204, b"", {"etag": '"e1"'})
    (sent,) = seen
    assert sent.method == "GET" and sent.url.raw_path == b"/v1/up/namespaces/a%1Fb%20c/tables/t%20x"
    assert sent.headers["user-agent"] == "spark" and "cookie" not in sent.headers
    assert "x-forwarded-for" not in sent.headers and sent.headers["x-request-id"] == "r1"


def test_query_body_and_an_iceberg_error_body_pass_unchanged() -> None:
    seen: list[httpx.Request] = []
    error = {"error": {"message": "no", "type": "CommitFailedException", "code": 409}}
    call = UpstreamCall(f"POST {TABLE}", ("a",), {"table": "t"}, b"x=1&y=%2F", (), b'{"updates": []}')
    reply = forward(call, httpx.Response(409, json=error), seen)
    assert (reply.status, json.loads(reply.body), reply.bare_error) == (409, error, None)
    assert seen[0].url.query == b"x=1&y=%2F" and seen[0].content == b'{"updates": []}'


def test_a_commit_answered_by_a_gateway_page_is_a_bare_error_of_unknown_state() -> None:
    call = UpstreamCall(f"POST {TABLE}", ("a",), {"table": "t"}, body=b"{}")
    reply = forward(call, httpx.Response(502, text="<html>Bad Gateway</html>"), [])
    assert reply.status == 502 and reply.commit_state_unknown
    assert (
        reply.bare_error == "The upstream catalog answered 502 without an Iceberg error body: <html>Bad Gateway</html>"
    )
    load = forward(UpstreamCall(f"GET {TABLE}", ("a",), {"table": "t"}), httpx.Response(502, text=""), [])
    assert not load.commit_state_unknown
    assert load.bare_error == "The upstream catalog answered 502 without an Iceberg error body"
