"""Authorization at the HTTP edge: which privilege each operation needs, on which object.

Every catalog operation declares an :data:`Authorize` step (``routes.OPERATIONS``); the dispatcher
runs it before the handler, so a denied caller is refused before anything is looked up and a
403 never reveals whether the object exists. List endpoints either see everything (the list
privilege) or only the children the caller holds grants on or beneath (the filter below).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from enum import Enum

from starlette.requests import Request

from irc_proxy.errors import Forbidden, NoSuchNamespace
from irc_proxy.handling.authz import (
    TABLE_PRIVILEGES,
    VIEW_PRIVILEGES,
    Authorizer,
    Caller,
    Grants,
    Privilege,
    Securable,
    SecurableType,
)
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.http import parsing
from irc_proxy.http.bodies import (
    CommitTableRequest,
    CommitTransactionRequest,
    CreateNamespaceRequest,
    RegisterTableRequest,
    RenameTableRequest,
)

Authorize = Callable[[Request], Awaitable[None]]


class Delegation(Enum):
    """Which storage access vended credentials / remote signing may grant for one table."""

    READ = "read"
    READ_WRITE = "read-write"


def authorizer(request: Request) -> Authorizer:
    found: Authorizer = request.state.authorizer
    return found


async def grants(request: Request) -> Grants:
    """The caller's grants (looked up once per request)."""
    context = parsing.context(request)
    if context.grants is None:
        context.grants = await authorizer(request).grants_for(Caller(context.principal, context.roles))
    return context.grants


def _note(request: Request, decision: str, reason: str) -> None:
    """Record the decision for the audit trail (several checks of one request are joined)."""
    parsing.context(request).audit.note(decision, reason)


async def require(request: Request, privilege: Privilege, target: Securable) -> None:
    """Raises: Forbidden naming the privilege and the object (whether or not it exists)."""
    held = await grants(request)
    if held.admin and not authorizer(request).enabled:
        return
    decision = held.check(privilege, target)
    _note(request, "allowed" if decision.allowed else "denied", decision.reason)
    if not decision.allowed:
        who = parsing.principal(request)
        raise Forbidden(f"Principal {who} is not authorized: {privilege.value} on {target} is required")


def _catalog_name(request: Request) -> str:
    return parsing.catalog(request).name


def _namespace(request: Request, namespace: Namespace) -> Securable:
    return Securable.of_namespace(_catalog_name(request), namespace)


def _table(request: Request, ident: TableIdent) -> Securable:
    return Securable(SecurableType.TABLE, _catalog_name(request), ident.namespace, ident.name)


def _view(request: Request, ident: TableIdent) -> Securable:
    return Securable(SecurableType.VIEW, _catalog_name(request), ident.namespace, ident.name)


# Authorize steps, one per shape of operation --------------------------------------------------------
def on_namespace(privilege: Privilege) -> Authorize:
    """``privilege`` on the ``{namespace}`` of the path."""

    async def step(request: Request) -> None:
        await require(request, privilege, _namespace(request, parsing.namespace_param(request)))

    return step


def on_table(privilege: Privilege) -> Authorize:
    async def step(request: Request) -> None:
        await require(request, privilege, _table(request, parsing.table_param(request)))

    return step


def on_view(privilege: Privilege) -> Authorize:
    async def step(request: Request) -> None:
        await require(request, privilege, _view(request, parsing.table_param(request, "view")))

    return step


def existence(kind: SecurableType) -> Authorize:
    """``HEAD``: any privilege on the object (incl. creating one like it) may learn whether it exists.

    Engines ask before they act: Spark's ``CREATE TABLE`` and ``CREATE NAMESPACE IF NOT EXISTS`` and
    ``DROP TABLE`` check existence first, so a principal that may create or drop must be able to ask.
    """
    primary, others = _EXISTENCE[kind]

    async def step(request: Request) -> None:
        if kind is SecurableType.NAMESPACE:
            target = _namespace(request, parsing.namespace_param(request))
        elif kind is SecurableType.TABLE:
            target = _table(request, parsing.table_param(request))
        else:
            target = _view(request, parsing.table_param(request, "view"))
        held = await grants(request)
        for privilege in (primary, *others):
            decision = held.check(privilege, target)
            if decision.allowed:
                _note(request, "allowed", decision.reason)
                return
        await require(request, primary, target)

    return step


