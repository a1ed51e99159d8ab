"""The audit middleware: one record per request that reached a catalog operation.

The operation's endpoint (``routes._dispatch``, ``meta.get_config``) names itself in
``scope["state"]`` (``audit_operation``, ``audit_params``); requests that never get there
(``/healthz``, the token endpoint, 401s, unknown paths) leave no record.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import unquote_plus

from starlette.types import ASGIApp, Receive, Scope, Send

from irc_proxy.audit import Auditor, AuditRecord, now
from irc_proxy.errors import BadRequest
from irc_proxy.http.parsing import decode_namespace


def object_path(params: dict[str, Any], separator: str) -> str | None:
    """``level.level.name`` from the path parameters (namespace levels, then the table or view)."""
    segment = params.get("namespace")
    if segment is None:
        return None
    try:
        parts = list(decode_namespace(segment, separator))
    except BadRequest:
        parts = [unquote_plus(segment)]
    name = params.get("table") or params.get("view")
    if name is not None:
        parts.append(unquote_plus(name))
    return ".".join(parts)


class AuditTrail:
    """Hands each request's record to the lifespan's ``auditor`` (never blocking).

    The start time and status come from ``RequestContext``, which must wrap this middleware.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            state = scope.get("state") or {}
            auditor: Auditor | None = state.get("auditor")
            operation = state.get("audit_operation")
            if auditor is not None and operation is not None:
                params = state.get("audit_params") or {}
                settings = state.get("settings")
                separator = settings.server.namespace_separator if settings is not None else ":"
                prefix = params.get("prefix")
                catalogs = state.get("catalogs")
                auditor.submit(
                    AuditRecord(
                        time=now(),
                        principal=str(state.get("principal", "anonymous")),
                        operation=operation,
                        catalog=unquote_plus(prefix) if prefix is not None else getattr(catalogs, "default", None),
                        object=state.get("audit_object") or object_path(params, separator),
                        status=int(state.get("status", 500)),
                        request_id=str(state.get("request_id", "")),
                        latency_ms=(time.perf_counter() - state.get("started", time.perf_counter())) * 1000,
                        decision=str(state.get("audit_decision", "allowed")),
                        reason=state.get("audit_reason"),
                    )
                )
