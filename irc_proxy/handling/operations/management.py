"""Principals, roles and grants: the one handler behind the management API (``http/admin.py``), the console's
admin pages (``ui/admin_pages.py``) and the command line (``cli_admin.py``).

Each operation validates its names and grants the same way for all three, runs as one transaction of the
authorization store (a principal created with a missing role is not created at all), and tells this
replica's caches what changed (grants at once; a deleted or rotated client's sessions end at once). The
``*_json`` functions are the one JSON shape: the API answers with them and the command line prints them.

Who may call is the caller's business: the API and the console let administrators only; the command line
is whoever can reach the state database. Auditing too: a request is audited by its own record
(``management.<operation>`` on its path), and the command line writes the same record by ``cli:<local user>``
(:func:`audit_object` names the object as the API's path does).
"""

from __future__ import annotations

import datetime
import secrets
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from irc_proxy.errors import BadRequest, NoSuchWarehouse, NotFound
from irc_proxy.handling.security.authn import hash_secret
from irc_proxy.handling.security.authz import (
    ANY_CATALOG,
    Authorizer,
    Privilege,
    Securable,
    StoredGrant,
    StoredPrincipal,
    grant_target,
)
from irc_proxy.handling.security.sessions import ClientDirectory
from irc_proxy.settings import is_reserved_principal
from irc_proxy.stores.authz import AuthzStore
from irc_proxy.threads import ThreadRunner

MAX_NAME = 255


def valid_name(name: str, what: str) -> str:
    """``name`` if it can name a principal or a role: 1 to 255 characters, no control characters."""
    if not name or len(name) > MAX_NAME or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
        raise BadRequest(f"Invalid {what} name: 1 to {MAX_NAME} characters, no control characters")
    return name


def audit_object(*segments: str | int) -> str:
    """The audited object of a management operation: its path under ``/management/v1``, decoded
    (``roles/reader/grants``), whoever called it."""
    return "/".join(str(segment) for segment in segments)


@dataclass(frozen=True)
class GrantSpec:
    """A grant as asked for: a privilege on a catalog, a namespace, or a table or view in it."""

    privilege: str
    catalog: str
    namespace: Sequence[str] = ()
    table: str | None = None
    view: str | None = None


@dataclass(frozen=True)
class Created:
    """A new principal, and its client secret when it got one (shown once, never stored)."""

    principal: StoredPrincipal
    secret: str | None = None


