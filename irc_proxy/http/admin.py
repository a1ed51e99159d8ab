"""The management API under ``/management/v1``: principals, roles, grants and the audit trail (admins only),
the trash of dropped tables and views (held to the privileges of ``handling.operations.trash_ops``) and table
maintenance runs (``table.write`` on the table: ``handling.operations.maintenance_ops``).

Errors use the Iceberg error model, like the catalog API. Every change is audited and takes effect
on this replica at once (others within ``auth.grants_cache_seconds``).
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, unquote

from pydantic import Field, StrictBool, StrictStr
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from irc_proxy.errors import BadRequest, MethodNotAllowed
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.maintenance.runs import Maintenance
from irc_proxy.handling.naming import TableIdent, validate_namespace
from irc_proxy.handling.operations import maintenance_ops, management, trash_ops
from irc_proxy.handling.operations.management import GrantSpec, Management
from irc_proxy.handling.operations.trash import Restore, Trash, TrashFilter
from irc_proxy.handling.security.access import Access
from irc_proxy.http import access, parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.http.bodies import _Body
from irc_proxy.http.errors import response_for
from irc_proxy.http.responses import json_response, no_content
from irc_proxy.numbers import is_number

BASE = "/management/v1"
Handler = Callable[[Request], Awaitable[Response]]


class CreatePrincipalRequest(_Body):
    name: StrictStr
    roles: list[StrictStr] = Field(default_factory=list)
    credentials: StrictBool | None = None


class CreateRoleRequest(_Body):
    name: StrictStr


class GrantRequest(_Body):
    privilege: StrictStr
    catalog: StrictStr
    namespace: list[StrictStr] = Field(default_factory=list)
    table: StrictStr | None = None
    view: StrictStr | None = None


def _path_name(request: Request, key: str) -> str:
    return management.valid_name(unquote(request.path_params[key]), key)


def management_of(request: Request) -> Management:
    """The management handler of this request's replica (its caches are cleared by each change)."""
    shared = app_state(request)
    token_service = shared.token_service
    return Management(
        access.authorizer(request).store,
        shared.threads,
        [catalog.name for catalog in shared.catalogs.all()],
        shared.settings.auth.mode == "oauth2",
        authorizer=access.authorizer(request),
        clients=None if token_service is None else token_service.clients,
    )


# Principals ----------------------------------------------------------------------------------------
async def list_principals(request: Request) -> Response:
    return json_response(management.principals_json(await management_of(request).principals()))


async def create_principal(request: Request) -> Response:
    """Create a principal (with ``oauth2``, also a client whose secret is returned once)."""
    body = await parsing.body_model(request, CreatePrincipalRequest)
    created = await management_of(request).create_principal(body.name, body.roles, body.credentials)
    return json_response(management.created_json(created), 201, headers={"Cache-Control": "no-store"})


async def get_principal(request: Request) -> Response:
    principal = await management_of(request).principal(_path_name(request, "principal"))
    return json_response(management.principal_json(principal))


async def delete_principal(request: Request) -> Response:
    """Delete the principal; its tokens stop working (here at once, on other replicas within the cache delay)."""
    await management_of(request).delete_principal(_path_name(request, "principal"))
    return no_content()


async def rotate_credentials(request: Request) -> Response:
    """A new client secret for the principal (the old one stops working); returned once."""
    name = _path_name(request, "principal")
    secret = await management_of(request).rotate_credentials(name)
    return json_response(management.credentials_json(name, secret), headers={"Cache-Control": "no-store"})


async def assign_role(request: Request) -> Response:
    await management_of(request).assign(_path_name(request, "principal"), _path_name(request, "role"))
    return no_content()


async def unassign_role(request: Request) -> Response:
    await management_of(request).unassign(_path_name(request, "principal"), _path_name(request, "role"))
    return no_content()


# Roles and grants ------------------------------------------------------------------------------------
async def list_roles(request: Request) -> Response:
    return json_response(management.roles_json(await management_of(request).roles()))


