"""The REST upstream client over ``httpx.MockTransport``: discovery, transport errors in the domain's terms,
the one retry of a read, the one retry after a 401, request ids and sticky cookies."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from irc_proxy.backends.rest.upstream import LEGACY_ENDPOINTS, LEGACY_VIEW_ENDPOINTS, RestUpstream, parse_config
from irc_proxy.errors import BadRequest, CommitStateUnknown, ServiceUnavailable
from irc_proxy.settings import RestCatalogSettings, RestUpstreamAuthSettings
from irc_proxy.threads import ThreadRunner

Handler = Callable[[httpx.Request], httpx.Response]
CONFIG = {"defaults": {"prefix": "/lake/"}, "overrides": {}, "endpoints": ["GET /v1/{prefix}/namespaces"]}


def upstream(handler: Handler, **settings: Any) -> RestUpstream:
    catalog = RestCatalogSettings.model_validate({"kind": "rest", "uri": "http://upstream.test/api/"} | settings)
    return RestUpstream("remote", catalog, ThreadRunner(2), transport=httpx.MockTransport(handler))


def run(client: RestUpstream, steps: Callable[[], Any]) -> Any:
    async def scenario() -> Any:
        try:
            return await steps()
        finally:
            await client.close()

    return asyncio.run(scenario())


def test_a_config_merges_overrides_over_defaults_and_strips_the_prefix() -> None:
    config = parse_config(
        {
            "defaults": {"prefix": "/a/", "x": "default", "view-endpoints-supported": "true"},
            "overrides": {"x": "override"},
            "endpoints": ["GET /v1/{prefix}/namespaces"],
            "idempotency-key-lifetime": "PT30M",
        }
    )
    assert (config.prefix, config.defaults["x"], config.overrides["x"]) == ("a", "default", "override")
    assert config.endpoints == frozenset({"GET /v1/{prefix}/namespaces"})
    assert config.idempotency_key_lifetime == "PT30M"


def test_a_config_without_endpoints_gets_the_legacy_ones_and_views_only_when_told() -> None:
    assert parse_config({}).endpoints == LEGACY_ENDPOINTS
    with_views = parse_config({"overrides": {"view-endpoints-supported": "TRUE"}})
    assert with_views.endpoints == LEGACY_ENDPOINTS | LEGACY_VIEW_ENDPOINTS
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_config(["endpoints"])


def test_the_config_is_read_once_with_the_warehouse_and_paths_take_its_prefix() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json=CONFIG)

    client = upstream(handler, warehouse="my wh/1")

    async def steps() -> str:
        await asyncio.gather(*(client.config() for _ in range(5)))
        await client.config()
        return client.path("namespaces")

    assert run(client, steps) == "/v1/lake/namespaces"
    assert seen == ["http://upstream.test/api/v1/config?warehouse=my%20wh%2F1"]


def test_the_config_is_asked_again_after_a_failed_answer_with_its_message() -> None:
    answers = [
        httpx.Response(500, json={"error": {"type": "Boom", "message": "exploded", "code": 500}}),
        httpx.Response(200, text="not json"),
        httpx.Response(200, json={}),
    ]
    client = upstream(lambda request: answers.pop(0))

    async def steps() -> str:
        with pytest.raises(ServiceUnavailable, match="has not answered /v1/config yet"):
            client.discovered
        with pytest.raises(ServiceUnavailable, match="answered /v1/config with 500: Boom: exploded"):
            await client.config()
        with pytest.raises(ServiceUnavailable, match="sent an invalid /v1/config"):
            await client.config()
        await client.config()
        return client.path("namespaces")

    assert run(client, steps) == "/v1/namespaces"  # no prefix


def test_an_error_answer_is_returned_as_it_is() -> None:
    client = upstream(lambda request: httpx.Response(404, json={"error": {"type": "NoSuchTableException"}}))
    response = run(client, lambda: client.send("GET", "/v1/namespaces/a/tables/t"))
    assert response.status_code == 404 and response.json()["error"]["type"] == "NoSuchTableException"


def raising(*failures: Exception) -> tuple[Handler, list[str]]:
    """A handler that raises ``failures`` one per request, then answers 200; and the methods it saw."""
    pending, seen = list(failures), []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        if pending:
            raise pending.pop(0)
        return httpx.Response(200, json={"ok": True})

    return handler, seen


def test_a_request_that_never_left_is_service_unavailable() -> None:
    handler, seen = raising(httpx.ConnectError("refused"))
    client = upstream(handler)
    with pytest.raises(ServiceUnavailable, match=r"is unreachable \(ConnectError\)"):
        run(client, lambda: client.send("POST", "/v1/namespaces/a/tables/t", content=b"{}", ambiguous=True))
    assert seen == ["POST"]  # not sent again


def test_a_read_on_a_dropped_connection_is_sent_once_more() -> None:
    handler, seen = raising(httpx.RemoteProtocolError("closed"))
    client = upstream(handler)
    assert run(client, lambda: client.send("GET", "/v1/namespaces")).status_code == 200
    assert seen == ["GET", "GET"]


def test_a_read_dropped_twice_or_timed_out_is_service_unavailable_without_more_tries() -> None:
    handler, seen = raising(httpx.RemoteProtocolError("closed"), httpx.RemoteProtocolError("closed"))
    client = upstream(handler)
    with pytest.raises(ServiceUnavailable, match=r"did not answer \(RemoteProtocolError\)"):
        run(client, lambda: client.send("GET", "/v1/namespaces"))
    assert seen == ["GET", "GET"]
    handler, seen = raising(httpx.ReadTimeout("slow"))
    client = upstream(handler)
    with pytest.raises(ServiceUnavailable, match="ReadTimeout"):
        run(client, lambda: client.send("HEAD", "/v1/namespaces/a"))
    assert seen == ["HEAD"]


def test_an_ambiguous_write_without_an_answer_is_commit_state_unknown() -> None:
    handler, seen = raising(httpx.ReadTimeout("slow"))
    client = upstream(handler)
    with pytest.raises(CommitStateUnknown, match="may or may not have been applied"):
        run(client, lambda: client.send("POST", "/v1/namespaces/a/tables/t", content=b"{}", ambiguous=True))
    handler, seen = raising(httpx.WriteError("reset"))
    client = upstream(handler)
    with pytest.raises(ServiceUnavailable, match="WriteError"):
        run(client, lambda: client.send("POST", "/v1/namespaces", content=b"{}"))
    assert seen == ["POST"]


def test_the_request_id_and_the_callers_token_travel_only_inside_calling() -> None:
    seen: list[tuple[str | None, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.headers.get("x-request-id"), request.headers.get("authorization")))
        return httpx.Response(200, json={})

    client = upstream(handler, auth={"mode": "token", "token": "proxy-token", "forward_caller_token": True})

    async def steps() -> None:
        with client.calling("Bearer caller-token", "req-1"):
            await client.send("GET", "/v1/namespaces")
        with client.calling(None, "req-2"):
            await client.send("GET", "/v1/namespaces")
        await client.send("GET", "/v1/namespaces")

    run(client, steps)
    assert seen == [("req-1", "Bearer caller-token"), ("req-2", "Bearer proxy-token"), (None, "Bearer proxy-token")]


def oauth_upstream(valid: set[str], tokens: list[str], seen: list[str]) -> RestUpstream:
    """An upstream whose token endpoint hands out ``tokens`` in turn and accepts only ``valid`` ones."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/oauth/tokens":
            seen.append("token")
            return httpx.Response(200, json={"access_token": tokens.pop(0), "token_type": "bearer"})
        seen.append(request.headers["authorization"])
        token = request.headers["authorization"].removeprefix("Bearer ")
        return httpx.Response(200 if token in valid else 401, json={"error": {"type": "NotAuthorized", "code": 401}})

    auth = RestUpstreamAuthSettings(mode="oauth2", client_id="proxy", client_secret="s3cr3t")  # type: ignore[arg-type]
    return upstream(handler, auth=auth.model_dump())


