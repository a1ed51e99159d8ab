"""``http.metrics.observe`` exposes what prometheus_client's own counter and histogram would for the same requests.

The reference here is the plain way: ``routed`` and ``catalog_label`` for the labels, then ``labels(...).inc()``
and ``labels(...).observe(seconds)`` on prometheus_client's ``Counter`` and ``Histogram``.
"""

from __future__ import annotations

import re
from typing import Any, cast

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from starlette.routing import Route, Router

from irc_proxy import metric_cells
from irc_proxy.handling.catalog import Catalog, Catalogs
from irc_proxy.http import metrics
from irc_proxy.metrics import LATENCY_BUCKETS

_CREATED = re.compile(rb"^(\S+_created(?:\{.*\})?) \S+$", re.MULTILINE)
NAMES = ("irc_proxy_http_requests_total", "irc_proxy_http_request_duration_seconds")


async def _endpoint(scope: Any, receive: Any, send: Any) -> None:  # never called: only matched
    raise AssertionError


ROUTES = [
    Route("/v1/namespaces/{namespace}/tables/{table}", _endpoint),
    Route("/v1/{prefix}/namespaces/{namespace}/tables/{table}", _endpoint),
    Route("/v1/config", _endpoint),
    Route("/healthz", _endpoint),
]
APP = Router(routes=ROUTES)


def _scope(method: str, path: str, routed: bool) -> dict[str, Any]:
    """A scope as the router leaves it (``route``, ``path_params``), or as an early answer leaves it (neither)."""
    scope: dict[str, Any] = {"type": "http", "method": method, "path": path, "app": APP}
    if routed:
        for route in ROUTES:
            match, child = route.matches(scope)
            if match.name == "FULL":
                scope.update(route=route, path_params=child["path_params"])
                break
    return scope


REQUESTS = [
    ("GET", "/v1/local/namespaces/db/tables/t", True, 200, 0.0001),
    ("GET", "/v1/local/namespaces/db/tables/t", True, 304, 0.005),
    ("GET", "/v1/local/namespaces/db/tables/t", True, 304, 0.0051),
    ("HEAD", "/v1/other%20one/namespaces/db/tables/t", True, 404, 1.5),
    ("GET", "/v1/nowhere/namespaces/db/tables/t", True, 404, 0.2),
    ("GET", "/v1/namespaces/db/tables/t", True, 200, 31.0),
    ("POST", "/v1/local/namespaces/db/tables/t", False, 401, 0.001),
    ("BREW", "/v1/config", True, 405, float("nan")),
    ("GET", "/v1/config", True, 200, 0.0),
    ("GET", "/healthz", False, 200, -1.0),
    ("DELETE", "/nothing/here", False, 404, 0.3),
]


@pytest.mark.parametrize("with_catalogs", [True, False])
def test_observe_exposes_what_prometheus_clients_metrics_would(
    monkeypatch: pytest.MonkeyPatch, with_catalogs: bool
) -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    their_counter = prometheus_client.Counter(NAMES[0], "c", ["method", "route", "status", "catalog"], registry=theirs)
    their_histogram = prometheus_client.Histogram(
        NAMES[1], "h", ["method", "route", "catalog"], registry=theirs, buckets=LATENCY_BUCKETS
    )
    monkeypatch.setattr(
        metrics, "REQUESTS", metric_cells.Counter(NAMES[0], "c", ["method", "route", "status", "catalog"], ours)
    )
    monkeypatch.setattr(
        metrics,
        "REQUEST_LATENCY",
        metric_cells.Histogram(NAMES[1], "h", ["method", "route", "catalog"], ours, buckets=LATENCY_BUCKETS),
    )
    monkeypatch.setattr(metrics, "_CHILDREN", {})
    catalogs = (
        Catalogs(cast(dict[str, Catalog], {"local": None, "other one": None}), "local") if with_catalogs else None
    )
    for _ in range(2):  # the second time through the remembered children
        for method, path, routed, status, seconds in REQUESTS:
            scope = _scope(method, path, routed)
            metrics.observe(scope, status, seconds, catalogs)
            template, params = metrics.routed(_scope(method, path, routed))
            catalog = metrics.catalog_label(catalogs, template, params)
            label = method if method in {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"} else "OTHER"
            their_counter.labels(label, template, str(status), catalog).inc()
            their_histogram.labels(label, template, catalog).observe(seconds)
    ours_text, theirs_text = (_CREATED.sub(rb"\1 T", generate_latest(registry)) for registry in (ours, theirs))
    assert ours_text == theirs_text
    assert b'route="/v1/{prefix}/namespaces/{namespace}/tables/{table}"' in ours_text
    if with_catalogs:
        assert b'catalog="other one"' in ours_text and b'catalog="unmatched"' in ours_text
