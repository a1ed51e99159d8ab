"""Authorization of one request: the caller's grants (looked up once), each check noted for the audit.

``handling/operations/policy.py`` says which privilege each operation needs on which object; this module
checks it. A denied caller is refused before its object is looked up, so a 403 never reveals
whether the object exists. List operations either see everything (the list privilege) or only the
children the caller holds grants on or beneath (``visible_namespaces``/``visible_objects``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

from irc_proxy.errors import Forbidden
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.security.authz import (
    TABLE_PRIVILEGES,
    VIEW_PRIVILEGES,
    Authorizer,
    Caller,
    Grants,
    Privilege,
    Securable,
    SecurableType,
)
from irc_proxy.handling.security.context import RequestContext


class Delegation(enum.Enum):
    """Which storage access vended credentials / remote signing may grant for one table."""

    READ = "read"
    READ_WRITE = "read-write"


class Access:
    """The checks of one request in one catalog."""

    def __init__(self, context: RequestContext, authorizer: Authorizer, catalog: str) -> None:
        self.context, self.authorizer, self.catalog = context, authorizer, catalog

    @property
    def enabled(self) -> bool:
        """Whether grants are checked at all (``auth.authorization = "grants"`` with authentication)."""
        return self.authorizer.enabled

    async def grants(self) -> Grants:
        """The caller's grants (looked up once per request)."""
        context = self.context
        if context.grants is None:
            context.grants = await self.authorizer.grants_for(Caller(context.principal, context.roles))
        return context.grants

    def note(self, decision: str, reason: str) -> None:
        self.context.audit.note(decision, reason)

    # Securables of this catalog ---------------------------------------------------------------
    def namespace(self, namespace: Namespace) -> Securable:
        return Securable.of_namespace(self.catalog, namespace)

    def table(self, ident: TableIdent) -> Securable:
        return Securable(SecurableType.TABLE, self.catalog, ident.namespace, ident.name)

    def view(self, ident: TableIdent) -> Securable:
        return Securable(SecurableType.VIEW, self.catalog, ident.namespace, ident.name)

    def of_kind(self, kind: SecurableType, ident: TableIdent) -> Securable:
        return self.table(ident) if kind is SecurableType.TABLE else self.view(ident)

    # Checks -----------------------------------------------------------------------------------
    async def require(self, privilege: Privilege, target: Securable) -> None:
        """Raises: Forbidden naming the privilege and the object (whether or not it exists)."""
        held = await self.grants()
        if held.admin and not self.enabled:
            return
        decision = held.check(privilege, target)
        self.note("allowed" if decision.allowed else "denied", decision.reason)
        if not decision.allowed:
            who = self.context.principal
            raise Forbidden(f"Principal {who} is not authorized: {privilege.value} on {target} is required")

    async def holds(self, privilege: Privilege, target: Securable) -> bool:
        """Whether the caller holds ``privilege`` on ``target``, without a note in the audit record (a rule that
        decides between two refusals asks this first, then refuses once)."""
        held = await self.grants()
        return (held.admin and not self.enabled) or held.check(privilege, target).allowed

    async def require_any(self, privileges: Sequence[Privilege], target: Securable) -> None:
        """One of ``privileges`` (the first is the one a refusal names)."""
        held = await self.grants()
        for privilege in privileges:
            decision = held.check(privilege, target)
            if decision.allowed:
                self.note("allowed", decision.reason)
                return
        await self.require(privileges[0], target)

    async def listing(self, privilege: Privilege, parent: Namespace) -> None:
        """Everything with ``privilege`` on the parent, else a filtered listing; a caller with no grant
        on, above or beneath the parent is refused (without looking)."""
        target = self.namespace(parent)
        held = await self.grants()
        decision = held.check(privilege, target)
        if decision.allowed:
            self.note("allowed", decision.reason)
            return
        if held.touches(target):
            self.context.list_filtered = True
            self.note("allowed", f"filtered listing: {decision.reason}")
            return
        await self.require(privilege, target)

    async def admin_only(self) -> None:
        """Operations without a finer rule are for administrators."""
        if not (await self.grants()).admin:
            self.note("denied", "administrators only")
            raise Forbidden(f"Principal {self.context.principal} is not authorized: administrators only")
        self.note("allowed", "admin")

    async def require_admin(self) -> None:
        """The admin API: bootstrap admins and holders of the ``admin`` role (everyone without authentication)."""
        caller = Caller(self.context.principal, self.context.roles)
        fixed = self.context.grants is not None and self.context.grants.fixed
        if fixed or not await self.authorizer.is_admin(caller):
            self.note("denied", "administrators only")
            raise Forbidden(f"Principal {caller.name} is not authorized: administrators only")
        self.note("allowed", "admin")

    async def uses_catalog(self) -> None:
        """``/v1/config`` for a catalog: any grant in it implies ``catalog.use``."""
        held = await self.grants()
        if held.admin or held.uses_catalog(self.catalog):
            self.note("allowed", "admin" if held.admin else f"a grant in catalog {self.catalog}")
            return
        self.note("denied", f"no grant in catalog {self.catalog} (catalog.use)")
        who = self.context.principal
        raise Forbidden(f"Principal {who} is not authorized: catalog.use on catalog {self.catalog} is required")


def visible_namespaces(context: RequestContext, catalog: str, children: Sequence[Namespace]) -> list[Namespace]:
    """The children a filtered listing shows: those the caller holds a grant on, above or beneath.

    Unfiltered listings (``context.list_filtered`` false) show everything; a filtered one was
    decided by the listing's authorization step, which loaded the caller's grants.
    """
    if not context.list_filtered:
        return list(children)
    assert context.grants is not None, "a filtered listing is decided with the caller's grants"
    held = context.grants
    return [child for child in children if held.touches(Securable.of_namespace(catalog, child))]


def visible_objects(
    context: RequestContext, catalog: str, idents: Iterable[TableIdent], kind: SecurableType
) -> list[TableIdent]:
    """The tables (or views) a filtered listing shows: those the caller holds a privilege on."""
    if not context.list_filtered:
        return list(idents)
    assert context.grants is not None, "a filtered listing is decided with the caller's grants"
    held = context.grants
    privileges = TABLE_PRIVILEGES if kind is SecurableType.TABLE else VIEW_PRIVILEGES
    return [i for i in idents if held.holds_any(privileges, Securable(kind, catalog, i.namespace, i.name))]