@dataclass
class Management:
    """The operations on principals, roles and grants (see the module).

    ``catalogs``: the configured catalog names a grant may name (or ``*``). ``issues_tokens``: a new
    principal gets a client secret unless asked otherwise (``auth.mode = "oauth2"``). ``authorizer`` and
    ``clients``: this replica's caches to clear (None on the command line).
    """

    store: AuthzStore
    threads: ThreadRunner
    catalogs: Collection[str]
    issues_tokens: bool = False
    authorizer: Authorizer | None = field(default=None, kw_only=True)
    clients: ClientDirectory | None = field(default=None, kw_only=True)

    # Principals ----------------------------------------------------------------------------------------
    async def principals(self) -> list[StoredPrincipal]:
        return await self.store.principals()

    async def principal(self, name: str) -> StoredPrincipal:
        return await self.store.principal(valid_name(name, "principal"))

    async def create_principal(self, name: str, roles: Sequence[str] = (), credentials: bool | None = None) -> Created:
        """Create a principal holding ``roles`` (with a client secret if ``credentials``, by default when this
        proxy issues tokens). All or nothing: a missing role is BadRequest, an existing name AlreadyExists."""
        valid_name(name, "principal")
        if is_reserved_principal(name):
            raise BadRequest(
                f"The principal name {name!r} is reserved: audit records name the proxy itself or a caller "
                "without a token with it"
            )
        wanted = [valid_name(role, "role") for role in roles]
        known = set(await self.store.roles())
        missing = [role for role in wanted if role not in known]
        if missing:  # before hashing a secret; the store checks again in its transaction
            raise BadRequest(f"Roles do not exist: {', '.join(missing)}")
        with_secret = self.issues_tokens if credentials is None else credentials
        secret, hashed = await self._new_secret() if with_secret else (None, None)
        principal = await self.store.create_principal(name, hashed, wanted)
        self._grants_changed()
        return Created(principal, secret)

    async def delete_principal(self, name: str) -> None:
        """Delete the principal; its tokens stop working (here at once, on other replicas within the caches' delay)."""
        await self.store.delete_principal(valid_name(name, "principal"))
        self._grants_changed()
        self._sessions_changed(name)

    async def rotate_credentials(self, name: str) -> str:
        """A new client secret for the principal (the old one and its sessions stop working); the secret."""
        valid_name(name, "principal")
        secret, hashed = await self._new_secret()
        await self.store.set_secret(name, hashed)
        self._sessions_changed(name)
        return secret

    async def assign(self, principal: str, role: str) -> None:
        """Give the principal the role (idempotent)."""
        await self.store.assign(valid_name(principal, "principal"), valid_name(role, "role"))
        self._grants_changed()

    async def unassign(self, principal: str, role: str) -> None:
        await self.store.unassign(valid_name(principal, "principal"), valid_name(role, "role"))
        self._grants_changed()

    # Roles and grants ----------------------------------------------------------------------------------
    async def roles(self) -> list[str]:
        return await self.store.roles()

    async def create_role(self, name: str) -> None:
        await self.store.create_role(valid_name(name, "role"))

    async def delete_role(self, name: str) -> None:
        """Delete the role with its grants and assignments."""
        await self.store.delete_role(valid_name(name, "role"))
        self._grants_changed()

    async def grants(self, role: str | None = None) -> list[StoredGrant]:
        """The grants of ``role`` (NotFound for an unknown role), or of every role."""
        return await self.store.grants(None if role is None else valid_name(role, "role"))

    async def grant(self, role: str, grant_id: int) -> StoredGrant:
        """One grant of ``role`` (NotFound unless the role holds it)."""
        found = next((g for g in await self.grants(role) if g.id == grant_id), None)
        if found is None:
            raise NotFound(f"Role {role} has no grant {grant_id}")
        return found

    def target(self, spec: GrantSpec) -> tuple[Securable, Privilege]:
        """The securable and privilege ``spec`` asks for (BadRequest), on a configured catalog (NoSuchWarehouse)."""
        target, privilege = grant_target(spec.privilege, spec.catalog, spec.namespace, spec.table, spec.view)
        if spec.catalog != ANY_CATALOG and spec.catalog not in self.catalogs:
            raise NoSuchWarehouse(f"Warehouse does not exist: {spec.catalog}")
        return target, privilege

    async def add_grant(self, role: str, spec: GrantSpec) -> StoredGrant:
        """Grant a privilege to ``role`` (idempotent: an identical grant is returned as it is)."""
        target, privilege = self.target(spec)
        grant = await self.store.add_grant(
            valid_name(role, "role"), target.catalog, target.type.value, target.namespace, target.name, privilege.value
        )
        self._grants_changed()
        return grant

    async def revoke(self, role: str, grant_id: int) -> None:
        await self.store.revoke(valid_name(role, "role"), grant_id)
        self._grants_changed()

    # Helpers -------------------------------------------------------------------------------------------
    async def _new_secret(self) -> tuple[str, str]:
        secret = secrets.token_urlsafe(32)
        return secret, await self.threads.run(hash_secret, secret)

    def _grants_changed(self) -> None:
        if self.authorizer is not None:
            self.authorizer.invalidate()

    def _sessions_changed(self, principal: str) -> None:
        """Forget this replica's cached view of the principal's client, so its sessions end at once."""
        if self.clients is not None:
            self.clients.forget(principal)


# The one JSON shape ----------------------------------------------------------------------------------------
def principal_json(principal: StoredPrincipal) -> dict[str, Any]:
    created = principal.created_at
    created = created if created.tzinfo else created.replace(tzinfo=datetime.UTC)
    return {
        "name": principal.name,
        "roles": list(principal.roles),
        "has-credentials": principal.has_secret,
        "created-at": created.isoformat(),
    }


def principals_json(principals: Sequence[StoredPrincipal]) -> dict[str, Any]:
    return {"principals": [principal_json(p) for p in principals]}


def credentials_json(name: str, secret: str) -> dict[str, Any]:
    return {"credentials": {"client-id": name, "client-secret": secret}}


def created_json(created: Created) -> dict[str, Any]:
    """The answer to a create: the principal, and its credentials (once) when it got a secret."""
    body: dict[str, Any] = {"principal": principal_json(created.principal)}
    if created.secret is not None:
        body |= credentials_json(created.principal.name, created.secret)
    return body


def grant_json(grant: StoredGrant) -> dict[str, Any]:
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


def grants_json(grants: Sequence[StoredGrant]) -> dict[str, Any]:
    return {"grants": [grant_json(g) for g in grants]}


def role_json(name: str, grants: Sequence[StoredGrant]) -> dict[str, Any]:
    return {"name": name} | grants_json(grants)


def roles_json(names: Sequence[str]) -> dict[str, Any]:
    return {"roles": list(names)}


def privileges_json() -> dict[str, Any]:
    return {"privileges": [p.value for p in Privilege]}