_EXISTENCE: dict[SecurableType, tuple[Privilege, tuple[Privilege, ...]]] = {
    SecurableType.NAMESPACE: (
        Privilege.NAMESPACE_USE,
        (Privilege.NAMESPACE_CREATE, Privilege.NAMESPACE_DROP, Privilege.NAMESPACE_LIST),
    ),
    SecurableType.TABLE: (
        Privilege.TABLE_READ,
        (Privilege.TABLE_CREATE, Privilege.TABLE_DROP, Privilege.CREDENTIALS_READ),
    ),
    SecurableType.VIEW: (Privilege.VIEW_READ, (Privilege.VIEW_CREATE, Privilege.VIEW_DROP)),
}


def listing(privilege: Privilege, of_children: Callable[[Request], Namespace]) -> Authorize:
    """A list operation: everything with ``privilege`` on the parent, else a filtered listing.

    A caller with no grant on, above or beneath the parent is refused (without looking).
    """

    async def step(request: Request) -> None:
        parent = _namespace(request, of_children(request))
        held = await grants(request)
        decision = held.check(privilege, parent)
        if decision.allowed:
            _note(request, "allowed", decision.reason)
            return
        if held.touches(parent):
            parsing.context(request).list_filtered = True
            _note(request, "allowed", f"filtered listing: {decision.reason}")
            return
        await require(request, privilege, parent)

    return step


def _list_parent(request: Request) -> Namespace:
    return parsing.parent_param(request)


list_namespaces = listing(Privilege.NAMESPACE_LIST, _list_parent)
list_tables = listing(Privilege.TABLE_LIST, parsing.namespace_param)
list_views = listing(Privilege.VIEW_LIST, parsing.namespace_param)


async def create_namespace(request: Request) -> None:
    """``namespace.create`` on the parent, and on the parent of every missing ancestor created with it."""
    body = await parsing.body_model(request, CreateNamespaceRequest)
    namespace = tuple(body.namespace)
    await require(request, Privilege.NAMESPACE_CREATE, _namespace(request, namespace[:-1]))
    namespaces = parsing.catalog(request).namespaces
    for depth in range(len(namespace) - 1, 0, -1):
        try:
            await namespaces.exists(namespace[:depth])
            break
        except NoSuchNamespace:
            await require(request, Privilege.NAMESPACE_CREATE, _namespace(request, namespace[: depth - 1]))


async def register_table(request: Request) -> None:
    body = await parsing.body_model(request, RegisterTableRequest)
    namespace = parsing.namespace_param(request)
    await require(request, Privilege.TABLE_CREATE, _namespace(request, namespace))
    if body.overwrite:
        await require(request, Privilege.TABLE_WRITE, _table(request, TableIdent(namespace, body.name)))


async def _table_change(request: Request, ident: TableIdent, change: CommitTableRequest) -> None:
    creates = any(isinstance(r, dict) and r.get("type") == "assert-create" for r in change.requirements)
    if creates:
        await require(request, Privilege.TABLE_CREATE, _namespace(request, ident.namespace))
    else:
        await require(request, Privilege.TABLE_WRITE, _table(request, ident))


async def commit_table(request: Request) -> None:
    """``table.write`` on the table; ``table.create`` on its namespace for a staged create."""
    body = await parsing.body_model(request, CommitTableRequest)
    await _table_change(request, parsing.table_param(request), body)


async def commit_transaction(request: Request) -> None:
    body = await parsing.body_model(request, CommitTransactionRequest)
    for change in body.table_changes:
        if change.identifier is None:
            continue  # the handler refuses it with a 400
        ident = TableIdent(tuple(change.identifier.namespace), change.identifier.name)
        await _table_change(request, ident, change)


