"""Authorization, free of HTTP and storage: privileges, securables, grants and the decision.

Principals hold roles; roles hold grants of one privilege on one securable: a catalog, a
namespace path, a table or a view. A grant on a namespace applies to everything beneath it
(``a`` covers ``a:b`` and ``a:b:c`` and their tables and views); a grant on a catalog covers the
catalog. A check walks from the target up to the catalog and takes the first grant that matches.
Only grants exist (no denials), so "first match" decides which grant the audit trail names.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from irc_proxy.errors import BadRequest
from irc_proxy.handling.naming import Namespace
from irc_proxy.handling.security.privileges import ADMIN_ROLE, ANY_CATALOG, Privilege
from irc_proxy.stores.authz import LEVEL_SEPARATOR, AuthzStore, StoredGrant, StoredPrincipal
from irc_proxy.threads import ThreadRunner

__all__ = [  # re-exported for the admin API and the operations
    "ADMIN_ROLE",
    "ANY_CATALOG",
    "LEVEL_SEPARATOR",
    "Privilege",
    "StoredGrant",
    "StoredPrincipal",
]

IMPLIED_BY: dict[Privilege, frozenset[Privilege]] = {
    Privilege.TABLE_READ: frozenset({Privilege.TABLE_WRITE}),
    Privilege.VIEW_READ: frozenset({Privilege.VIEW_REPLACE}),
    Privilege.CREDENTIALS_READ: frozenset({Privilege.CREDENTIALS_WRITE}),
    Privilege.NAMESPACE_USE: frozenset({Privilege.NAMESPACE_PROPERTIES}),
}
"""A privilege is also held by whoever holds one of these (write implies read, and so on)."""

TABLE_PRIVILEGES = frozenset(
    {
        Privilege.TABLE_READ,
        Privilege.TABLE_WRITE,
        Privilege.TABLE_DROP,
        Privilege.CREDENTIALS_READ,
        Privilege.CREDENTIALS_WRITE,
    }
)
VIEW_PRIVILEGES = frozenset({Privilege.VIEW_READ, Privilege.VIEW_REPLACE, Privilege.VIEW_DROP})


class SecurableType(StrEnum):
    CATALOG = "catalog"
    NAMESPACE = "namespace"
    TABLE = "table"
    VIEW = "view"


@dataclass(frozen=True)
class Securable:
    """A catalog (empty namespace, no name), a namespace (no name), or a table or view."""

    type: SecurableType
    catalog: str
    namespace: Namespace = ()
    name: str = ""

    @classmethod
    def of_catalog(cls, catalog: str) -> Securable:
        return cls(SecurableType.CATALOG, catalog)

    @classmethod
    def of_namespace(cls, catalog: str, namespace: Namespace) -> Securable:
        """The namespace, or the catalog itself for the empty namespace (the root)."""
        if not namespace:
            return cls.of_catalog(catalog)
        return cls(SecurableType.NAMESPACE, catalog, tuple(namespace))

    def __str__(self) -> str:
        path = ".".join((*self.namespace, self.name) if self.name else self.namespace)
        return f"{self.type.value} {self.catalog}" + (f".{path}" if path else "")

    def scopes(self) -> list[Securable]:
        """This securable, then each enclosing namespace, then the catalog: the order checks walk."""
        chain = [self] if self.type in (SecurableType.TABLE, SecurableType.VIEW) else []
        chain += [Securable.of_namespace(self.catalog, self.namespace[:n]) for n in range(len(self.namespace), 0, -1)]
        return [*chain, Securable.of_catalog(self.catalog), Securable.of_catalog(ANY_CATALOG)]


@dataclass(frozen=True)
class Grant:
    """``privilege`` on ``securable``, held by ``role``."""

    role: str
    securable: Securable
    privilege: Privilege
    id: int | None = None


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


class Grants:
    """The grants of a set of roles, indexed for checks; built per request from a snapshot."""

    def __init__(self, grants: Iterable[Grant], admin: bool = False, *, fixed: bool = False) -> None:
        self.admin = admin
        self.fixed = fixed
        """Fixed by the caller's token (a run credential): never admin, never the admin or management API."""
        self._by_scope: dict[Securable, list[Grant]] = {}
        for grant in grants:
            self._by_scope.setdefault(grant.securable, []).append(grant)

    def check(self, privilege: Privilege, target: Securable) -> Decision:
        """Whether ``privilege`` is held on ``target``, and which grant (or what) decided it."""
        if self.admin:
            return Decision(True, "admin")
        accepted = {privilege, Privilege.ALL} | IMPLIED_BY.get(privilege, frozenset())
        for scope in target.scopes():
            for grant in self._by_scope.get(scope, ()):
                if grant.privilege in accepted:
                    return Decision(True, f"{grant.privilege.value} on {scope} via role {grant.role}")
        return Decision(False, f"missing {privilege.value} on {target}")

    def holds_any(self, privileges: Iterable[Privilege], target: Securable) -> bool:
        """Whether any of ``privileges`` is held on ``target`` (directly or inherited)."""
        return any(self.check(privilege, target).allowed for privilege in privileges)

    def touches(self, target: Securable) -> bool:
        """Whether some grant sits on ``target``, above it, or anywhere beneath it.

        A caller touched by no grant learns nothing about the target; one with a grant beneath it
        may navigate to it (listing shows the way, filtered).
        """
        if self.admin:
            return True
        if any(scope in self._by_scope for scope in target.scopes()):
            return True
        depth = len(target.namespace)
        return any(
            scope.catalog == target.catalog and scope.namespace[:depth] == target.namespace
            for scope in self._by_scope
            if target.type in (SecurableType.CATALOG, SecurableType.NAMESPACE)
        )

    def uses_catalog(self, catalog: str) -> bool:
        """Whether any grant lies in ``catalog`` (each grant implies ``catalog.use``)."""
        return self.admin or any(scope.catalog in (catalog, ANY_CATALOG) for scope in self._by_scope)