async def create_role(request: Request) -> Response:
    body = await parsing.body_model(request, CreateRoleRequest)
    await management_of(request).create_role(body.name)
    return json_response(management.role_json(body.name, []), 201)


async def get_role(request: Request) -> Response:
    name = _path_name(request, "role")
    return json_response(management.role_json(name, await management_of(request).grants(name)))


async def delete_role(request: Request) -> Response:
    await management_of(request).delete_role(_path_name(request, "role"))
    return no_content()


async def list_grants(request: Request) -> Response:
    return json_response(management.grants_json(await management_of(request).grants(_path_name(request, "role"))))


async def add_grant(request: Request) -> Response:
    role = _path_name(request, "role")
    body = await parsing.body_model(request, GrantRequest)
    spec = GrantSpec(body.privilege, body.catalog, body.namespace, body.table, body.view)
    return json_response(management.grant_json(await management_of(request).add_grant(role, spec)), 201)


async def revoke_grant(request: Request) -> Response:
    raw = request.path_params["grant"]
    if not is_number(raw):
        raise BadRequest(f"Invalid grant id: {raw!r}")
    await management_of(request).revoke(_path_name(request, "role"), int(raw))
    return no_content()


async def list_privileges(request: Request) -> Response:
    return json_response(management.privileges_json())


# The audit trail -------------------------------------------------------------------------------------
def _time(request: Request, key: str) -> datetime.datetime | None:
    raw = request.query_params.get(key)
    if raw is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"Invalid {key}: {raw!r} (expected ISO 8601)") from None
    # In UTC: SQLite compares the stored UTC text, so an offset left on the bound would shift the window.
    return moment.replace(tzinfo=datetime.UTC) if moment.tzinfo is None else moment.astimezone(datetime.UTC)


async def query_audit(request: Request) -> Response:
    """``GET /management/v1/audit?since=&until=&principal=&object=&operation=&decision=&before-id=&limit=``,
    newest first (``before-id``: older than that record, to page)."""
    params = request.query_params
    raw_limit, before = params.get("limit", "100"), params.get("before-id")
    if not is_number(raw_limit) or not 1 <= int(raw_limit) <= 10_000:
        raise BadRequest(f"Invalid limit: {raw_limit!r} (1 to 10000)")
    if before is not None and not is_number(before):
        raise BadRequest("Invalid before-id: the id of a record")
    if params.get("decision") not in (None, "allowed", "denied"):
        raise BadRequest("Invalid decision: allowed or denied")
    shared = app_state(request)
    await shared.auditor.written()  # the records of requests this replica already answered are in the table
    records = await shared.audit_reader.query(
        since=_time(request, "since"),
        until=_time(request, "until"),
        principal=params.get("principal"),
        object_prefix=params.get("object"),
        operation=params.get("operation"),
        decision=params.get("decision"),
        before_id=None if before is None else int(before),
        limit=int(raw_limit),
    )
    return json_response({"records": records})


def _audited(operation: str, handler: Handler, admins_only: bool = False) -> Handler:
    """``handler``, audited as ``management.<operation>`` on its path (and for admins only if asked)."""

    async def endpoint(request: Request) -> Response:
        audit = parsing.context(request).audit
        audit.name(f"management.{operation}")
        audit.object = unquote(request.url.path.removeprefix(BASE + "/"))  # e.g. roles/reader/grants
        if admins_only:
            await access.require_admin(request)
        return await handler(request)

    endpoint.__name__ = handler.__name__
    return endpoint


def _admin(operation: str, handler: Handler) -> Handler:
    return _audited(operation, handler, admins_only=True)


def _route(path: str, wrap: Callable[[str, Handler], Handler] = _admin, **methods: tuple[str, Handler]) -> Route:
    handlers = {method.upper(): wrap(operation, handler) for method, (operation, handler) in methods.items()}

    async def dispatch(request: Request) -> Response:
        handler = handlers.get(request.method)
        if handler is None:
            response = response_for(request, MethodNotAllowed(f"Method {request.method} is not allowed here"))
            response.headers["Allow"] = ", ".join(handlers)
            return response
        return await handler(request)

    return Route(BASE + path, dispatch, methods=list(handlers))


