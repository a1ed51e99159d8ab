"""Pure ASGI middleware: the per-request ``Edge`` (ids, raw-path routing, draining, metrics, audit,
access log) and the body size limit.

One outer layer does everything that only decorates the scope or watches ``send``: each extra layer
costs a coroutine frame and a ``send``/``receive`` wrapper per request, and on the load path the
pipeline used to cost more than the handler.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from irc_proxy.errors import PayloadTooLarge
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.http.app_state import begin, from_scope
from irc_proxy.http.audit import submit_record
from irc_proxy.http.errors import ROUTE_HANDLERS, error_answer, response_for, unexpected_error
from irc_proxy.http.headers import headers_of
from irc_proxy.http.metrics import observe
from irc_proxy.http.request_ids import new_request_id
from irc_proxy.log_format import REQUEST_ID
from irc_proxy.logs import column, info
from irc_proxy.text import field

access_log = logging.getLogger("irc_proxy.access")
PATH_SHOWN = 1024
"""Characters of a path an access log line shows (then ``...(N more)``)."""
METHOD_SHOWN = 32
"""Characters of a method an access log line shows (HTTP/2 lets a client send any)."""
_HTTP1 = frozenset({"1.0", "1.1"})
_METHOD_COLUMNS = {method: column(method, METHOD_SHOWN) for method in ("GET", "HEAD", "POST", "PUT", "DELETE")}
"""The access log's method column of the usual methods, made once (any other is made per request)."""


def _route_path(raw_path: bytes) -> str:
    """The raw path routing sees: no query, and a trailing slash ignored (``/v1/x/namespaces/``)."""
    path = raw_path.split(b"?", 1)[0].decode("latin-1")
    return path[:-1] if len(path) > 1 and path.endswith("/") else path


class Edge:
    """The outermost middleware of every HTTP request, in this order of duties:

    - **request id**: ``X-Request-Id`` (kept if the client sent a sane one, else a new one) in the
      request's record (``app_state.begin``), on the response and on every log line
      (``irc_proxy.logs.REQUEST_ID``);
    - **status**: the response's, in the request's record once it begins (``RequestContext.status``);
    - **raw-path routing**: ASGI servers put the percent-decoded path in ``scope["path"]``, where
      ``%2F`` inside a name would become a path separator and ``%1F`` a control character. The
      spec's path segments must be split first and decoded one by one, so routing sees ``raw_path``
      (a trailing slash ignored, so ``/v1/local/namespaces/`` is served rather than redirected);
    - **draining**: a handler may answer before reading the body (a 404 for an unknown table, a
      HEAD). hypercorn closes the connection when a response completes while the request body is
      still unread, and a client that reuses that connection from its pool fails its next request.
      So the rest of the body (up to ``drain_limit`` bytes; a larger one still closes the
      connection) is read just before the last part of the response is sent. Requests without a
      body skip this;
    - **errors**: a domain error an endpoint raises is answered where it is raised (``http.errors.ROUTE_HANDLERS``,
      for the routes); any other exception raised before the answer began is answered here with the handler of
      its class (``http.errors.error_answer``: the spec's error model, a 500 without internals for anything
      unforeseen, logged once); one raised after is logged and goes on to the server, which cuts the connection;
    - afterwards: the request's **metrics** (``irc_proxy.http.metrics.observe``), its **audit
      record** (``irc_proxy.http.audit.submit_record``) and the **access log** line.
    """

    def __init__(self, app: ASGIApp, drain_limit: int = 1 << 20) -> None:
        self.app = app
        self.drain_limit = drain_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        sent = headers_of(scope)
        has_body = sent.has_body
        request_id, shown_id = _request_id(sent.request_id)
        id_header = (b"x-request-id", request_id.encode("latin-1"))
        context = begin(scope, request_id)
        inner = _routing_scope(scope)
        inner["starlette.exception_handlers"] = ROUTE_HANDLERS  # Starlette's route wrappers answer domain errors

        if has_body:
            finished = False

            async def tracking_receive() -> Message:
                nonlocal finished
                message = await receive()
                if message["type"] == "http.disconnect" or not message.get("more_body", False):
                    finished = True
                return message

            receive_app: Receive = tracking_receive
        else:
            receive_app = receive

        async def edge_send(message: Message) -> None:
            kind = message["type"]
            if kind == "http.response.start":
                context.status = message["status"]
                message["headers"] = [*message.get("headers", ()), id_header]
            elif has_body and kind == "http.response.body" and not message.get("more_body", False):
                drained = 0
                while not finished and drained <= self.drain_limit:
                    drained += len((await tracking_receive()).get("body", b""))
            await send(message)

        # Every log line of this request carries its id. Not reset: each request runs in its own task (context).
        REQUEST_ID.set(request_id)
        try:
            await self.app(inner, receive_app, edge_send)
        except Exception as exc:
            request = Request(inner, receive_app)
            if context.status is not None:  # the answer had begun: logged, and the server cuts the connection
                await unexpected_error(request, exc)
                raise
            response = await error_answer(request, exc)
            await response(inner, receive_app, edge_send)
        finally:
            _record(scope, inner, context, time.perf_counter() - started, shown_id)


