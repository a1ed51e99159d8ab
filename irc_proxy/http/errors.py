"""Errors as HTTP answers: the spec's IcebergErrorResponse from ``irc_proxy.errors.ANSWERS``, and the handlers.

Every error status the server answers comes from that one table (through ``classify`` or, for a bare
status, ``type_for_status``); OAuth2 token refusals keep RFC 6749's body. Upstream error bodies that
are already in the spec's shape are passed through unchanged (``http.forward``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from irc_proxy import errors
from irc_proxy.http.app_state import context_of
from irc_proxy.http.parsing import context
from irc_proxy.http.responses import json_response
from irc_proxy.text import printable

log = logging.getLogger("irc_proxy.http")


def error_response(request: Request, status: int, type_name: str, message: str) -> Response:
    """The spec's IcebergErrorResponse; HEAD responses carry no body (but the headers a GET would)."""
    if request.method == "HEAD":
        return Response(status_code=status, media_type="application/json")
    body = {"error": {"message": message, "type": type_name, "code": status}}
    return Response(json.dumps(body), status_code=status, media_type="application/json")


def classify(exc: errors.CatalogError) -> tuple[int, str]:
    """The status and Iceberg type a domain error is answered with (500 for one outside the table)."""
    return errors.answer(exc) or (500, "InternalServerError")


def type_for_status(status: int) -> str:
    """The Iceberg type for a status that came without one (RESTException when the status says nothing)."""
    cls = errors.for_status(status)
    return errors.ANSWERS[cls][1] if cls is not None else "RESTException"


def response_for(request: Request, exc: errors.CatalogError) -> Response:
    """The spec's error response for a domain error; an OAuth2 token refusal in RFC 6749's shape instead."""
    if isinstance(exc, errors.TokenRequestError):
        return oauth_response(exc)
    status, type_name = classify(exc)
    return error_response(request, status, type_name, exc.message)


_OAUTH_STATUS = {"invalid_client": 401, "slow_down": 429, "temporarily_unavailable": 503}
"""RFC 6749 5.2: other refusals (invalid_request, invalid_grant, unsupported_grant_type) are 400s."""
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def oauth_response(exc: errors.TokenRequestError) -> Response:
    """A refused token request: ``{error, error_description}``, never cached."""
    status = _OAUTH_STATUS.get(exc.error, 400)
    headers = NO_STORE | ({"WWW-Authenticate": 'Basic realm="irc-proxy"'} if status == 401 else {})
    if exc.retry_after is not None:
        headers = headers | {"Retry-After": str(exc.retry_after)}
    return json_response({"error": exc.error, "error_description": exc.description}, status, headers)


async def catalog_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, errors.CatalogError)
    if isinstance(exc, errors.Forbidden):
        context(request).audit.refuse(exc.message)
    return response_for(request, exc)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    response = error_response(request, exc.status_code, type_for_status(exc.status_code), str(exc.detail))
    response.headers.update(exc.headers or {})
    return response


async def unexpected_error(request: Request, exc: Exception) -> Response:
    """Anything unforeseen: log it with the request id, answer 500 without internals."""
    record = context_of(request.scope)
    request_id = (record.request_id if record is not None else "") or "-"
    log.exception("unhandled error in %s %s (request %s)", request.method, request.url.path, request_id)
    return error_response(request, 500, "InternalServerError", f"Internal server error (request id {request_id})")


async def client_gone(request: Request, exc: Exception) -> Response:
    """A request whose body never came whole: its client closed or reset the connection, or sent no byte of the
    body for ``server.read_timeout_seconds`` (an ``Expect: 100-continue`` client that never sends it). A 400 in the
    access log, not an error of the server: no traceback. It went to ``unexpected_error`` before, a 500 and ~2.4 KB
    of ERROR traceback each, which one anonymous client sending a request's head and resetting made at ~1.5 MB a
    second of log (and a 500 rate for the alerts). Nobody reads the answer."""
    return response_for(request, errors.BadRequest("The request body ended before its declared length"))


SHOWN_PATH = 160
"""The most of an unknown path a 404 echoes (escaped): enough to recognise it, never a whole long input."""
_BASE = "/v1/{prefix}/namespaces/..."


def unknown_path(method: str, path: str) -> str:
    """The message of a 404 for a path no route serves: the path (bounded, escaped) and where the API is.

    A wrong base URI is the common cause: a client's ``uri`` that ends in ``/v1`` (requests arrive as
    ``/v1/v1/config``), that carries a reverse proxy's path (``/api/catalog/v1/config``) or a prefix
    (``/v1/local/v1/config``). Those get the part to drop from the ``uri``; any other path the base.
    """
    shown = printable(path if len(path) <= SHOWN_PATH else path[:SHOWN_PATH] + "...")
    message = f"No route for {printable(method[:16])} {shown}"
    probe = path + "/"  # a path that ends in /v1 is a base too
    base, found, rest = probe.partition("/v1/")
    if found and base:  # /api/catalog/v1/... : a path in front of the API
        extra = printable(base if len(base) <= 64 else base[:64] + "...")
        return (
            f"{message}: the catalog API is at /v1/config and {_BASE} on this server; the client's uri seems to "
            f"include {extra}: set it to the server's base URL (scheme://host:port) without that path (or have the "
            "reverse proxy strip it)"
        )
    before, twice, _ = rest.partition("/v1/")
    if found and (rest.startswith("v1/") or (twice and "/" not in before)):  # /v1/v1/..., /v1/local/v1/...
        extra = "/v1" if rest.startswith("v1/") else "/v1/" + printable(before[:64])
        return (
            f"{message}: the client's uri seems to end in {extra}: set it to the server's base URL "
            f"(scheme://host:port) without {extra}; a catalog is picked by the client's `warehouse` (the prefix)"
        )
    return f"{message}: the catalog API is /v1/config and {_BASE} (GET /v1/config lists every endpoint)"


async def no_route(scope: Scope, receive: Receive, send: Send) -> None:
    """The router's default app: a path no route serves is the spec's 404 with a hint (``unknown_path``)."""
    raise errors.NotFound(unknown_path(scope.get("method", "GET"), scope.get("path", "")))


ExceptionHandler = Callable[[Request, Exception], Awaitable[Response]]
EXCEPTION_HANDLERS: dict[type[Exception], ExceptionHandler] = {
    errors.CatalogError: catalog_error,
    HTTPException: http_error,
    ClientDisconnect: client_gone,
    Exception: unexpected_error,
}


ROUTE_HANDLERS: tuple[dict[Any, ExceptionHandler], dict[int, ExceptionHandler]] = (
    {errors.CatalogError: catalog_error, HTTPException: http_error},
    {},
)
"""What Starlette's per-route wrapper answers (``scope["starlette.exception_handlers"]``, as its
``ExceptionMiddleware`` would set it): the domain errors, inside every middleware below ``Edge`` (an
``Idempotency-Key`` keeps a 409). Anything else goes up to ``Edge``."""
DOMAIN_ERRORS = (errors.CatalogError, HTTPException)


async def error_answer(request: Request, exc: Exception) -> Response:
    """The answer to ``exc``, raised while serving ``request``: the handler of its nearest class above."""
    for cls in type(exc).__mro__:
        handler = EXCEPTION_HANDLERS.get(cls)
        if handler is not None:
            return await handler(request, exc)
    return await unexpected_error(request, exc)  # not an Exception subclass: never raised here
