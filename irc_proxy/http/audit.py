"""The audit hand-off: one record per request that reached a catalog operation.

The operation's endpoint (``routes._dispatch``, ``meta.get_config``, the token endpoint as
``oauth.token``) names itself in the request's typed record (``RequestContext.audit``); requests
that never get there (``/healthz``, 401s, unknown paths) leave no record.
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import unquote_plus

from irc_proxy.audit import AuditRecord, now
from irc_proxy.errors import BadRequest
from irc_proxy.handling.catalog import Catalogs
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.http.app_state import AppState
from irc_proxy.http.parsing import decode_namespace, unquoted


def object_path(params: dict[str, Any], separator: str) -> str | None:
    """``level.level.name`` from the path parameters (namespace levels, then the table or view)."""
    segment = params.get("namespace")
    if segment is None:
        return None
    return _object_path(segment, params.get("table") or params.get("view"), separator)


@functools.lru_cache(maxsize=4096)  # pure; a request decoded its names again for its record (~2 µs)
def _object_path(segment: str, name: str | None, separator: str) -> str:
    try:
        parts = list(decode_namespace(segment, separator))
    except BadRequest:
        parts = [unquote_plus(segment)]
    if name is not None:
        parts.append(unquoted(name))
    return ".".join(parts)


def _catalog_of(operation: str, prefix: str | None, catalogs: Catalogs) -> str | None:
    """The path's catalog; a REST path without one means the default catalog, a console page without one
    (the catalogs list, sign-in, the admin pages) none."""
    if prefix is not None:
        return unquoted(prefix)
    return None if operation.startswith("ui.") else catalogs.default


def submit_record(shared: AppState | None, context: RequestContext, status: int, latency_ms: float) -> None:
    """Hand the request's record to the lifespan's ``auditor`` (never blocking), if it reached an operation.

    Called by ``irc_proxy.http.middleware.Edge`` once the response is sent (or the request failed);
    ``shared`` is None in an app started without its lifespan (nothing to audit to).
    """
    if shared is None:
        return
    auditor = shared.auditor
    note = context.audit
    operation = note.operation
    if operation is None or not auditor.settings.enabled:
        return
    params = note.params
    status = int(status)
    decision, reason = note.outcome(status)
    auditor.submit(
        AuditRecord(
            now(),
            context.principal,
            operation,
            _catalog_of(operation, params.get("prefix"), shared.catalogs),
            note.object or object_path(params, shared.settings.server.namespace_separator),
            status,
            context.request_id,
            latency_ms,
            decision,
            reason,
        )
    )
