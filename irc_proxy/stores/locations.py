"""The storage roots of every live table and view, per catalog, so no two of them share storage.

Rows are keys, not proof: the handling layer re-checks a conflicting row against the live object before it
refuses anything, and forgets rows whose object is gone (dropped by another engine, a crash between claim
and create). Each location is stored with its scheme family (``s3a://`` as ``s3://``) and without a trailing
``/``, so containment is a string-prefix question the database can answer with an index.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from irc_proxy.stores.db import as_utc
from irc_proxy.stores.tables import StorageIndexRow, StorageLocationRow
from irc_proxy.stores.transactions import TransactionalStore


@dataclass(frozen=True)
class Owner:
    """A table or view by kind and flat (backend) namespace name."""

    kind: str
    namespace: str
    name: str


@dataclass(frozen=True)
class Holding:
    owner: Owner
    location: str
    since: datetime | None = None
    """When the row was recorded (a claim made moments ago may be for an object still being created)."""


def _like_prefix(location: str) -> str:
    escaped = location.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "/%"


def ancestors(location: str) -> list[str]:
    """``location`` and every location above it, down to ``scheme://authority``."""
    scheme, _, rest = location.partition("://")
    parts = rest.split("/")
    return [f"{scheme}://" + "/".join(parts[:end]) for end in range(1, len(parts) + 1)]


class LocationStore(TransactionalStore):
    """Storage roots by catalog in the state database (shared by every replica)."""

    @staticmethod
    def _owned(catalog: str, owner: Owner) -> list[object]:
        return [
            col(StorageLocationRow.catalog) == catalog,
            col(StorageLocationRow.kind) == owner.kind,
            col(StorageLocationRow.namespace) == owner.namespace,
            col(StorageLocationRow.name) == owner.name,
        ]

    @staticmethod
    def _find(session: Session, catalog: str, locations: Sequence[str], exclude: Collection[Owner]) -> list[Holding]:
        above = {a for location in locations for a in ancestors(location)}
        below = [col(StorageLocationRow.location).like(_like_prefix(loc), escape="\\") for loc in locations]
        stmt = select(StorageLocationRow).where(
            col(StorageLocationRow.catalog) == catalog,
            or_(col(StorageLocationRow.location).in_(above), *below),
        )
        found = []
        for row in session.execute(stmt.limit(1000)).scalars():
            owner = Owner(row.kind, row.namespace, row.name)
            if owner not in exclude:
                found.append(Holding(owner, row.location, as_utc(row.created_at)))
        return found

    async def holders(self, catalog: str, locations: Sequence[str], exclude: Collection[Owner] = ()) -> list[Holding]:
        """Rows whose location contains, equals or lies beneath one of ``locations`` (owners not in ``exclude``)."""
        return await self._run(lambda session: self._find(session, catalog, locations, exclude))

    async def held(self, catalog: str, owner: Owner) -> list[str]:
        """The roots recorded for ``owner``."""

        def held(session: Session) -> list[str]:
            stmt = select(StorageLocationRow.location).where(*self._owned(catalog, owner))  # type: ignore[arg-type]
            return list(session.execute(stmt.limit(1000)).scalars())

        return await self._run(held)

    async def hold(self, catalog: str, owner: Owner, locations: Sequence[str]) -> None:
        """Make ``locations`` the owner's storage roots (replacing what it held)."""

        def hold(session: Session) -> None:
            session.execute(delete(StorageLocationRow).where(*self._owned(catalog, owner)))  # type: ignore[arg-type]
            for location in dict.fromkeys(locations):
                session.add(
                    StorageLocationRow(
                        catalog=catalog, kind=owner.kind, namespace=owner.namespace, name=owner.name, location=location
                    )
                )

        await self._run(hold)

    async def add(self, catalog: str, owner: Owner, locations: Sequence[str]) -> None:
        """Add ``locations`` to the owner's storage roots (keeping what it held)."""

        def add(session: Session) -> None:
            stmt = select(StorageLocationRow.location).where(*self._owned(catalog, owner))  # type: ignore[arg-type]
            held = set(session.execute(stmt).scalars())
            for location in dict.fromkeys(locations):
                if location not in held:
                    session.add(
                        StorageLocationRow(
                            catalog=catalog,
                            kind=owner.kind,
                            namespace=owner.namespace,
                            name=owner.name,
                            location=location,
                        )
                    )

        await self._run(add)

    async def release(self, catalog: str, owner: Owner) -> None:
        await self._run(lambda s: s.execute(delete(StorageLocationRow).where(*self._owned(catalog, owner))))  # type: ignore[arg-type]

    async def move(self, catalog: str, source: Owner, target: Owner) -> None:
        """A renamed object keeps its storage roots under its new name."""

        def move(session: Session) -> None:
            session.execute(delete(StorageLocationRow).where(*self._owned(catalog, target)))  # type: ignore[arg-type]
            session.execute(
                update(StorageLocationRow)
                .where(*self._owned(catalog, source))  # type: ignore[arg-type]
                .values(namespace=target.namespace, name=target.name)
            )

        await self._run(move)

    async def indexed(self, catalog: str) -> bool:
        return await self._run(lambda s: s.get(StorageIndexRow, catalog) is not None)

    async def mark_indexed(self, catalog: str) -> None:
        def mark(session: Session) -> None:
            if session.get(StorageIndexRow, catalog) is None:
                session.add(StorageIndexRow(catalog=catalog))

        with contextlib.suppress(IntegrityError):  # another replica finished first
            await self._run(mark)
