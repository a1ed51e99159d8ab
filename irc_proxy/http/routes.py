"""The route table: every operation the server implements, with its spec path template.

The same table drives routing (with and without ``{prefix}``) and the ``endpoints`` list that
``/v1/config`` advertises for each catalog, so what is advertised is exactly what is served. Each
operation's authorization rule is found by its operationId in ``irc_proxy.handling.operations.policy``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property

from starlette.convertors import StringConvertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Receive, Scope, Send

from irc_proxy.errors import Unsupported
from irc_proxy.handling.catalog import Catalog
from irc_proxy.http import access, credentials, forward, namespaces, parsing, planning, tables, views
from irc_proxy.http.bodies import (
    CommitTableRequest,
    CommitTransactionRequest,
    CreateNamespaceRequest,
    RegisterTableRequest,
    RenameTableRequest,
    UpdateNamespacePropertiesRequest,
    _Body,
)
from irc_proxy.http.errors import DOMAIN_ERRORS, error_answer
from irc_proxy.http.parsing import catalog

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    handler: Endpoint
    body: type[_Body] | None = None
    """The body model the operation's authorization rule reads (parsed once: the handler reads it too)."""

    @cached_property  # read several times on every request
    def endpoint(self) -> str:
        return f"{self.method} {self.template}"

    @cached_property  # read on every request (audit records)
    def operation_id(self) -> str:
        """The spec's operationId (``loadTable``), as audit records name the operation."""
        name = self.handler.__name__
        head, *rest = name.split("_")
        return _OPERATION_IDS.get(name, head + "".join(part.title() for part in rest))


_OPERATION_IDS = {"load_namespace": "loadNamespaceMetadata", "commit_table": "updateTable"}
NS = "/v1/{prefix}/namespaces/{namespace}"
TABLE = NS + "/tables/{table}"
VIEW = NS + "/views/{view}"


OPERATIONS: list[Operation] = [
    Operation("GET", "/v1/{prefix}/namespaces", namespaces.list_namespaces),
    Operation("POST", "/v1/{prefix}/namespaces", namespaces.create_namespace, CreateNamespaceRequest),
    Operation("GET", NS, namespaces.load_namespace),
    Operation("HEAD", NS, namespaces.namespace_exists),
    Operation("DELETE", NS, namespaces.drop_namespace),
    Operation("POST", NS + "/properties", namespaces.update_properties, UpdateNamespacePropertiesRequest),
    Operation("GET", NS + "/tables", tables.list_tables),
    Operation("POST", NS + "/tables", tables.create_table),
    Operation("POST", NS + "/register", tables.register_table, RegisterTableRequest),
    Operation("GET", TABLE, tables.load_table),
    Operation("HEAD", TABLE, tables.table_exists),
    Operation("POST", TABLE, tables.commit_table, CommitTableRequest),
    Operation("DELETE", TABLE, tables.drop_table),
    Operation("POST", TABLE + "/unregister", tables.unregister_table),
    Operation("POST", TABLE + "/metrics", tables.report_metrics),
    Operation("GET", TABLE + "/credentials", credentials.load_credentials),
    Operation("POST", TABLE + "/sign", credentials.sign_request),
    Operation("POST", TABLE + "/plan", planning.plan_table_scan),
    Operation("GET", TABLE + "/plan/{plan-id}", planning.fetch_planning_result),
    Operation("DELETE", TABLE + "/plan/{plan-id}", planning.cancel_planning),
    Operation("POST", TABLE + "/tasks", planning.fetch_scan_tasks),
    Operation("POST", "/v1/{prefix}/tables/rename", tables.rename_table, RenameTableRequest),
    Operation("POST", "/v1/{prefix}/transactions/commit", tables.commit_transaction, CommitTransactionRequest),
    Operation("GET", NS + "/views", views.list_views),
    Operation("POST", NS + "/views", views.create_view),
    Operation("GET", VIEW, views.load_view),
    Operation("HEAD", VIEW, views.view_exists),
    Operation("POST", VIEW, views.replace_view),
    Operation("DELETE", VIEW, views.drop_view),
    Operation("POST", "/v1/{prefix}/views/rename", views.rename_view, RenameTableRequest),
    Operation("POST", NS + "/register-view", views.register_view),
]


def serves(catalog: Catalog, op: Operation) -> bool:
    """Whether the catalog serves ``op`` (here or forwarded: the catalog decides)."""
    return catalog.serves(op.endpoint)


def endpoints_for(catalog: Catalog) -> list[str]:
    """The ``endpoints`` list of ``/v1/config`` for one catalog."""
    return [op.endpoint for op in OPERATIONS if serves(catalog, op)]


def _dispatch(handlers: dict[str, Operation]) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        operation = handlers.get(request.method)
        if operation is None:
            raise HTTPException(405, f"Method {request.method} is not allowed here", {"Allow": ", ".join(handlers)})
        context, endpoint = parsing.context(request), operation.endpoint
        context.audit.name(operation.operation_id, request.path_params)
        target = catalog(request)
        await target.discover(context)  # a remote catalog: what it serves (once)
        if not target.serves(endpoint):
            raise Unsupported(f"{endpoint} is not supported by this catalog")
        if access.authorizer(request).enabled:  # the rule of handling/operations/policy.py for this operation
            await access.authorize(request, operation.operation_id, operation.body)
        passed = await forward.passed_through(request, target, endpoint)  # a remote catalog's answer
        return passed if passed is not None else await operation.handler(request)

    return endpoint


