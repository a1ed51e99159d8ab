"""Pass-through of catalog requests to a remote REST catalog (``kind = "rest"``).

Everything before the handler (routing, audit, authentication, authorization) runs as for any
catalog; operations the catalog places ``FORWARDED`` (``handling.remote.ForwardedServing``) come
here instead of to a handler. Forwarding rewrites only the path (``{prefix}`` -> the upstream's
prefix, the namespace segment re-encoded as the upstream expects) and passes the query string
and the body bytes unchanged; the ``:`` mapping also rewrites identifiers in renames, commits
and listings. Request headers pass through from a short list; ``Authorization`` only with
``forward_caller_token``. The upstream's status, body, ``ETag`` and ``Content-Type`` come back
unchanged; an error body that is not the spec's shape is wrapped into it (same status).
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import CommitStateUnknown
from irc_proxy.handling import remote
from irc_proxy.handling.access import visible_namespaces, visible_objects
from irc_proxy.handling.authz import SecurableType
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.http import listing_tokens, parsing
from irc_proxy.http.errors import classify, error_response, response_for, type_for_status

PASSED_REQUEST_HEADERS = frozenset(
    {
        "accept",
        "content-type",
        "if-none-match",
        "if-match",
        "idempotency-key",
        "x-iceberg-access-delegation",
        "x-client-version",
        "x-client-git-commit",
        "user-agent",
    }
)
_PASSED_RAW = frozenset(name.encode() for name in PASSED_REQUEST_HEADERS)
PASSED_RESPONSE_HEADERS = frozenset({"content-type", "etag", "retry-after", "cache-control", "www-authenticate"})


def _calling(request: Request) -> AbstractContextManager[None]:
    context = parsing.context(request)
    return remote.calling(context.authorization or request.headers.get("authorization"), context.request_id)


async def run(request: Request, catalog: Catalog, endpoint: str) -> Response:
    """Forward one operation (placed ``FORWARDED`` by the catalog's serving) to the remote catalog."""
    with _calling(request):
        return await _forward(request, catalog, endpoint)


def _namespace_segment(request: Request, catalog: Catalog, mapped: bool) -> str:
    namespace = parsing.namespace_param(request)
    if mapped:  # nested levels joined into the upstream's one level
        return quote(catalog.codec.to_flat(namespace), safe="")
    return "%1F".join(quote(level, safe="") for level in namespace)


def upstream_tail(request: Request, catalog: Catalog, template: str, mapped: bool) -> str:
    """The template after ``/v1/{prefix}/`` with the request's path parameters filled in."""
    tail = template.removeprefix("/v1/{prefix}/")
    if "{namespace}" in tail:
        tail = tail.replace("{namespace}", _namespace_segment(request, catalog, mapped))
    for key in ("table", "view"):
        if "{" + key + "}" in tail:
            tail = tail.replace("{" + key + "}", request.path_params[key])  # still percent-encoded as sent
    return tail


async def _forward(request: Request, catalog: Catalog, endpoint: str) -> Response:
    upstream = catalog.upstream
    assert upstream is not None, "only a catalog with an upstream places operations FORWARDED"
    method, template = endpoint.split(" ", 1)
    mapped = upstream.mapped_namespaces
    content = await request.body()
    if mapped:
        content = remote.map_request(endpoint, content, catalog.codec)
    head_as_get = method == "HEAD" and endpoint not in upstream.discovered.endpoints
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.scope["headers"] if k in _PASSED_RAW]
    try:
        reply = await upstream.send(
            "GET" if head_as_get else method,
            upstream.path(upstream_tail(request, catalog, template, mapped)),
            query=listing_tokens.upstream_query(request),
            headers=headers,
            content=content,
            ambiguous=endpoint in remote.AMBIGUOUS,
        )
    except CommitStateUnknown as exc:
        return response_for(request, exc)
    status, body = reply.status_code, reply.content
    passed = {k: v for k, v in reply.headers.items() if k in PASSED_RESPONSE_HEADERS}
    if method == "HEAD":
        passed.pop("content-type", None)
        return Response(status_code=204 if head_as_get and reply.is_success else status, headers=passed)
    if status >= 400 and not _is_error_body(body):
        return _wrapped_error(request, status, endpoint, body)
    if mapped and reply.is_success:
        body = remote.map_listing(endpoint, body, catalog.codec)
    if reply.is_success and parsing.context(request).list_filtered:
        body = _filtered_listing(request, catalog.name, template, body)
    return Response(body, status_code=status, headers=passed)


def _filtered_listing(request: Request, catalog: str, template: str, body: bytes) -> bytes:
    """An upstream listing cut down to what the caller may see (``handling.access.Access.listing``)."""
    context = parsing.context(request)
    listing = json.loads(body)
    if template.endswith("/namespaces"):
        shown = visible_namespaces(context, catalog, [tuple(ns) for ns in listing.get("namespaces") or ()])
        listing["namespaces"] = [list(ns) for ns in shown]
    else:
        kind = SecurableType.VIEW if template.endswith("/views") else SecurableType.TABLE
        idents = [TableIdent(tuple(i["namespace"]), i["name"]) for i in listing.get("identifiers") or ()]
        shown_idents = visible_objects(context, catalog, idents, kind)
        listing["identifiers"] = [{"namespace": list(i.namespace), "name": i.name} for i in shown_idents]
    listing_tokens.seal_next_token(request, listing)
    return json.dumps(listing).encode()


def _is_error_body(body: bytes) -> bool:
    try:
        error = json.loads(body).get("error")
    except (ValueError, UnicodeDecodeError, AttributeError):
        return False
    return isinstance(error, dict) and "type" in error and "message" in error


def _wrapped_error(request: Request, status: int, endpoint: str, body: bytes) -> Response:
    """An upstream error without an IcebergErrorResponse body (a gateway's HTML page, say)."""
    if endpoint in remote.AMBIGUOUS and status in (500, 502, 504):  # the commit may have happened
        type_name = classify(CommitStateUnknown(""))[1]
    else:
        type_name = type_for_status(status)
    snippet = body[:200].decode("utf-8", "replace").strip()
    message = f"The upstream catalog answered {status} without an Iceberg error body" + (
        f": {snippet}" if snippet else ""
    )
    return error_response(request, status, type_name, message)