def renaming(drop: Privilege, create: Privilege, kind: SecurableType) -> Authorize:
    """Rename: ``drop`` on the source, ``create`` on the destination's namespace."""

    async def step(request: Request) -> None:
        body = await parsing.body_model(request, RenameTableRequest)
        source = TableIdent(tuple(body.source.namespace), body.source.name)
        catalog = _catalog_name(request)
        await require(request, drop, Securable(kind, catalog, source.namespace, source.name))
        await require(request, create, _namespace(request, tuple(body.destination.namespace)))

    return step


async def admin_only(request: Request) -> None:
    """Operations without a finer rule are for administrators."""
    held = await grants(request)
    if not held.admin:
        _note(request, "denied", "administrators only")
        raise Forbidden(f"Principal {parsing.principal(request)} is not authorized: administrators only")
    _note(request, "allowed", "admin")


async def require_admin(request: Request) -> None:
    """The admin API: bootstrap admins and holders of the ``admin`` role (everyone without authentication)."""
    caller = Caller(parsing.principal(request), parsing.roles(request))
    if not await authorizer(request).is_admin(caller):
        _note(request, "denied", "administrators only")
        raise Forbidden(f"Principal {caller.name} is not authorized: administrators only")
    _note(request, "allowed", "admin")


# Results and delegation -------------------------------------------------------------------------
async def visible_namespaces(request: Request, children: Sequence[Namespace]) -> list[Namespace]:
    """The children a filtered listing shows: those the caller holds a grant on, above or beneath."""
    if not parsing.context(request).list_filtered:
        return list(children)
    held = await grants(request)
    return [child for child in children if held.touches(_namespace(request, child))]


async def visible_objects(request: Request, idents: Iterable[TableIdent], kind: SecurableType) -> list[TableIdent]:
    """The tables (or views) a filtered listing shows: those the caller holds a privilege on."""
    if not parsing.context(request).list_filtered:
        return list(idents)
    held = await grants(request)
    privileges = TABLE_PRIVILEGES if kind is SecurableType.TABLE else VIEW_PRIVILEGES
    catalog = _catalog_name(request)
    return [i for i in idents if held.holds_any(privileges, Securable(kind, catalog, i.namespace, i.name))]


async def table_delegation(request: Request, ident: TableIdent) -> Delegation:
    """The storage access the caller may be delegated for ``ident`` (``…/credentials``, ``…/sign``).

    Raises:
        Forbidden: the caller holds no credential-delegation privilege on the table.
    """
    delegation = await optional_delegation(request, ident)
    if delegation is None:
        await require(request, Privilege.CREDENTIALS_READ, _table(request, ident))
        await require(request, Privilege.TABLE_READ, _table(request, ident))
    return delegation or Delegation.READ


async def optional_delegation(request: Request, ident: TableIdent) -> Delegation | None:
    """Like :func:`table_delegation`, but None instead of a refusal (a load without credentials).

    Read-write needs ``credentials.write`` and ``table.write``; read needs ``credentials.read`` and
    ``table.read`` (each implied by its write).
    """
    held = await grants(request)
    target = _table(request, ident)
    if held.check(Privilege.CREDENTIALS_WRITE, target).allowed and held.check(Privilege.TABLE_WRITE, target).allowed:
        return Delegation.READ_WRITE
    if held.check(Privilege.CREDENTIALS_READ, target).allowed and held.check(Privilege.TABLE_READ, target).allowed:
        return Delegation.READ
    return None


async def uses_catalog(request: Request, catalog: str) -> None:
    """``/v1/config`` for a catalog: any grant in it implies ``catalog.use``."""
    held = await grants(request)
    if held.admin or held.uses_catalog(catalog):
        _note(request, "allowed", "admin" if held.admin else f"a grant in catalog {catalog}")
        return
    who = parsing.principal(request)
    _note(request, "denied", f"no grant in catalog {catalog} (catalog.use)")
    raise Forbidden(f"Principal {who} is not authorized: catalog.use on catalog {catalog} is required")