def _request_id(sent: bytes) -> tuple[str, str]:
    """The request's id (the client's ``X-Request-Id`` when sane, else a new one) and the access log's column."""
    request_id = sent.decode("latin-1")
    if 0 < len(request_id) <= 128 and request_id.isprintable():
        return request_id, field(request_id)  # the client's text: quoted unless plain
    request_id = new_request_id()
    return request_id, request_id


def _routing_scope(scope: Scope) -> Scope:
    """The scope routing sees: its path from ``raw_path`` (``_route_path``), in a copy only when that differs."""
    raw_path = scope.get("raw_path")
    if raw_path:
        path = _route_path(raw_path)
        if path != scope.get("path"):
            return dict(scope, path=path)
    return scope


def _record(scope: Scope, inner: Scope, context: RequestContext, took: float, shown_id: str) -> None:
    """After a request: its metrics, its audit record and its access log line (``shown_id``: the request id as
    the line shows it)."""
    status = context.status or 500
    shared = from_scope(scope)
    observe(inner, status, took, shared.catalogs if shared is not None else None)
    submit_record(shared, context, status, took * 1000)
    if access_log.isEnabledFor(logging.INFO):
        method, raw_path = scope["method"], scope.get("raw_path")
        path = (raw_path or scope.get("path", "").encode()).decode("latin-1")
        client = context.client_id  # the token endpoint's client, escaped: it is the caller's text
        extra = f" client={quote(client[:128], safe='@._-:+')}" if client else ""
        info(  # the method, the path and the id are the client's (HTTP/2 allows spaces): one column each
            access_log,
            "%s %s %d %.1fms id=%s%s",
            _METHOD_COLUMNS.get(method) or column(method, METHOD_SHOWN),
            column(path, PATH_SHOWN),
            status,
            took * 1000,
            shown_id,
            extra,
        )


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413 RequestEntityTooLargeException.

    A declared ``Content-Length`` over the limit is refused before anything is read; a chunked
    body is cut off as soon as it passes the limit. Requests whose body cannot pass the limit
    (none, or a declared length within it) go through untouched.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared, chunked = b"", False
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = value
            elif name == b"transfer-encoding":
                chunked = True
        declared_length = declared.isdigit()  # bytes: ASCII digits only
        if declared_length and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        if not chunked and (declared_length or (not declared and scope.get("http_version") in _HTTP1)):
            # The server enforces the declared length (HTTP/1.1 framing; HTTP/2 checks it too).
            await self.app(scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                raise self._too_large()
            return message

        async def noting_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, noting_send)
        except PayloadTooLarge:
            if started:
                raise
            await self._refuse(scope, receive, send)

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"Request body is larger than the limit of {self.limit} bytes")

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = response_for(Request(scope), self._too_large())
        response.headers["Connection"] = "close"
        await response(scope, receive, send)


class CatalogApp(Starlette):
    """Starlette without its own outer layers: ``Edge`` (the first middleware) answers errors itself.

    Starlette wraps the middleware in its ``ServerErrorMiddleware`` and ``ExceptionMiddleware``: two coroutine
    frames and ``send`` wrappers per request that only turn exceptions into answers. ``Edge`` does that with the
    same handlers (``http.errors``) and sends the answer through its own ``send`` (so an error answer carries
    ``X-Request-Id`` like any other); the catalog routes answer their domain errors in place (``routes.Handler``).
    """

    def build_middleware_stack(self) -> ASGIApp:
        first: object = self.user_middleware[0].cls if self.user_middleware else None
        if first is not Edge:
            raise TypeError("CatalogApp needs Edge as its first middleware: it answers the errors")
        app: ASGIApp = self.router.middleware_stack  # what ``Router.__call__`` calls: one frame less per request
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return app
