"""The audit hand-off: one record per request that reached a catalog operation.

The operation's endpoint (``routes._dispatch``, ``meta.get_config``, the token endpoint as
``oauth.token``) names itself in the request's typed record (``RequestContext.audit``); requests
that never get there (``/healthz``, 401s, unknown paths) leave no record.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote_plus

from irc_proxy.audit import Auditor, AuditRecord, now
from irc_proxy.errors import BadRequest
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.http.parsing import CONTEXT, decode_namespace


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


def _catalog_of(operation: str, prefix: str | None, catalogs: Any) -> str | None:
    """The path's catalog; a REST path without one means the default catalog, a console page without one
    (the catalogs list, sign-in, the admin pages) none."""
    if prefix is not None:
        return unquote_plus(prefix)
    return None if operation.startswith("ui.") else getattr(catalogs, "default", None)


def submit_record(state: dict[str, Any], status: int, latency_ms: float) -> None:
    """Hand the request's record to the lifespan's ``auditor`` (never blocking), if it reached an operation.

    Called by ``irc_proxy.http.middleware.Edge`` once the response is sent (or the request failed).
    """
    auditor: Auditor | None = state.get("auditor")
    context: RequestContext | None = state.get(CONTEXT)
    if auditor is None or context is None or not auditor.settings.enabled:
        return
    note = context.audit
    if note.operation is None:
        return
    params = note.params
    settings = state.get("settings")
    separator = settings.server.namespace_separator if settings is not None else ":"
    prefix = params.get("prefix")
    catalogs = state.get("catalogs")
    decision, reason = note.outcome(int(status))
    auditor.submit(
        AuditRecord(
            time=now(),
            principal=context.principal,
            operation=note.operation,
            catalog=_catalog_of(note.operation, prefix, catalogs),
            object=note.object or object_path(params, separator),
            status=int(status),
            request_id=context.request_id,
            latency_ms=latency_ms,
            decision=decision,
            reason=reason,
        )
    )