@dataclass(frozen=True)
class Caller:
    """Who is asking: the principal's name and the roles its token carries."""

    name: str
    token_roles: tuple[str, ...] = ()


class Authorizer:
    """Answers with the :class:`Grants` of a caller, from the state database through a short cache.

    Grants change rarely and are read on every request, so each caller's snapshot is cached for
    ``cache_seconds`` (changes made through this process are seen at once; other replicas see
    them within ``cache_seconds``). When ``enabled`` is false every caller holds every privilege.
    """

    def __init__(
        self,
        store: AuthzStore,
        threads: ThreadRunner,
        *,
        enabled: bool,
        authenticated: bool = True,
        admins: Iterable[str] = (),
        cache_seconds: float = 2.0,
        cache_entries: int = 4096,
    ) -> None:
        self.store = store
        self.enabled = enabled
        self.authenticated = authenticated
        self._threads = threads
        self._admins = frozenset(admins)
        self._cache_seconds = cache_seconds
        self._cache_entries = cache_entries
        self._cache: dict[Caller, tuple[float, Grants]] = {}

    async def grants_for(self, caller: Caller) -> Grants:
        if not self.enabled:
            return Grants((), admin=True)
        now = time.monotonic()
        cached = self._cache.get(caller)
        if cached is not None and cached[0] > now:
            return cached[1]
        grants = await self._threads.run(self._load, caller)
        if len(self._cache) >= self._cache_entries:
            self._cache.clear()
        self._cache[caller] = (now + self._cache_seconds, grants)
        return grants

    async def is_admin(self, caller: Caller) -> bool:
        """Whether ``caller`` may use the admin API: anyone without authentication, else admins only
        (also when ``authorization = "none"`` lets every authenticated caller use the catalogs)."""
        if not self.authenticated:
            return True
        if self.enabled:
            return (await self.grants_for(caller)).admin
        return caller.name in self._admins or ADMIN_ROLE in caller.token_roles

    def invalidate(self) -> None:
        """Forget cached snapshots (after a change through the admin API)."""
        self._cache.clear()

    def _load(self, caller: Caller) -> Grants:
        roles = set(caller.token_roles) | set(self.store.roles_of_sync(caller.name))
        admin = caller.name in self._admins or ADMIN_ROLE in roles
        return Grants((to_grant(row) for row in self.store.grants_of_sync(sorted(roles))), admin=admin)


def to_grant(row: StoredGrant) -> Grant:
    securable = Securable(SecurableType(row.securable_type), row.catalog, row.namespace, row.name)
    return Grant(row.role, securable, Privilege(row.privilege), row.id)


def grant_target(
    privilege: str, catalog: str, namespace: Sequence[str], table: str | None = None, view: str | None = None
) -> tuple[Securable, Privilege]:
    """Validate a grant: a known privilege on a securable that can hold it.

    Raises:
        BadRequest: unknown privilege, both table and view, a table/view without namespace, a
            privilege the securable cannot hold, or a level containing the 0x1F unit separator.
    """
    try:
        held = Privilege(privilege)
    except ValueError:
        raise BadRequest(f"Unknown privilege {privilege!r}; one of: {', '.join(p.value for p in Privilege)}") from None
    levels = tuple(namespace)
    if any(not level or LEVEL_SEPARATOR in level for level in levels):
        raise BadRequest("Namespace levels must be non-empty and must not contain the 0x1F unit separator")
    if table is not None and view is not None:
        raise BadRequest("A grant names a table or a view, not both")
    name = table if table is not None else view
    if name is not None:
        kind = SecurableType.TABLE if table is not None else SecurableType.VIEW
        allowed = TABLE_PRIVILEGES if kind is SecurableType.TABLE else VIEW_PRIVILEGES
        if not levels or not name:
            raise BadRequest(f"A {kind.value} grant needs its namespace and name")
        if held not in allowed | {Privilege.ALL}:
            raise BadRequest(f"{held.value} cannot be granted on a {kind.value}")
        return Securable(kind, catalog, levels, name), held
    if levels and held is Privilege.CATALOG_USE:
        raise BadRequest("catalog.use can only be granted on a catalog")
    return Securable.of_namespace(catalog, levels), held