def test_a_401_to_the_proxys_token_fetches_a_new_one_and_sends_again_once() -> None:
    seen: list[str] = []
    client = oauth_upstream({"second"}, ["first", "second"], seen)
    assert run(client, lambda: client.send("GET", "/v1/namespaces")).status_code == 200
    assert seen == ["token", "Bearer first", "token", "Bearer second"]


def test_a_401_to_a_fresh_token_is_service_unavailable_without_the_secret() -> None:
    seen: list[str] = []
    client = oauth_upstream(set(), ["first", "second"], seen)
    with pytest.raises(ServiceUnavailable, match=r"refused the proxy's credentials \(401\)") as raised:
        run(client, lambda: client.send("GET", "/v1/namespaces"))
    assert "s3cr3t" not in str(raised.value)
    assert seen == ["token", "Bearer first", "token", "Bearer second"]


def test_cookies_an_upstream_sets_are_sent_back() -> None:
    cookies: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        cookies.append(request.headers.get("cookie"))
        return httpx.Response(200, json={}, headers={"set-cookie": "lb=node-2; Path=/"})

    client = upstream(handler)

    async def steps() -> None:
        await client.send("GET", "/v1/config")
        await client.send("GET", "/v1/config")

    run(client, steps)
    assert cookies == [None, "lb=node-2"]


def test_a_request_body_and_headers_reach_the_upstream_unchanged() -> None:
    seen: list[tuple[str, bytes, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.content, request.headers["content-type"]))
        return httpx.Response(200, json={})

    client = upstream(handler)
    body = json.dumps({"namespace": ["a"]}).encode()
    run(
        client,
        lambda: client.send(
            "POST", "/v1/namespaces", query=b"x=1", headers=[("Content-Type", "application/json")], content=body
        ),
    )
    assert seen == [("http://upstream.test/api/v1/namespaces?x=1", body, "application/json")]


def test_parsed_urls_are_reused_and_their_cache_stays_bounded() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json={})

    client = upstream(handler)

    async def steps() -> None:
        for i in range(1100):
            await client.send("GET", f"/v1/namespaces/n/tables/t{i}", query=b"snapshots=refs")
        await client.send("GET", "/v1/namespaces/n/tables/t1099", query=b"snapshots=refs")

    run(client, steps)
    assert seen[0] == "http://upstream.test/api/v1/namespaces/n/tables/t0?snapshots=refs"
    assert seen[-1] == seen[-2]
    assert 0 < len(client._targets) <= 1024