# Spec routes this server does not serve (never advertised): answered 406 as the spec's
# UnsupportedOperationException instead of a bare 404 that clients would read as "no such table".
UNSERVED: dict[str, list[str]] = {
    NS + "/functions": ["GET"],
    NS + "/functions/{function}": ["GET"],
}


async def unserved(request: Request) -> Response:
    catalog(request)  # an unknown prefix is still 404 NoSuchWarehouseException
    template = request.scope["route"].path
    if "{prefix}" not in template:
        template = template.replace("/v1/", "/v1/{prefix}/", 1)
    raise Unsupported(f"{request.method} {template} is not supported by this server")


class Handler:
    """An endpoint as the route's ASGI app: Starlette's ``request_response`` without its wrapper of ``receive`` and
    ``send``. A domain error is answered here, as that wrapper would (inside the middleware: an idempotent request
    keeps its 409); anything else goes up to ``middleware.Edge``."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        try:
            response = await self.endpoint(request)
        except DOMAIN_ERRORS as exc:
            response = await error_answer(request, exc)
        await response(scope, receive, send)


def catalog_routes(operations: list[Operation]) -> list[BaseRoute]:
    """Starlette routes: each template without the prefix first, then with it; then the unserved ones."""
    by_path: dict[str, dict[str, Operation]] = {}
    for op in operations:
        by_path.setdefault(op.template, {})[op.method] = op
    unprefixed, prefixed = [], []
    for spec_template, handlers in by_path.items():
        template = spec_template.replace("{plan-id}", "{plan_id}")  # a Starlette parameter name
        methods = list(handlers) + (["HEAD"] if "GET" in handlers and "HEAD" not in handlers else [])
        methods = list(set(methods))
        unprefixed.append(Route(template.replace("/{prefix}", ""), Handler(_dispatch(handlers)), methods=methods))
        prefixed.append(Route(template, Handler(_dispatch(handlers)), methods=methods))
    for template, verbs in UNSERVED.items():
        unprefixed.append(Route(template.replace("/{prefix}", ""), unserved, methods=verbs))
        prefixed.append(Route(template, unserved, methods=verbs))
    return [*unprefixed, *prefixed]


class SegmentRouter(Router):
    """Starlette's router with an index: only routes that can match the request's shape are tried.

    Every catalog route is a ``Route`` whose parameters match one segment each, so a route with
    another number of segments, or another literal last segment, can never match. The routes that
    can are tried in their original order, so the first full match is the one Starlette's scan
    would pick. Anything else (a 405, a trailing-slash redirect, a 404) is left to Starlette's own
    scan. Routes of other kinds (mounts, ``{name:path}`` parameters) are tried for every request.
    """

    _index: tuple[int, dict[tuple[int, str | None] | None, list[BaseRoute]], frozenset[int]] | None = None

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            index = self._index
            if index is None or index[0] != len(self.routes):  # built on first use (and if routes were added)
                index = self._index = (len(self.routes), _shape_index(self.routes), _plain(self.routes))
            shapes, plain, path = index[1], index[2], scope["path"]
            count, last = path.count("/"), path.rpartition("/")[2]
            for route in shapes.get((count, last)) or shapes.get((count, None)) or shapes[None]:
                if id(route) in plain:  # ``Route.matches`` and ``Route.handle`` without their generality
                    assert isinstance(route, Route)
                    found = route.path_regex.match(path)
                    if found is None or (route.methods and scope["method"] not in route.methods):
                        continue  # Match.NONE or Match.PARTIAL: as below
                    params = found.groupdict()  # every parameter a StringConvertor, whose ``convert`` changes nothing
                    earlier = scope.get("path_params")
                    scope.setdefault("router", self)
                    scope["route"] = route
                    scope["endpoint"] = route.endpoint
                    scope["path_params"] = {**earlier, **params} if earlier else params
                    await route.app(scope, receive, send)  # ``Route.handle`` would check the method again
                    return
                match, child_scope = route.matches(scope)
                if match is Match.FULL:
                    scope.setdefault("router", self)
                    scope["route"] = route
                    scope.update(child_scope)
                    await route.handle(scope, receive, send)
                    return
        await super().app(scope, receive, send)


def _plain(routes: list[BaseRoute]) -> frozenset[int]:
    """The ``id`` of each route that is exactly a Starlette ``Route`` with only string parameters (every catalog
    route): matching one is its regular expression and the method (``self.routes`` keeps them, so ids stay theirs)."""
    return frozenset(
        id(route)
        for route in routes
        if type(route) is Route and all(type(c) is StringConvertor for c in route.param_convertors.values())
    )


def _shape_index(routes: list[BaseRoute]) -> dict[tuple[int, str | None] | None, list[BaseRoute]]:
    """Routes by (number of ``/``, literal last segment or None for a parameter), in their original
    order; each list also holds the routes with a parameter last and those of any shape (key None)."""
    shapes: dict[int, tuple[int, str | None]] = {}
    for route in routes:
        if isinstance(route, Route) and all(isinstance(c, StringConvertor) for c in route.param_convertors.values()):
            last = route.path.rpartition("/")[2]
            shapes[id(route)] = (route.path.count("/"), None if "{" in last else last)
    keys = set(shapes.values()) | {(count, None) for count, _ in shapes.values()}

    def fits(route: BaseRoute, key: tuple[int, str | None]) -> bool:
        shape = shapes.get(id(route))
        return shape is None or (shape[0] == key[0] and shape[1] in (None, key[1]))

    index: dict[tuple[int, str | None] | None, list[BaseRoute]] = {
        key: [r for r in routes if fits(r, key)] for key in keys
    }
    index[None] = [r for r in routes if id(r) not in shapes]
    return index
