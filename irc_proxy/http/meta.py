"""Configuration, liveness (``/healthz``) and readiness (``/readyz``) endpoints."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import CatalogError
from irc_proxy.handling.catalog import Catalog
from irc_proxy.http import access, parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.http.responses import json_response
from irc_proxy.http.routes import endpoints_for

ReadinessCheck = Callable[[], Awaitable[None]]


def _find(request: Request, warehouse: str | None) -> Catalog:
    catalogs = parsing.catalogs(request)
    if warehouse:
        for candidate in catalogs.all():
            if candidate.backend.warehouse == warehouse.rstrip("/"):
                return candidate
    return catalogs.get(warehouse or None)


async def get_config(request: Request) -> Response:
    """``GET /v1/config?warehouse=``: the prefix and endpoints of the named (or default) catalog."""
    audit = parsing.context(request).audit
    audit.name("getConfig")
    catalog = _find(request, request.query_params.get("warehouse"))
    audit.params = {"prefix": catalog.name}
    if access.authorizer(request).enabled:
        await access.of(request, catalog.name).uses_catalog()
    await catalog.discover(parsing.context(request))
    lifetime = app_state(request).settings.server.idempotency_key_lifetime
    advertised = iso_duration(lifetime) if lifetime else None
    return json_response(catalog.client_config(endpoints_for(catalog), advertised))


def iso_duration(value: timedelta) -> str:
    """``PT30M``, ``P1DT2H``: an ISO-8601 duration of whole seconds."""
    days, seconds = value.days, value.seconds
    hours, minutes, seconds = seconds // 3600, seconds // 60 % 60, seconds % 60
    time = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M"), (seconds, "S")) if n)
    if not days and not time:
        return "PT0S"
    return "P" + (f"{days}D" if days else "") + (f"T{time}" if time else "")


async def healthz(request: Request) -> Response:
    """The process is alive (no dependency is touched)."""
    return json_response({"status": "ok"})


async def readyz(request: Request) -> Response:
    """Ready when the state database and every catalog backend answer within the readiness timeout."""
    shared = app_state(request)
    checks, timeout = shared.readiness, shared.settings.server.readiness_timeout_seconds
    results = await asyncio.gather(*(_probe(check, timeout) for check in checks.values()))
    report = dict(zip(checks, results, strict=True))
    ready = all(result == "ok" for result in report.values())
    return json_response({"status": "ready" if ready else "unavailable", "checks": report}, 200 if ready else 503)


async def _probe(check: ReadinessCheck, timeout: float) -> str:
    """``ok``, or why not: only an error's type and our own message, never a URL or credential."""
    try:
        await asyncio.wait_for(check(), timeout)
    except TimeoutError:
        return f"timed out after {timeout:g}s"
    except CatalogError as exc:
        return exc.message
    except Exception as exc:
        return type(exc).__name__
    return "ok"