def test_the_jar_drops_cookies_it_could_not_send_back_and_stays_bounded() -> None:
    """A cookie of UTF-8 bytes made every later request a 500 (its Cookie header is not latin-1); a remote setting
    new cookies on every answer grew the jar and every request's Cookie header without end."""
    cookies: list[str | None] = []
    count = iter(range(10_000))

    def handler(request: httpx.Request) -> httpx.Response:
        cookies.append(request.headers.get("cookie"))
        n = next(count)
        set_cookies = [(b"set-cookie", "bad=\u20ac".encode()), (b"set-cookie", b"ctl=a\x7fb"), (b"set-cookie", b"lb=1")]
        set_cookies += [(b"set-cookie", b"c%d-%d=x" % (n, i)) for i in range(10)]
        return httpx.Response(200, json={}, headers=set_cookies)

    client = upstream(handler)

    async def steps() -> None:
        for _ in range(20):
            await client.send("GET", "/v1/config")

    run(client, steps)
    assert all(cookie is None or ("bad=" not in cookie and "ctl=" not in cookie) for cookie in cookies)
    assert max(len((cookie or "").split("; ")) for cookie in cookies) <= 32


def test_with_the_callers_token_forwarded_no_cookie_is_kept() -> None:
    cookies: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        cookies.append(request.headers.get("cookie"))
        return httpx.Response(200, json={}, headers={"set-cookie": "session=alice; Path=/"})

    client = upstream(handler, auth={"mode": "none", "forward_caller_token": True})

    async def steps() -> None:
        for caller in ("Bearer alice", "Bearer bob"):
            with client.calling(caller, None):
                await client.send("GET", "/v1/config")

    run(client, steps)
    assert cookies == [None, None]


@pytest.mark.parametrize("ambiguous", [False, True])
def test_a_header_value_with_a_control_character_is_bad_request_before_anything_is_sent(ambiguous: bool) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={})

    client = upstream(handler)
    with pytest.raises(BadRequest, match="user-agent header holds a control character"):
        run(client, lambda: client.send("POST", "/v1/t", headers=[("User-Agent", "a\x0bb")], ambiguous=ambiguous))
    assert sent == []


def test_an_answers_headers_are_kept_as_the_bytes_sent() -> None:
    """httpx decodes every value as UTF-8 when one is; the bytes, read as latin-1, can be written again."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={}, headers=[(b"etag", '"\u20ac"'.encode()), (b"x-a", b"1"), (b"x-a", b"2")])

    client = upstream(handler)
    answer = run(client, lambda: client.send("GET", "/v1/config"))
    assert answer.headers["etag"].encode("latin-1") == '"\u20ac"'.encode()
    assert answer.headers["x-a"] == "1, 2"


@pytest.mark.parametrize("ambiguous", [False, True])
def test_an_exchange_through_httpx_ends_at_total_timeout_seconds(ambiguous: bool) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200, json={})

    catalog = RestCatalogSettings.model_validate(
        {"kind": "rest", "uri": "http://upstream.test/", "total_timeout_seconds": 0.2}
    )
    client = RestUpstream("remote", catalog, ThreadRunner(2), transport=httpx.MockTransport(handler))
    expected = CommitStateUnknown if ambiguous else ServiceUnavailable
    with pytest.raises(expected, match="ReadTimeout"):
        run(client, lambda: client.send("POST", "/v1/t", content=b"{}", ambiguous=ambiguous))


@pytest.mark.parametrize("token", ["a\r\nx-injected: 1", "caf\u00e9", "two words", "\u20ac"])
def test_a_token_no_header_can_carry_is_service_unavailable_and_not_kept(token: str) -> None:
    seen: list[str] = []
    tokens = iter([token, "good"])

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/oauth/tokens"):
            seen.append("token")
            return httpx.Response(200, json={"access_token": next(tokens), "token_type": "bearer"})
        seen.append(request.headers["authorization"])
        return httpx.Response(200, json={})

    auth = RestUpstreamAuthSettings(mode="oauth2", client_id="proxy", client_secret="s3cr3t")  # type: ignore[arg-type]
    client = upstream(handler, auth=auth.model_dump())

    async def steps() -> None:
        with pytest.raises(ServiceUnavailable, match="no Authorization header can carry"):
            await client.send("POST", "/v1/t", content=b"{}", ambiguous=True)
        await client.send("GET", "/v1/t")

    run(client, steps)
    assert seen == ["token", "token", "Bearer good"]


def test_a_callers_token_with_a_control_character_is_bad_request_before_anything_is_sent() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={})

    client = upstream(handler, auth={"mode": "none", "forward_caller_token": True})

    async def steps() -> None:
        with client.calling("Bearer a\x0bb", None), pytest.raises(BadRequest, match="Authorization header"):
            await client.send("POST", "/v1/t", content=b"{}", ambiguous=True)

    run(client, steps)
    assert sent == []
