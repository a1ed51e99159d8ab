"""The management API under ``/management/v1``: principals, roles, grants and the audit trail (admins only),
and the trash of dropped tables and views (held to the privileges of ``handling.trash_ops``).

Errors use the Iceberg error model, like the catalog API. Every change is audited and takes effect
on this replica at once (others within ``auth.grants_cache_seconds``).
"""

from __future__ import annotations

import datetime
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, unquote

from pydantic import Field, StrictBool, StrictStr
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from irc_proxy.errors import BadRequest, MethodNotAllowed
from irc_proxy.handling import trash_ops
from irc_proxy.handling.access import Access
from irc_proxy.handling.authn import TokenService, hash_secret
from irc_proxy.handling.authz import ANY_CATALOG, Privilege, StoredGrant, StoredPrincipal, grant_target
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent, validate_namespace
from irc_proxy.handling.trash import Restore, Trash, TrashFilter
from irc_proxy.http import access, parsing
from irc_proxy.http.bodies import _Body
from irc_proxy.http.errors import response_for
from irc_proxy.http.responses import json_response, no_content
from irc_proxy.numbers import is_number
from irc_proxy.settings import Settings
from irc_proxy.threads import ThreadRunner

BASE = "/management/v1"
MAX_NAME = 255
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


def _name(raw: str, what: str) -> str:
    name = unquote(raw)
    if not name or len(name) > MAX_NAME or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
        raise BadRequest(f"Invalid {what} name: 1 to {MAX_NAME} characters, no control characters")
    return name


def _path_name(request: Request, key: str) -> str:
    return _name(request.path_params[key], key)


def _principal_json(principal: StoredPrincipal) -> dict[str, Any]:
    created = principal.created_at
    created = created if created.tzinfo else created.replace(tzinfo=datetime.UTC)
    return {
        "name": principal.name,
        "roles": list(principal.roles),
        "has-credentials": principal.has_secret,
        "created-at": created.isoformat(),
    }


def _grant_json(grant: StoredGrant) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": grant.id,
        "role": grant.role,
        "privilege": grant.privilege,
        "type": grant.securable_type,
        "catalog": grant.catalog,
        "namespace": list(grant.namespace),
    }
    if grant.name:
        body[grant.securable_type] = grant.name
    return body


def _changed(request: Request) -> None:
    access.authorizer(request).invalidate()


def _sessions_changed(request: Request, principal: str) -> None:
    """Forget this replica's cached view of the principal's client, so its sessions end at once."""
    service: TokenService | None = getattr(request.state, "token_service", None)
    if service is not None:
        service.clients.forget(principal)


def _issues_tokens(request: Request) -> bool:
    settings: Settings = request.state.settings
    return settings.auth.mode == "oauth2"


async def _new_secret(request: Request) -> tuple[str, str]:
    secret = secrets.token_urlsafe(32)
    threads: ThreadRunner = request.state.threads
    return secret, await threads.run(hash_secret, secret)


def _credentials(name: str, secret: str) -> dict[str, str]:
    return {"client-id": name, "client-secret": secret}


# Principals ----------------------------------------------------------------------------------------
async def list_principals(request: Request) -> Response:
    principals = await access.authorizer(request).store.principals()
    return json_response({"principals": [_principal_json(p) for p in principals]})


async def create_principal(request: Request) -> Response:
    """Create a principal (with ``oauth2``, also a client whose secret is returned once)."""
    body = await parsing.body_model(request, CreatePrincipalRequest)
    name = _name(body.name, "principal")
    roles = [_name(role, "role") for role in body.roles]
    store = access.authorizer(request).store
    known = set(await store.roles())
    missing = [role for role in roles if role not in known]
    if missing:
        raise BadRequest(f"Roles do not exist: {', '.join(missing)}")
    with_secret = _issues_tokens(request) if body.credentials is None else body.credentials
    secret, hashed = await _new_secret(request) if with_secret else (None, None)
    await store.create_principal(name, hashed)
    for role in roles:
        await store.assign(name, role)
    _changed(request)
    response: dict[str, Any] = {"principal": _principal_json(await store.principal(name))}
    if secret is not None:
        response["credentials"] = _credentials(name, secret)
    return json_response(response, 201, headers={"Cache-Control": "no-store"})


async def get_principal(request: Request) -> Response:
    principal = await access.authorizer(request).store.principal(_path_name(request, "principal"))
    return json_response(_principal_json(principal))


async def delete_principal(request: Request) -> Response:
    """Delete the principal; its tokens stop working (here at once, on other replicas within the cache delay)."""
    name = _path_name(request, "principal")
    await access.authorizer(request).store.delete_principal(name)
    _changed(request)
    _sessions_changed(request, name)
    return no_content()


async def rotate_credentials(request: Request) -> Response:
    """A new client secret for the principal (the old one stops working); returned once."""
    name = _path_name(request, "principal")
    secret, hashed = await _new_secret(request)
    await access.authorizer(request).store.set_secret(name, hashed)
    _sessions_changed(request, name)  # its tokens are bound to the old secret's hash: they end
    return json_response({"credentials": _credentials(name, secret)}, headers={"Cache-Control": "no-store"})


async def assign_role(request: Request) -> Response:
    await access.authorizer(request).store.assign(_path_name(request, "principal"), _path_name(request, "role"))
    _changed(request)
    return no_content()


async def unassign_role(request: Request) -> Response:
    await access.authorizer(request).store.unassign(_path_name(request, "principal"), _path_name(request, "role"))
    _changed(request)
    return no_content()


# Roles and grants ------------------------------------------------------------------------------------
async def list_roles(request: Request) -> Response:
    return json_response({"roles": await access.authorizer(request).store.roles()})


async def create_role(request: Request) -> Response:
    body = await parsing.body_model(request, CreateRoleRequest)
    name = _name(body.name, "role")
    await access.authorizer(request).store.create_role(name)
    return json_response({"name": name, "grants": []}, 201)


async def get_role(request: Request) -> Response:
    name = _path_name(request, "role")
    grants = await access.authorizer(request).store.grants(name)
    return json_response({"name": name, "grants": [_grant_json(g) for g in grants]})


async def delete_role(request: Request) -> Response:
    await access.authorizer(request).store.delete_role(_path_name(request, "role"))
    _changed(request)
    return no_content()


async def list_grants(request: Request) -> Response:
    grants = await access.authorizer(request).store.grants(_path_name(request, "role"))
    return json_response({"grants": [_grant_json(g) for g in grants]})


async def add_grant(request: Request) -> Response:
    role = _path_name(request, "role")
    body = await parsing.body_model(request, GrantRequest)
    target, privilege = grant_target(body.privilege, body.catalog, body.namespace, body.table, body.view)
    if body.catalog != ANY_CATALOG:
        parsing.catalogs(request).get(body.catalog)
    store = access.authorizer(request).store
    grant = await store.add_grant(
        role, target.catalog, target.type.value, target.namespace, target.name, privilege.value
    )
    _changed(request)
    return json_response(_grant_json(grant), 201)


async def revoke_grant(request: Request) -> Response:
    raw = request.path_params["grant"]
    if not is_number(raw):
        raise BadRequest(f"Invalid grant id: {raw!r}")
    await access.authorizer(request).store.revoke(_path_name(request, "role"), int(raw))
    _changed(request)
    return no_content()


async def list_privileges(request: Request) -> Response:
    return json_response({"privileges": [p.value for p in Privilege]})


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
    records = await request.state.audit_reader.query(
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
    trash: Trash = request.state.trash
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
