"""Pass-through of catalog requests to a remote REST catalog (``kind = "rest"``): the HTTP side.

Everything before the handler (routing, audit, authentication, authorization) runs as for any
catalog; then the catalog is asked for its remote catalog's answer (``Catalog.pass_through``: None when
it answers the operation itself, and the handler runs). This module only turns the request into an
``UpstreamCall`` (built only when it is sent) and the ``UpstreamReply`` into a response; what is sent
and what comes back is decided in ``irc_proxy.handling.federation.forwarding``. An upstream error body that
is not the spec's shape is wrapped into it (same status, the type from ``http.errors``' table).
"""

from __future__ import annotations

from functools import partial

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import CommitStateUnknown
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.federation.forwarding import PASSED_REQUEST_HEADERS, UpstreamCall, UpstreamReply
from irc_proxy.http import parsing
from irc_proxy.http.errors import classify, error_response, response_for, type_for_status
from irc_proxy.http.headers import headers_of

_NAMES = (("table", "table"), ("view", "view"), ("plan_id", "plan-id"))
"""Path parameters an ``UpstreamCall`` names, and the name it gives each (the template's)."""
_SENT = {name.encode("latin-1"): name for name in (*PASSED_REQUEST_HEADERS, "authorization")}
"""The request headers an ``UpstreamCall`` carries (ASGI names are lower-case), as text: decoding the others (a
browser's dozen, say) was wasted work on every forwarded request."""


async def passed_through(request: Request, catalog: Catalog, endpoint: str) -> Response | None:
    """The remote catalog's answer to the request, when the catalog passes ``endpoint`` through to one;
    None when the catalog answers it itself."""
    try:
        reply = await catalog.pass_through(parsing.context(request), endpoint, partial(_call, request, endpoint))
    except CommitStateUnknown as exc:
        return response_for(request, exc)
    if reply is None:
        return None
    if reply.bare_error is not None:
        return _wrapped_error(request, reply)
    return Response(reply.body, status_code=reply.status, headers=reply.headers)


async def _call(request: Request, endpoint: str) -> UpstreamCall:
    """The request as the remote catalog gets it."""
    context, params = parsing.context(request), request.path_params
    return UpstreamCall(
        endpoint,
        parsing.namespace_param(request) if "namespace" in params else None,
        {name: params[key] for key, name in _NAMES if key in params},
        request.scope.get("query_string", b""),
        tuple((name, v.decode("latin-1")) for k, v in request.scope["headers"] if (name := _SENT.get(k)) is not None),
        await request.body() if headers_of(request.scope).has_body else b"",  # no receive() for a GET
        parsing.page_binding(request) if context.list_filtered else None,
    )


def _wrapped_error(request: Request, reply: UpstreamReply) -> Response:
    """An upstream error without an IcebergErrorResponse body, in the spec's shape."""
    assert reply.bare_error is not None
    type_name = classify(CommitStateUnknown(""))[1] if reply.commit_state_unknown else type_for_status(reply.status)
    return error_response(request, reply.status, type_name, reply.bare_error)
