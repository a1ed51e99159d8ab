"""The spec's ``Idempotency-Key`` header: replay the finalized outcome of a mutation on retry.

Finalized (stored and replayed): 2xx and deterministic 4xx, including 409. Scan planning's keys are ignored
(its answers are large and change nothing: a retry plans again). Not finalized: 5xx,
and 4xx that depend on the moment rather than the request (401, 403, 408, 419, 429). A key is
scoped to the authenticated principal and bound to the request it first came with (method, path,
query and body): reusing it for another request is a 400. A table answer is kept without its metadata and
vended credentials, and rebuilt from its metadata file when replayed (``replay``). A duplicate that arrives while the
first is still running waits for it and gets the same answer, on any replica (the outcomes live
in the state database); if the process running the first dies, the duplicate runs it instead.
This middleware must run inside ``Authentication`` (it needs the principal).
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Protocol
from urllib.parse import unquote_plus

from starlette.requests import Request
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from irc_proxy.errors import BadRequest, CatalogError, ServiceUnavailable
from irc_proxy.handling.catalog import Catalogs
from irc_proxy.http import parsing, replay
from irc_proxy.http.app_state import from_scope
from irc_proxy.http.errors import response_for
from irc_proxy.http.routes import OPERATIONS
from irc_proxy.metrics import IDEMPOTENT_REPLAYS
from irc_proxy.threads import ThreadRunner

log = logging.getLogger("irc_proxy.idempotency")

HEADER = b"idempotency-key"
REPLAYED_HEADER = "Idempotent-Replayed"
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_NOT_FINAL = frozenset({401, 403, 408, 419, 429})
_NO_KEY = frozenset({"reportMetrics", "planTableScan", "fetchScanTasks"})
"""Operations whose key is ignored: reportMetrics has none in the spec; planning's answers change nothing a
retry could repeat, and keeping them (up to ``max_response_bytes`` each, per key) let a reader fill the state
database."""
WAIT_SECONDS = 150.0
"""How long a duplicate waits for a first request whose process is alive (one that died is taken over at once;
afterwards the duplicate gets 503 with Retry-After)."""


class Claim(Protocol):
    """``irc_proxy.stores.idempotency.Claim``: ``state`` is claimed, finished, mismatch or in-progress."""

    @property
    def state(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def status(self) -> int: ...
    @property
    def headers(self) -> list[tuple[str, str]]: ...
    @property
    def body(self) -> bytes: ...


class OutcomeStore(Protocol):
    """What this middleware needs of ``irc_proxy.stores.idempotency.IdempotencyStore``."""

    async def claim(self, principal: str, key: str, fingerprint: str, wait_seconds: float) -> Claim: ...

    async def finish(
        self, principal: str, key: str, owner: str, status: int, headers: list[tuple[str, str]], body: bytes
    ) -> None: ...

    async def release(self, principal: str, key: str, owner: str) -> None: ...


KEYED_METHODS = frozenset({"POST", "DELETE"})


def _mutations() -> list[tuple[str, re.Pattern[str], str]]:
    patterns = []
    for op in OPERATIONS:
        if op.method in KEYED_METHODS and op.operation_id not in _NO_KEY:
            for template in (op.template, op.template.replace("/{prefix}", "")):
                regex, _format, _convertors = compile_path(template)  # "{name}": one path segment
                patterns.append((op.method, regex, op.operation_id))
    return patterns


MUTATIONS = _mutations()


def mutation(method: str, path: str) -> tuple[str, str | None] | None:
    """The operation id and catalog name (None: the default) of a mutation that honours ``Idempotency-Key``."""
    for m, regex, operation in MUTATIONS:
        if method == m and (found := regex.match(path)):
            prefix = found.groupdict().get("prefix")
            return operation, None if prefix is None else unquote_plus(prefix)
    return None


def accepts_key(method: str, path: str) -> bool:
    """Whether ``method path`` is a mutation that honours ``Idempotency-Key``."""
    return mutation(method, path) is not None


def finalized(status: int) -> bool:
    """Whether an outcome with ``status`` is stored and replayed."""
    return 200 <= status < 300 or (400 <= status < 500 and status not in _NOT_FINAL)


def fingerprint(scope: Scope, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (scope["method"].encode(), scope.get("raw_path") or scope["path"].encode(), scope["query_string"]):
        digest.update(part + b"\0")
    digest.update(body)
    return digest.hexdigest()


async def read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


class Idempotency:
    """Claim the key, run the request once, store its outcome; replay it for duplicates."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in KEYED_METHODS:  # reads: nothing to do
            await self.app(scope, receive, send)
            return
        shared = from_scope(scope)
        store: OutcomeStore | None = shared.idempotency if shared is not None else None
        key = dict(scope["headers"]).get(HEADER)
        found = None if key is None or store is None else mutation(scope["method"], scope["path"])
        if shared is None or key is None or store is None or found is None:
            await self.app(scope, receive, send)
            return
        where = _Where(shared.catalogs, shared.threads, *found)
        request = Request(scope)
        text = key.decode("latin-1").strip()
        if not _UUID.match(text):
            await response_for(request, BadRequest("Idempotency-Key must be a UUID"))(scope, receive, send)
            return
        body = await read_body(receive)
        principal = parsing.context(Request(scope)).principal
        try:
            claim = await store.claim(principal, text.lower(), fingerprint(scope, body), WAIT_SECONDS)
        except ServiceUnavailable as exc:
            await response_for(request, exc)(scope, receive, send)
            return
        if claim.state == "claimed":
            await self._run(scope, receive, send, body, _Owned(store, principal, text.lower(), claim.owner, where))
        else:
            await self._answer_without_running(request, claim, send, where)

    async def _answer_without_running(self, request: Request, claim: Claim, send: Send, where: _Where) -> None:
        if claim.state == "finished":
            try:
                stored, body = await where.give(claim.headers, claim.body)
            except CatalogError as exc:
                await response_for(request, exc)(request.scope, request.receive, send)
                return
            IDEMPOTENT_REPLAYS.inc()
            headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in stored]
            headers.append((REPLAYED_HEADER.lower().encode(), b"true"))
            await send({"type": "http.response.start", "status": claim.status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if claim.state == "mismatch":
            response = response_for(request, BadRequest("Idempotency-Key was already used for a different request"))
        else:
            response = response_for(request, ServiceUnavailable("A request with this Idempotency-Key is still running"))
            response.headers["Retry-After"] = "1"
        await response(request.scope, request.receive, send)

    async def _run(self, scope: Scope, receive: Receive, send: Send, body: bytes, claim: _Owned) -> None:
        replayed = False

        async def replay_receive() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        start: Message | None = None
        chunks: list[bytes] = []

        async def capturing_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await claim.settle(start, b"".join(chunks))
            await send(start)
            await send({"type": "http.response.body", "body": b"".join(chunks)})

        try:
            await self.app(scope, replay_receive, capturing_send)
        finally:
            await claim.abandon()


class _Where:
    """The operation a key was sent to and its catalog: what of its answer is kept, and how it is given again."""

    def __init__(self, catalogs: Catalogs, threads: ThreadRunner, operation: str, catalog: str | None) -> None:
        self.catalogs, self.threads, self.operation, self.catalog = catalogs, threads, operation, catalog

    async def keep(self, headers: replay.Headers, body: bytes) -> tuple[replay.Headers, bytes]:
        return await replay.keep(self.catalogs, self.threads, self.operation, self.catalog, headers, body)

    async def give(self, headers: replay.Headers, body: bytes) -> tuple[replay.Headers, bytes]:
        return await replay.give(self.catalogs, self.catalog, headers, body)


class _Owned:
    """One claimed key: settled exactly once, with the outcome or by giving it up."""

    def __init__(self, store: OutcomeStore, principal: str, key: str, owner: str, where: _Where) -> None:
        self.store, self.principal, self.key, self.owner = store, principal, key, owner
        self.where = where
        self.settled = False

    async def settle(self, start: Message, body: bytes) -> None:
        status = int(start["status"])
        try:
            if finalized(status):
                headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in start.get("headers", [])]
                if 200 <= status < 300:
                    headers, body = await self.where.keep(headers, body)
                await self.store.finish(self.principal, self.key, self.owner, status, headers, body)
            else:
                await self.abandon()
        except ServiceUnavailable as exc:
            log.warning("could not store the outcome of Idempotency-Key %s: %s", self.key, exc.message)
        except CatalogError as exc:  # the answer's catalog went away meanwhile: keep nothing
            log.warning("could not keep the outcome of Idempotency-Key %s: %s", self.key, exc.message)
            await self.abandon()
        self.settled = True

    async def abandon(self) -> None:
        if self.settled:
            return
        self.settled = True
        try:
            await self.store.release(self.principal, self.key, self.owner)
        except ServiceUnavailable as exc:
            log.warning("could not release Idempotency-Key %s: %s", self.key, exc.message)