ADMIN_ROUTES = [
    _route("/principals", get=("listPrincipals", list_principals), post=("createPrincipal", create_principal)),
    _route(
        "/principals/{principal}",
        get=("getPrincipal", get_principal),
        delete=("deletePrincipal", delete_principal),
    ),
    _route("/principals/{principal}/rotate-credentials", post=("rotateCredentials", rotate_credentials)),
    _route(
        "/principals/{principal}/roles/{role}",
        put=("assignRole", assign_role),
        delete=("unassignRole", unassign_role),
    ),
    _route("/roles", get=("listRoles", list_roles), post=("createRole", create_role)),
    _route("/roles/{role}", get=("getRole", get_role), delete=("deleteRole", delete_role)),
    _route("/roles/{role}/grants", get=("listGrants", list_grants), post=("addGrant", add_grant)),
    _route("/roles/{role}/grants/{grant}", delete=("revokeGrant", revoke_grant)),
    _route("/privileges", get=("listPrivileges", list_privileges)),
    _route("/audit", get=("queryAudit", query_audit)),
]


# The trash -------------------------------------------------------------------------------------------------
class TrashIdentifier(_Body):
    namespace: list[StrictStr]
    name: StrictStr


class RestoreRequest(_Body):
    identifier: TrashIdentifier | None = None
    create_namespace: StrictBool = Field(default=False, alias="create-namespace")


def _trash(request: Request) -> tuple[Access, Trash, Catalog]:
    catalog = parsing.catalogs(request).get(_path_name(request, "catalog"))
    parsing.context(request).audit.params["prefix"] = quote(catalog.name, safe="")  # the record's catalog
    trash = app_state(request).trash
    return access.of(request, catalog=catalog.name), trash, catalog


async def list_trash(request: Request) -> Response:
    checks, trash, catalog = _trash(request)
    query = request.query_params
    namespace = query.get("namespace")
    which = TrashFilter(
        namespace=None if namespace is None else tuple(namespace.split("\x1f")),
        kind=query.get("kind"),
        dropped_by=query.get("dropped-by"),
    )
    size, token = query.get("page-size", "100"), query.get("page-token") or "0"
    valid = is_number(size) and is_number(token, 12)
    if not valid or not 1 <= int(size) <= 1000:
        raise BadRequest("Invalid page: page-size must be 1..1000 and page-token one this API returned")
    entries, next_offset = await trash_ops.list_entries(checks, trash, catalog, which, int(token), int(size))
    body: dict[str, Any] = {"entries": [e.to_json() for e in entries]}
    if next_offset is not None:
        body["next-page-token"] = str(next_offset)
    return json_response(body)


async def restore_trash_entry(request: Request) -> Response:
    checks, trash, catalog = _trash(request)
    body = await parsing.body_model(request, RestoreRequest) if await request.body() else RestoreRequest()
    target = None
    if body.identifier is not None:
        validate_namespace(body.identifier.namespace)
        target = TableIdent(tuple(body.identifier.namespace), body.identifier.name)
    restore = Restore(target, body.create_namespace)
    restored = await trash_ops.restore_entry(checks, trash, catalog, _path_name(request, "entry"), restore)
    return json_response(
        {
            "identifier": {"namespace": list(restored.ident.namespace), "name": restored.ident.name},
            "kind": restored.kind,
            "metadata-location": restored.metadata_location,
        }
    )


async def expunge_trash_entry(request: Request) -> Response:
    checks, trash, catalog = _trash(request)
    await trash_ops.expunge_entry(checks, trash, catalog, _path_name(request, "entry"))
    return no_content()


ADMIN_ROUTES += [  # not for admins only: trash_ops holds callers to the privileges of the drop and the restore
    _route("/catalogs/{catalog}/trash", _audited, get=("listTrash", list_trash)),
    _route("/catalogs/{catalog}/trash/{entry}", _audited, delete=("expungeTrashEntry", expunge_trash_entry)),
    _route("/catalogs/{catalog}/trash/{entry}/restore", _audited, post=("restoreTrashEntry", restore_trash_entry)),
]


