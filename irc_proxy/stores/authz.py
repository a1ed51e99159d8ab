"""Principals, roles, role assignments and grants in the state database (shared by every replica)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from irc_proxy.errors import AlreadyExists, BadRequest, NotFound
from irc_proxy.stores.tables import GrantRow, PrincipalRoleRow, PrincipalRow, RoleRow
from irc_proxy.stores.transactions import TransactionalStore

T = TypeVar("T")
LEVEL_SEPARATOR = "\x1f"


@dataclass(frozen=True)
class StoredPrincipal:
    name: str
    has_secret: bool
    created_at: datetime
    roles: tuple[str, ...]


@dataclass(frozen=True)
class StoredGrant:
    id: int
    role: str
    catalog: str
    securable_type: str
    namespace: tuple[str, ...]
    name: str
    privilege: str


class AuthzStore(TransactionalStore):
    """CRUD over the authorization tables; every method is one transaction."""

    # Principals ------------------------------------------------------------------------------
    async def principals(self) -> list[StoredPrincipal]:
        return await self._run(_principals)

    async def principal(self, name: str) -> StoredPrincipal:
        return await self._run(lambda s: _principal(s, name))

    async def create_principal(self, name: str, secret_hash: str | None, roles: Sequence[str] = ()) -> StoredPrincipal:
        """Create ``name`` holding ``roles``, in one transaction: a missing role (BadRequest) or an existing
        principal (AlreadyExists) creates nothing."""

        def create(session: Session) -> StoredPrincipal:
            missing = [role for role in dict.fromkeys(roles) if session.get(RoleRow, role) is None]
            if missing:
                raise BadRequest(f"Roles do not exist: {', '.join(missing)}")
            if session.get(PrincipalRow, name) is not None:
                raise AlreadyExists(f"Principal already exists: {name}")
            session.add(PrincipalRow(name=name, secret_hash=secret_hash))
            session.flush()
            session.add_all(PrincipalRoleRow(principal=name, role=role) for role in dict.fromkeys(roles))
            session.flush()
            return _principal(session, name)

        try:  # a concurrent create of the name or delete of a role breaks a constraint: once more, the checks say which
            return await self._unique(create, None)
        except IntegrityError:  # raced twice
            raise AlreadyExists(f"Principal already exists: {name}") from None

    async def set_secret(self, name: str, secret_hash: str) -> None:
        def update(session: Session) -> None:
            row = _require(session.get(PrincipalRow, name), f"Principal does not exist: {name}")
            row.secret_hash = secret_hash

        await self._run(update)

    async def delete_principal(self, name: str) -> None:
        def drop(session: Session) -> None:
            _require(session.get(PrincipalRow, name), f"Principal does not exist: {name}")
            session.execute(delete(PrincipalRoleRow).where(col(PrincipalRoleRow.principal) == name))
            session.execute(delete(PrincipalRow).where(col(PrincipalRow.name) == name))

        await self._run(drop)

    async def secret_hash(self, name: str) -> str | None:
        """The client-secret hash of ``name``, if it exists and has one (salted: it changes on rotation)."""
        return await self._run(lambda s: getattr(s.get(PrincipalRow, name), "secret_hash", None))

    # Roles -----------------------------------------------------------------------------------
    async def roles(self) -> list[str]:
        return await self._run(lambda s: list(s.execute(select(RoleRow.name).order_by(col(RoleRow.name))).scalars()))

    async def create_role(self, name: str) -> None:
        def create(session: Session) -> None:
            if session.get(RoleRow, name) is not None:
                raise AlreadyExists(f"Role already exists: {name}")
            session.add(RoleRow(name=name))

        await self._unique(create, f"Role already exists: {name}")

    async def delete_role(self, name: str) -> None:
        def drop(session: Session) -> None:
            _require(session.get(RoleRow, name), f"Role does not exist: {name}")
            session.execute(delete(GrantRow).where(col(GrantRow.role) == name))
            session.execute(delete(PrincipalRoleRow).where(col(PrincipalRoleRow.role) == name))
            session.execute(delete(RoleRow).where(col(RoleRow.name) == name))

        await self._run(drop)

    async def assign(self, principal: str, role: str) -> None:
        """Give ``principal`` the role (idempotent)."""

        def assign(session: Session) -> None:
            _require(session.get(PrincipalRow, principal), f"Principal does not exist: {principal}")
            _require(session.get(RoleRow, role), f"Role does not exist: {role}")
            if session.get(PrincipalRoleRow, (principal, role)) is None:
                session.add(PrincipalRoleRow(principal=principal, role=role))

        await self._unique(assign, None)

    async def unassign(self, principal: str, role: str) -> None:
        def unassign(session: Session) -> None:
            row = session.get(PrincipalRoleRow, (principal, role))
            _require(row, f"Principal {principal} does not hold role {role}")
            session.delete(row)

        await self._run(unassign)

    def roles_of_sync(self, principal: str) -> tuple[str, ...]:
        stmt = select(PrincipalRoleRow.role).where(col(PrincipalRoleRow.principal) == principal)
        return self.run_sync(lambda s: tuple(s.execute(stmt).scalars()))

    # Grants ----------------------------------------------------------------------------------
    async def grants(self, role: str | None = None) -> list[StoredGrant]:
        def load(session: Session) -> list[StoredGrant]:
            if role is not None:
                _require(session.get(RoleRow, role), f"Role does not exist: {role}")
            return _grants(session, None if role is None else [role])

        return await self._run(load)

    def grants_of_sync(self, roles: Sequence[str]) -> list[StoredGrant]:
        return self.run_sync(lambda s: _grants(s, roles))

    async def add_grant(
        self, role: str, catalog: str, securable_type: str, namespace: Sequence[str], name: str, privilege: str
    ) -> StoredGrant:
        """Grant a privilege (idempotent: an identical grant is returned as it is)."""
        flat = LEVEL_SEPARATOR.join(namespace)

        def add(session: Session) -> StoredGrant:
            _require(session.get(RoleRow, role), f"Role does not exist: {role}")
            stmt = select(GrantRow).where(
                col(GrantRow.role) == role,
                col(GrantRow.catalog) == catalog,
                col(GrantRow.securable_type) == securable_type,
                col(GrantRow.namespace) == flat,
                col(GrantRow.name) == name,
                col(GrantRow.privilege) == privilege,
            )
            row = session.execute(stmt).scalars().first()
            if row is None:
                row = GrantRow(
                    role=role, catalog=catalog, securable_type=securable_type, namespace=flat, name=name,
                    privilege=privilege,
                )  # fmt: skip
                session.add(row)
                session.flush()
            return _stored(row)

        return await self._unique(add, None)

    async def revoke(self, role: str, grant_id: int) -> None:
        def revoke(session: Session) -> None:
            row = session.get(GrantRow, grant_id)
            _require(row if row is not None and row.role == role else None, f"Role {role} has no grant {grant_id}")
            session.delete(row)

        await self._run(revoke)

    async def _unique(self, fn: Callable[[Session], T], conflict: str | None) -> T:
        """Run ``fn``; a concurrent insert of the same key is AlreadyExists (or, idempotent, a retry)."""
        try:
            return await self._run(fn)
        except IntegrityError:
            if conflict is not None:
                raise AlreadyExists(conflict) from None
            return await self._run(fn)


def _require(row: T | None, message: str) -> T:
    if row is None:
        raise NotFound(message)
    return row


def _principal(session: Session, name: str) -> StoredPrincipal:
    row = _require(session.get(PrincipalRow, name), f"Principal does not exist: {name}")
    stmt = select(PrincipalRoleRow.role).where(col(PrincipalRoleRow.principal) == name)
    roles = tuple(sorted(session.execute(stmt).scalars()))
    return StoredPrincipal(row.name, row.secret_hash is not None, row.created_at, roles)


def _principals(session: Session) -> list[StoredPrincipal]:
    names = list(session.execute(select(PrincipalRow.name).order_by(col(PrincipalRow.name))).scalars())
    return [_principal(session, name) for name in names]


def _grants(session: Session, roles: Sequence[str] | None) -> list[StoredGrant]:
    stmt = select(GrantRow).order_by(col(GrantRow.id))
    if roles is not None:
        if not roles:
            return []
        stmt = stmt.where(col(GrantRow.role).in_(list(roles)))
    return [_stored(row) for row in session.execute(stmt).scalars()]


def _stored(row: GrantRow) -> StoredGrant:
    namespace = tuple(row.namespace.split(LEVEL_SEPARATOR)) if row.namespace else ()
    assert row.id is not None
    return StoredGrant(row.id, row.role, row.catalog, row.securable_type, namespace, row.name, row.privilege)
