"""Configuration and health endpoints."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.handling.catalog import Catalog
from irc_proxy.http import parsing
from irc_proxy.http.responses import json_response
from irc_proxy.http.routes import endpoints_for


def _find(request: Request, warehouse: str | None) -> Catalog:
    catalogs = parsing.catalogs(request)
    if warehouse:
        for candidate in catalogs.all():
            if candidate.backend.warehouse == warehouse.rstrip("/"):
                return candidate
    return catalogs.get(warehouse or None)


async def get_config(request: Request) -> Response:
    """``GET /v1/config?warehouse=``: the prefix and endpoints of the named (or default) catalog."""
    request.state.audit_operation = "getConfig"
    catalog = _find(request, request.query_params.get("warehouse"))
    request.state.audit_params = {"prefix": catalog.name}
    return json_response({"defaults": {}, "overrides": {"prefix": catalog.name}, "endpoints": endpoints_for(catalog)})


async def healthz(request: Request) -> Response:
    """The process is alive (no dependency is touched)."""
    return json_response({"status": "ok"})
