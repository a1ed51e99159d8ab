"""Prometheus exposition (``GET /metrics``, outside auth) and the per-request metrics (``observe``)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import Scope

from irc_proxy.handling.catalog import Catalogs
from irc_proxy.http.app_state import app_state
from irc_proxy.http.parsing import unquoted
from irc_proxy.metric_cells import CounterChild, HistogramChild
from irc_proxy.metrics import REQUEST_LATENCY, REQUESTS

UNMATCHED = "unmatched"
_CATALOG_ROOTS = ("/v1/namespaces", "/v1/tables/", "/v1/views/", "/v1/transactions/")


async def metrics(request: Request) -> Response:
    """``GET /metrics``: every metric of this process in the Prometheus text format."""
    threads = app_state(request).threads
    return Response(await threads.run(generate_latest, REGISTRY), media_type=CONTENT_TYPE_LATEST)


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
    if route is None:
        return UNMATCHED, {}
    known = _TEMPLATES.get(id(route))
    if known is None or known[0] is not route:
        if len(_TEMPLATES) >= _TEMPLATES_KEPT:  # apps come and go in tests: their routes are not kept forever
            _TEMPLATES.clear()
        known = _TEMPLATES[id(route)] = (route, _template(route))
    return known[1], params


def _template(route: object) -> str:
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return UNMATCHED
    return path.replace("/v1/", "/v1/{prefix}/", 1) if path.startswith(_CATALOG_ROOTS) else path


_CATALOG_TEMPLATE = "/v1/{prefix}/"
_TEMPLATES: dict[int, tuple[object, str]] = {}
"""Each route's template label, worked out once (the routes are the application's: a fixed set), by ``id``
(Starlette's routes are not hashable) with the route itself to tell a reused ``id`` apart."""
_TEMPLATES_KEPT = 1024


def catalog_label(catalogs: Catalogs | None, template: str, params: dict[str, Any]) -> str:
    """The catalog a request addressed: its ``{prefix}``, the default catalog, or empty when none applies
    (or when the app runs without its lifespan: no ``catalogs``)."""
    if catalogs is None or not template.startswith(_CATALOG_TEMPLATE):
        return ""
    prefix = params.get("prefix")
    if prefix is None:
        return str(catalogs.default)
    name = unquoted(prefix)
    return name if catalogs.has(name) else UNMATCHED  # unknown prefixes: no new labels


_Children = tuple[CounterChild, HistogramChild]
_CHILDREN: dict[tuple[str, str, int, str], _Children] = {}
"""The labelled counter and histogram of each label set seen (as bounded as the labels themselves)."""


def observe(scope: Scope, status: int, seconds: float, catalogs: Catalogs | None) -> None:
    """Count and time one answered request by method, route template, status and catalog.

    ``scope`` is the one the router saw (it records the matched route there); requests answered
    before routing (a 401, an idempotent replay) are matched here.
    """
    method = scope["method"]
    if method not in _METHODS:
        method = "OTHER"
    template, params = routed(scope)
    catalog = catalog_label(catalogs, template, params)
    children = _CHILDREN.get((method, template, status, catalog))
    if children is None:
        children = _CHILDREN[method, template, status, catalog] = (
            REQUESTS.labels(method, template, str(status), catalog),
            REQUEST_LATENCY.labels(method, template, catalog),
        )
    children[0].inc()
    children[1].observe(seconds)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
