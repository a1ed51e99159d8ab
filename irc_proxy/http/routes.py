"""The route table: every operation the server implements, with its spec path template.

The same table drives routing (with and without ``{prefix}``) and the ``endpoints`` list that
``/v1/config`` advertises for each catalog, so what is advertised is exactly what is served.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from irc_proxy.errors import Unsupported
from irc_proxy.handling import remote
from irc_proxy.handling.authz import Privilege as P
from irc_proxy.handling.authz import SecurableType
from irc_proxy.handling.catalog import Catalog
from irc_proxy.http import access, credentials, forward, namespaces, tables, views
from irc_proxy.http.access import Authorize, on_namespace, on_table, on_view
from irc_proxy.http.parsing import catalog

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    handler: Endpoint
    needs: Callable[[Catalog], bool] | None = None
    """A catalog serves this operation only if ``needs(catalog)``."""
    authorize: Authorize = access.admin_only
    """The privilege check run before the handler (administrators only unless an operation says otherwise)."""

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.template}"

    @property
    def operation_id(self) -> str:
        """The spec's operationId (``loadTable``), as audit records name the operation."""
        name = self.handler.__name__
        head, *rest = name.split("_")
        return _OPERATION_IDS.get(name, head + "".join(part.title() for part in rest))


_OPERATION_IDS = {"load_namespace": "loadNamespaceMetadata", "commit_table": "updateTable"}
NS = "/v1/{prefix}/namespaces/{namespace}"
TABLE = NS + "/tables/{table}"
VIEW = NS + "/views/{view}"


def _views(catalog: Catalog) -> bool:
    return catalog.views is not None


def _vending(catalog: Catalog) -> bool:
    return catalog.vending is not None


OPERATIONS: list[Operation] = [
    Operation("GET", "/v1/{prefix}/namespaces", namespaces.list_namespaces, authorize=access.list_namespaces),
    Operation("POST", "/v1/{prefix}/namespaces", namespaces.create_namespace, authorize=access.create_namespace),
    Operation("GET", NS, namespaces.load_namespace, authorize=on_namespace(P.NAMESPACE_USE)),
    Operation("HEAD", NS, namespaces.namespace_exists, authorize=access.existence(SecurableType.NAMESPACE)),
    Operation("DELETE", NS, namespaces.drop_namespace, authorize=on_namespace(P.NAMESPACE_DROP)),
    Operation("POST", NS + "/properties", namespaces.update_properties, authorize=on_namespace(P.NAMESPACE_PROPERTIES)),
    Operation("GET", NS + "/tables", tables.list_tables, authorize=access.list_tables),
    Operation("POST", NS + "/tables", tables.create_table, authorize=on_namespace(P.TABLE_CREATE)),
    Operation("POST", NS + "/register", tables.register_table, authorize=access.register_table),
    Operation("GET", TABLE, tables.load_table, authorize=on_table(P.TABLE_READ)),
    Operation("HEAD", TABLE, tables.table_exists, authorize=access.existence(SecurableType.TABLE)),
    Operation("POST", TABLE, tables.commit_table, authorize=access.commit_table),
    Operation("DELETE", TABLE, tables.drop_table, authorize=on_table(P.TABLE_DROP)),
    Operation("POST", TABLE + "/unregister", tables.unregister_table, authorize=on_table(P.TABLE_DROP)),
    Operation("POST", TABLE + "/metrics", tables.report_metrics, authorize=on_table(P.TABLE_READ)),
    Operation("GET", TABLE + "/credentials", credentials.load_credentials, _vending, on_table(P.TABLE_READ)),
    Operation("POST", TABLE + "/sign", credentials.sign_request, _vending, on_table(P.TABLE_READ)),
    Operation(
        "POST",
        "/v1/{prefix}/tables/rename",
        tables.rename_table,
        authorize=access.renaming(P.TABLE_DROP, P.TABLE_CREATE, SecurableType.TABLE),
    ),
    Operation(
        "POST", "/v1/{prefix}/transactions/commit", tables.commit_transaction, authorize=access.commit_transaction
    ),
    Operation("GET", NS + "/views", views.list_views, _views, access.list_views),
    Operation("POST", NS + "/views", views.create_view, _views, on_namespace(P.VIEW_CREATE)),
    Operation("GET", VIEW, views.load_view, _views, on_view(P.VIEW_READ)),
    Operation("HEAD", VIEW, views.view_exists, _views, access.existence(SecurableType.VIEW)),
    Operation("POST", VIEW, views.replace_view, _views, on_view(P.VIEW_REPLACE)),
    Operation("DELETE", VIEW, views.drop_view, _views, on_view(P.VIEW_DROP)),
    Operation(
        "POST",
        "/v1/{prefix}/views/rename",
        views.rename_view,
        _views,
        access.renaming(P.VIEW_DROP, P.VIEW_CREATE, SecurableType.VIEW),
    ),
    Operation("POST", NS + "/register-view", views.register_view, _views, on_namespace(P.VIEW_CREATE)),
]


def serves(catalog: Catalog, op: Operation) -> bool:
    """Whether the catalog serves ``op``; for a remote catalog, what its upstream serves decides."""
    if (upstream := catalog.remote) is not None:
        views = catalog.views is not None
        return remote.placement(upstream.discovered, op.endpoint, upstream.mapped_namespaces, views) is not None
    return op.needs is None or op.needs(catalog)


def endpoints_for(catalog: Catalog) -> list[str]:
    """The ``endpoints`` list of ``/v1/config`` for one catalog."""
    return [op.endpoint for op in OPERATIONS if serves(catalog, op)]


def _dispatch(handlers: dict[str, Operation]) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        operation = handlers.get(request.method)
        if operation is None:
            raise HTTPException(405, f"Method {request.method} is not allowed here", {"Allow": ", ".join(handlers)})
        request.state.audit_operation, request.state.audit_params = operation.operation_id, dict(request.path_params)
        target = catalog(request)
        if target.remote is not None:
            await forward.discover(request, target)  # learns what the upstream serves (once)
        if not serves(target, operation):
            raise Unsupported(f"{operation.endpoint} is not supported by this catalog")
        if access.authorizer(request).enabled:
            await operation.authorize(request)
        if target.remote is not None:
            return await forward.run(request, target, operation.method, operation.template, operation.handler)
        return await operation.handler(request)

    return endpoint


def catalog_routes(operations: list[Operation]) -> list[BaseRoute]:
    """Starlette routes: each template without the prefix first, then with it."""
    by_path: dict[str, dict[str, Operation]] = {}
    for op in operations:
        by_path.setdefault(op.template, {})[op.method] = op
    unprefixed, prefixed = [], []
    for template, handlers in by_path.items():
        methods = list(handlers) + (["HEAD"] if "GET" in handlers and "HEAD" not in handlers else [])
        unprefixed.append(Route(template.replace("/{prefix}", ""), _dispatch(handlers), methods=list(set(methods))))
        prefixed.append(Route(template, _dispatch(handlers), methods=list(set(methods))))
    return [*unprefixed, *prefixed]
