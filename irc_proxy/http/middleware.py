"""Pure ASGI middleware: raw-path routing, request ids, the access log and the body size limit."""

from __future__ import annotations

import logging
import time
import uuid

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from irc_proxy.http.errors import error_response
from irc_proxy.logs import REQUEST_ID

access_log = logging.getLogger("irc_proxy.access")


class RawPathRouting:
    """Route on the still-encoded path.

    ASGI servers put the percent-decoded path in ``scope["path"]``, where ``%2F`` inside a name
    would become a path separator and ``%1F`` a control character. The spec's path segments must
    be split first and decoded one by one, so routing sees ``raw_path``.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("raw_path"):
            raw = scope["raw_path"].split(b"?", 1)[0]
            scope = dict(scope, path=raw.decode("latin-1"))
        await self.app(scope, receive, send)


class RequestContext:
    """Give each request an id (``X-Request-Id``, kept if the client sent a sane one), time it, note
    its status in ``scope["state"]`` and log it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
        request_id = sent if 0 < len(sent) <= 128 and sent.isprintable() else uuid.uuid4().hex
        state = scope.setdefault("state", {})
        # Inner middleware (the audit trail) reads the start time and status from the state.
        state.update(request_id=request_id, started=time.perf_counter(), status=500)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode("latin-1"))]
            await send(message)

        # Every log line of this request carries its id. Not reset: each request runs in its own task
        # (context), and the error log of Starlette's outermost middleware runs after this one returns.
        REQUEST_ID.set(request_id)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            raw_path = scope.get("raw_path") or scope.get("path", "").encode()
            access_log.info(
                "%s %s %d %.1fms id=%s",
                scope["method"],
                raw_path.decode("latin-1"),
                state["status"],
                (time.perf_counter() - state["started"]) * 1000,
                request_id,
            )


class DrainUnreadBody:
    """Read what is left of a request body the handler did not consume, before the response ends.

    A handler may answer before reading the body (a 404 for an unknown table, a HEAD). hypercorn
    closes the connection when a response completes while the request body is still unread, and
    a client that reuses that connection from its pool fails its next request. So the rest of the
    body (up to ``limit`` bytes; a larger one still closes the connection) is read just before the
    last part of the response is sent.
    """

    def __init__(self, app: ASGIApp, limit: int = 1 << 20) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        finished = False

        async def tracking_receive() -> Message:
            nonlocal finished
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                finished = True
            return message

        async def draining_send(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                drained = 0
                while not finished and drained <= self.limit:
                    drained += len((await tracking_receive()).get("body", b""))
            await send(message)

        await self.app(scope, tracking_receive, draining_send)


class BodyTooLarge(HTTPException):
    """The request body exceeds ``server.max_body_bytes``: 413 (an HTTPException, so handlers answer it too)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"Request body is larger than the limit of {limit} bytes")


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413 RequestEntityTooLargeException.

    A declared ``Content-Length`` over the limit is refused before anything is read; a chunked
    body is cut off as soon as it passes the limit.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                raise BodyTooLarge(self.limit)
            return message

        async def noting_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, noting_send)
        except BodyTooLarge:
            if started:
                raise
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        exc = BodyTooLarge(self.limit)
        response = error_response(Request(scope), 413, "RequestEntityTooLargeException", str(exc.detail))
        response.headers["Connection"] = "close"
        await response(scope, receive, send)
