"""The route table and ``SegmentRouter``: the router's first full match is the one Starlette's plain ``Router``
scan picks, for every shape of route and path; 405s, trailing-slash redirects and 404s stay Starlette's."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.types import Message

from irc_proxy.http.admin import ADMIN_ROUTES
from irc_proxy.http.routes import OPERATIONS, UNSERVED, SegmentRouter, _shape_index, catalog_routes
from irc_proxy.ui.routes import UI_ROUTES

METHODS = ["GET", "HEAD", "POST", "DELETE", "PUT"]


def echo(label: str) -> Any:
    async def endpoint(request: Request) -> Response:
        return PlainTextResponse(f"{label} {sorted(request.path_params.items())}")

    return endpoint


def call(router: Router, method: str, path: str, root_path: str = "") -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    """One request through ``router`` as an ASGI server would send it: status, body and headers."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "server": ("testserver", 80),
        "path": root_path + path,
        "raw_path": (root_path + path).encode(),
        "root_path": root_path,
        "query_string": b"",
        "headers": [(b"host", b"testserver")],
    }
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(router(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], body, sorted(start["headers"])


def echoed(routes: list[BaseRoute]) -> list[BaseRoute]:
    """The same paths and methods, each answering with its position (which route matched, and its parameters)."""
    copies: list[BaseRoute] = []
    for i, route in enumerate(routes):
        assert isinstance(route, Route), route
        copies.append(Route(route.path, echo(str(i)), methods=route.methods))
    return copies


def served_routes() -> list[BaseRoute]:
    """Every route the app serves (as ``irc_proxy.app`` lists them), answering with its position."""
    fixed = [Route(p, echo(p), methods=["GET"]) for p in ("/v1/config", "/healthz", "/readyz", "/metrics")]
    return [
        *fixed,
        Route("/v1/aws/s3/sign", echo("sign"), methods=["POST"]),
        *echoed([*catalog_routes(OPERATIONS), *ADMIN_ROUTES, *UI_ROUTES]),
    ]


SERVED = served_routes()
WORDS = sorted(
    {part for r in SERVED if isinstance(r, Route) for part in r.path.split("/") if part and "{" not in part}
    | {"x", "lake", "a%1Fb", "", "{prefix}"}
)
PLAIN, INDEXED = Router(SERVED), SegmentRouter(SERVED)


def same_answer(plain: Router, indexed: Router, method: str, path: str, root_path: str = "") -> None:
    assert call(indexed, method, path, root_path) == call(plain, method, path, root_path), (method, path)


def test_every_route_and_method_of_the_app_matches_as_starlettes_scan_does() -> None:
    for route in SERVED:
        assert isinstance(route, Route)
        path = route.path
        for name in route.param_convertors:
            path = path.replace("{" + name + "}", "v")
        for method in METHODS:
            same_answer(PLAIN, INDEXED, method, path)
            same_answer(PLAIN, INDEXED, method, path + "/")  # a trailing-slash redirect (or a 404)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(method=st.sampled_from(METHODS), parts=st.lists(st.sampled_from(WORDS), min_size=0, max_size=9))
def test_any_path_made_of_the_apps_words_gets_starlettes_answer(method: str, parts: list[str]) -> None:
    same_answer(PLAIN, INDEXED, method, "/" + "/".join(parts))


SEGMENTS = st.sampled_from(["a", "b", "{p}", "{q}", "{n:int}", "{rest:path}", "c.json", "{id}.json", ""])


@st.composite
def route_tables(draw: st.DrawFn) -> list[BaseRoute]:
    """Routes of every kind the router may meet: literal and parameter segments, other convertors, mounts,
    trailing slashes, overlapping shapes, different methods."""
    routes: list[BaseRoute] = []
    for i in range(draw(st.integers(1, 8))):
        segments = draw(st.lists(SEGMENTS, min_size=0, max_size=4))
        path = "/" + "/".join(segments)
        if path.count("{rest:path}") > 1 or len(set(s for s in segments if s.startswith("{"))) != sum(
            s.startswith("{") for s in segments
        ):
            continue  # Starlette refuses a parameter named twice
        if draw(st.integers(0, 9)) == 0:
            routes.append(Mount(path.rstrip("/") or "/m", routes=[Route("/{tail}", echo(f"mount{i}"))]))
        else:
            routes.append(Route(path, echo(str(i)), methods=draw(st.lists(st.sampled_from(METHODS[1:]), max_size=2))))
    return routes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    routes=route_tables(),
    method=st.sampled_from(METHODS),
    parts=st.lists(st.sampled_from(["a", "b", "c.json", "7", "x", "", "m"]), max_size=5),
)
def test_for_any_route_table_and_path_the_first_full_match_is_starlettes(
    routes: list[BaseRoute], method: str, parts: list[str]
) -> None:
    same_answer(Router(routes), SegmentRouter(routes), method, "/" + "/".join(parts))


def test_a_path_under_a_root_path_is_left_to_starlettes_scan() -> None:
    routes: list[BaseRoute] = [Route("/v1/{prefix}/namespaces", echo("ns"), methods=["GET"])]
    same_answer(Router(routes), SegmentRouter(routes), "GET", "/v1/lake/namespaces", root_path="/proxy")


def test_a_route_added_after_the_first_request_is_indexed_too() -> None:
    router = SegmentRouter([Route("/a/{x}", echo("first"), methods=["GET"])])
    assert call(router, "GET", "/b/y")[0] == 404
    router.routes.append(Route("/b/{x}", echo("added"), methods=["GET"]))
    assert call(router, "GET", "/b/y")[1] == b"added [('x', 'y')]"


def test_the_index_keeps_each_shapes_candidates_in_their_original_order() -> None:
    param_last = Route("/v1/{prefix}/namespaces/{namespace}", echo("ns"))
    literal_last = Route("/v1/{prefix}/namespaces/register", echo("literal"))
    mount = Mount("/ui", routes=[])
    other = Route("/v1/{rest:path}", echo("path"))
    index = _shape_index([param_last, mount, literal_last, other])
    assert index[(4, "register")] == [param_last, mount, literal_last, other]
    assert index[(4, None)] == [param_last, mount, other]  # a literal last segment fits only itself
    assert index[None] == [mount, other]  # routes of any shape, tried for every path


def test_unserved_spec_routes_are_routed_with_and_without_the_prefix() -> None:
    paths = {route.path for route in catalog_routes(OPERATIONS) if isinstance(route, Route)}
    for template in UNSERVED:
        assert template in paths and template.replace("/{prefix}", "") in paths


def test_every_operation_is_routed_with_and_without_the_prefix_and_get_answers_head() -> None:
    routes = {
        (route.path, method)
        for route in catalog_routes(OPERATIONS)
        if isinstance(route, Route)
        for method in route.methods or ()
    }
    for op in OPERATIONS:
        template = op.template.replace("{plan-id}", "{plan_id}")
        assert (template, op.method) in routes
        assert (template.replace("/{prefix}", ""), op.method) in routes
        if op.method == "GET":
            assert (template, "HEAD") in routes
