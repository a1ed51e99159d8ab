"""The audit hand-off: one record per request that reached a catalog operation.

The operation's endpoint (``routes._dispatch``, ``meta.get_config``, the token endpoint as
``oauth.token``) names itself in ``scope["state"]`` (``audit_operation``, ``audit_params``); requests
that never get there (``/healthz``, 401s, unknown paths) leave no record.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote_plus

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


def submit_record(state: dict[str, Any], status: int, latency_ms: float) -> None:
    """Hand the request's record to the lifespan's ``auditor`` (never blocking), if it reached an operation.

    Called by ``irc_proxy.http.middleware.Edge`` once the response is sent (or the request failed).
    """
    auditor: Auditor | None = state.get("auditor")
    operation = state.get("audit_operation")
    if auditor is None or operation is None or not auditor.settings.enabled:
        return
    params = state.get("audit_params") or {}
    settings = state.get("settings")
    separator = settings.server.namespace_separator if settings is not None else ":"
    prefix = params.get("prefix")
    catalogs = state.get("catalogs")
    decision, reason = _decision(state, int(status))
    auditor.submit(
        AuditRecord(
            time=now(),
            principal=str(state.get("principal", "anonymous")),
            operation=operation,
            catalog=unquote_plus(prefix) if prefix is not None else getattr(catalogs, "default", None),
            object=state.get("audit_object") or object_path(params, separator),
            status=int(status),
            request_id=str(state.get("request_id", "")),
            latency_ms=latency_ms,
            decision=decision,
            reason=reason,
        )
    )


def note_refusal(state: dict[str, Any], message: str) -> None:
    """Remember why a handler refused the request (a 403 raised after authorization allowed it)."""
    state["audit_refusal"] = message


def _decision(state: dict[str, Any], status: int) -> tuple[str, str | None]:
    """Every 403 is ``denied`` with a reason: the authorization step's, a handler's refusal, or the status."""
    decision, reason = str(state.get("audit_decision", "allowed")), state.get("audit_reason")
    if status != 403 or (decision == "denied" and reason):
        return decision, reason
    refusal = state.get("audit_refusal") or "refused with 403 after authorization (e.g. by the upstream catalog)"
    return "denied", f"{reason}; {refusal}" if reason else str(refusal)
