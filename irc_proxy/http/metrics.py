"""Prometheus exposition (``GET /metrics``, outside auth) and the per-request metrics middleware."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import unquote_plus

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from irc_proxy.metrics import REQUEST_LATENCY, REQUESTS

UNMATCHED = "unmatched"
_CATALOG_ROOTS = ("/v1/namespaces", "/v1/tables/", "/v1/views/", "/v1/transactions/")


async def metrics(request: Request) -> Response:
    """``GET /metrics``: every metric of this process in the Prometheus text format."""
    return Response(await run_in_threadpool(generate_latest, REGISTRY), media_type=CONTENT_TYPE_LATEST)


def routed(scope: Scope) -> tuple[str, dict[str, Any]]:
    """The matched route's template and path parameters (matched here for a request answered before
    routing, e.g. an idempotent replay); catalog routes reached without a prefix get ``{prefix}``."""
    route, params = scope.get("route"), scope.get("path_params") or {}
    if route is None:
        for candidate in getattr(scope.get("app"), "routes", []):
            match, child = candidate.matches(scope)
            if match is Match.FULL:
                route, params = candidate, child.get("path_params") or {}
                break
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return UNMATCHED, {}
    return (path.replace("/v1/", "/v1/{prefix}/", 1) if path.startswith(_CATALOG_ROOTS) else path), params


def catalog_label(scope: Scope, template: str, params: dict[str, Any]) -> str:
    """The catalog a request addressed: its ``{prefix}``, the default catalog, or empty when none applies."""
    if not template.startswith("/v1/{prefix}/"):
        return ""
    catalogs = (scope.get("state") or {}).get("catalogs")
    if catalogs is None:
        return ""
    prefix = params.get("prefix")
    if prefix is None:
        return str(catalogs.default)
    name = unquote_plus(prefix)
    return name if name in {c.name for c in catalogs.all()} else UNMATCHED  # unknown prefixes: no new labels


class RequestMetrics:
    """Count and time every HTTP request by method, route template, status and catalog.

    Must run inside ``RawPathRouting`` with nothing between it and the router that copies the
    scope: the router records the matched route in the scope this middleware reads afterwards.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            method = scope["method"] if scope["method"] in _METHODS else "OTHER"
            route, params = routed(scope)
            catalog = catalog_label(scope, route, params)
            REQUESTS.labels(method, route, str(status), catalog).inc()
            REQUEST_LATENCY.labels(method, route, catalog).observe(time.perf_counter() - started)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