# Table maintenance -----------------------------------------------------------------------------------------
class MaintenanceTable(_Body):
    namespace: list[StrictStr]
    name: StrictStr


class MaintenanceRunRequest(_Body):
    table: MaintenanceTable
    jobs: list[StrictStr]
    dry_run: StrictBool = Field(default=False, alias="dry-run")


def _maintenance(request: Request) -> tuple[Access, Maintenance, Catalog]:
    catalog = parsing.catalogs(request).get(_path_name(request, "catalog"))
    parsing.context(request).audit.params["prefix"] = quote(catalog.name, safe="")  # the record's catalog
    return access.of(request, catalog=catalog.name), app_state(request).maintenance, catalog


async def request_maintenance_run(request: Request) -> Response:
    """Queue a run; 202 with its id (the worker of some replica runs it)."""
    checks, maintenance, catalog = _maintenance(request)
    body = await parsing.body_model(request, MaintenanceRunRequest)
    validate_namespace(body.table.namespace)
    ident = TableIdent(tuple(body.table.namespace), body.table.name)
    run = await maintenance_ops.request_run(checks, maintenance, catalog, ident, body.jobs, body.dry_run)
    return json_response({"id": run.id, "status": run.status}, 202)


async def get_maintenance_run(request: Request) -> Response:
    checks, maintenance, catalog = _maintenance(request)
    run = await maintenance_ops.read_run(checks, maintenance, catalog, _path_name(request, "run"))
    return json_response(run.to_json())


async def list_maintenance_runs(request: Request) -> Response:
    """``?namespace=a%1Fb&table=t&page-size=&page-token=``, newest first (``table`` needs ``namespace``)."""
    checks, maintenance, catalog = _maintenance(request)
    query = request.query_params
    raw_namespace, name = query.get("namespace"), query.get("table")
    namespace = None if raw_namespace is None else tuple(raw_namespace.split("\x1f"))
    if name is not None and namespace is None:
        raise BadRequest("Invalid query: table needs namespace")
    size, token = query.get("page-size", "100"), query.get("page-token") or "0"
    if not (is_number(size) and is_number(token, 12)) or not 1 <= int(size) <= 1000:
        raise BadRequest("Invalid page: page-size must be 1..1000 and page-token one this API returned")
    table = None if name is None or namespace is None else TableIdent(namespace, name)
    runs, next_offset = await maintenance_ops.list_runs(
        checks, maintenance, catalog, table, namespace, int(token), int(size)
    )
    body: dict[str, Any] = {"runs": [run.to_json() for run in runs]}
    if next_offset is not None:
        body["next-page-token"] = str(next_offset)
    return json_response(body)


async def get_maintenance_policy(request: Request) -> Response:
    """``?namespace=a%1Fb&table=t``: the table's effective maintenance policy and where each value came from."""
    checks, maintenance, catalog = _maintenance(request)
    raw_namespace, name = request.query_params.get("namespace"), request.query_params.get("table")
    if not raw_namespace or not name:
        raise BadRequest("Invalid query: name the table with namespace and table")
    namespace = tuple(raw_namespace.split("\x1f"))
    validate_namespace(list(namespace))
    policy = await maintenance_ops.table_policy(checks, maintenance, catalog, TableIdent(namespace, name))
    return json_response(policy)


ADMIN_ROUTES += [  # not for admins only: maintenance_ops holds callers to table.write on the run's table
    _route(
        "/catalogs/{catalog}/maintenance/runs",
        _audited,
        get=("listMaintenanceRuns", list_maintenance_runs),
        post=("requestMaintenanceRun", request_maintenance_run),
    ),
    _route("/catalogs/{catalog}/maintenance/runs/{run}", _audited, get=("getMaintenanceRun", get_maintenance_run)),
    _route("/catalogs/{catalog}/maintenance/policy", _audited, get=("getMaintenancePolicy", get_maintenance_policy)),
]
