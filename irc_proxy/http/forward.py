"""Pass-through of catalog requests to a remote REST catalog (``kind = "rest"``): the HTTP side.

Everything before the handler (routing, audit, authentication, authorization) runs as for any
catalog; operations the catalog places ``FORWARDED`` come here instead of to a handler. This module
only turns the request into an ``UpstreamCall`` and the ``UpstreamReply`` into a response; what is
sent and what comes back is decided in ``irc_proxy.handling.federation.forwarding``. An upstream error body that
is not the spec's shape is wrapped into it (same status, the type from ``http.errors``' table).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import CommitStateUnknown
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.federation.forwarding import UpstreamCall, UpstreamReply
from irc_proxy.http import parsing
from irc_proxy.http.errors import classify, error_response, response_for, type_for_status

_NAMES = ("table", "view", "plan_id")


async def run(request: Request, catalog: Catalog, endpoint: str) -> Response:
    """Forward one operation (placed ``FORWARDED`` by the catalog) to the remote catalog."""
    context = parsing.context(request)
    call = UpstreamCall(
        endpoint,
        parsing.namespace_param(request) if "namespace" in request.path_params else None,
        {key.replace("_", "-"): request.path_params[key] for key in _NAMES if key in request.path_params},
        request.scope.get("query_string", b""),
        tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in request.scope["headers"]),
        await request.body(),
        parsing.page_binding(request) if context.list_filtered else None,
    )
    try:
        reply = await catalog.forward(context, call)
    except CommitStateUnknown as exc:
        return response_for(request, exc)
    if reply.bare_error is not None:
        return _wrapped_error(request, reply)
    return Response(reply.body, status_code=reply.status, headers=reply.headers)


def _wrapped_error(request: Request, reply: UpstreamReply) -> Response:
    """An upstream error without an IcebergErrorResponse body, in the spec's shape."""
    assert reply.bare_error is not None
    type_name = classify(CommitStateUnknown(""))[1] if reply.commit_state_unknown else type_for_status(reply.status)
    return error_response(request, reply.status, type_name, reply.bare_error)
