"""The trash in the state database: dropped tables kept until their retention ends.

An entry is ``kept`` until it is restored (deleted), expunged (deleted, its files purged when the drop
asked for it), or expires. Expiry is shared by replicas: a replica *claims* an expired entry (one
UPDATE, so only one wins), purges, then deletes it; a claim older than the lease (its replica died
mid-purge) may be claimed again.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    Engine,
    and_,
    delete,
    insert,
    or_,
    select,
    update,
)

from irc_proxy.dberrors import database_errors
from irc_proxy.stores.db import as_utc
from irc_proxy.stores.tables import TrashEntryRow, table_of
from irc_proxy.threads import ThreadRunner

ENTRIES = table_of(TrashEntryRow)


@dataclass(frozen=True)
class TrashEntry:
    entry_id: str
    catalog: str
    kind: str
    namespace: tuple[str, ...]
    name: str
    metadata_location: str
    dropped_by: str
    dropped_at: datetime
    purge_requested: bool
    expires_at: datetime
    backend_entry: dict[str, Any] | None = None
    """A table's attributes kept by its backend beside the pointer (Glue), given back on restore."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.entry_id,
            "kind": self.kind,
            "identifier": {"namespace": list(self.namespace), "name": self.name},
            "metadata-location": self.metadata_location,
            "dropped-by": self.dropped_by,
            "dropped-at": self.dropped_at.isoformat(),
            "purge-requested": self.purge_requested,
            "expires-at": self.expires_at.isoformat(),
        }


def _entry(row: Any) -> TrashEntry:
    return TrashEntry(
        entry_id=row.entry_id,
        catalog=row.catalog,
        kind=row.kind,
        namespace=tuple(json.loads(row.namespace)),
        name=row.name,
        metadata_location=row.metadata_location,
        dropped_by=row.dropped_by,
        dropped_at=as_utc(row.dropped_at),
        purge_requested=bool(row.purge_requested),
        expires_at=as_utc(row.expires_at),
        backend_entry=None if row.backend_entry is None else json.loads(row.backend_entry),
    )


def new_entry(
    catalog: str,
    kind: str,
    namespace: tuple[str, ...],
    name: str,
    metadata_location: str,
    dropped_by: str,
    purge_requested: bool,
    retention: timedelta,
) -> TrashEntry:
    """An entry for an object dropped now, kept for ``retention``."""
    now = datetime.now(UTC)
    return TrashEntry(
        uuid.uuid4().hex,
        catalog,
        kind,
        namespace,
        name,
        metadata_location,
        dropped_by,
        now,
        purge_requested,
        now + retention,
    )


def insert_entry(entry: TrashEntry) -> Any:
    """The INSERT of a kept entry (run by ``TrashStore.add``, or in another store's transaction)."""
    return insert(ENTRIES).values(
        entry_id=entry.entry_id,
        catalog=entry.catalog,
        kind=entry.kind,
        namespace=json.dumps(list(entry.namespace)),
        name=entry.name,
        metadata_location=entry.metadata_location,
        dropped_by=entry.dropped_by,
        dropped_at=entry.dropped_at,
        purge_requested=entry.purge_requested,
        expires_at=entry.expires_at,
        state="kept",
        backend_entry=None if entry.backend_entry is None else json.dumps(entry.backend_entry),
    )


def take_kept(catalog: str, entry_id: str) -> Any:
    """The DELETE of a kept entry (not one being expired): one row deleted means the caller took it."""
    return delete(ENTRIES).where(
        ENTRIES.c.catalog == catalog, ENTRIES.c.entry_id == entry_id, ENTRIES.c.state == "kept"
    )


@dataclass(frozen=True)
class TrashFilter:
    namespace: tuple[str, ...] | None = None
    kind: str | None = None
    dropped_by: str | None = None


class TrashStore:
    """Entries of every catalog; each method is one short transaction in a worker thread."""

    def __init__(self, engine: Engine, threads: ThreadRunner) -> None:
        self._engine, self._threads = engine, threads

    async def add(self, entry: TrashEntry) -> None:
        await self._threads.run(self._execute, insert_entry(entry))

    async def relocate(self, entry_id: str, metadata_location: str, backend_entry: dict[str, Any] | None) -> None:
        """What the table's pointer really was when it went (a commit may have landed after it was read)."""
        statement = (
            update(ENTRIES)
            .where(ENTRIES.c.entry_id == entry_id)
            .values(
                metadata_location=metadata_location,
                backend_entry=None if backend_entry is None else json.dumps(backend_entry),
            )
        )
        await self._threads.run(self._execute, statement)

    async def get(self, catalog: str | None, entry_id: str) -> TrashEntry | None:
        """The kept entry ``entry_id`` of ``catalog``; of any catalog when None (entry ids are unique)."""
        return await self._threads.run(self._get, catalog, entry_id)

    async def page(self, catalog: str, which: TrashFilter, offset: int, limit: int) -> list[TrashEntry]:
        return await self._threads.run(self._list, catalog, which, offset, limit)

    async def remove(self, catalog: str, entry_id: str) -> bool:
        """Delete a kept entry (restored, expunged); False when it is gone or being expired."""
        return bool(await self._threads.run(self._execute, take_kept(catalog, entry_id)))

    async def kept_at(self, catalog: str, metadata_location: str, limit: int = 100) -> list[TrashEntry]:
        """The kept entries (not being expired) whose metadata file is ``metadata_location``."""
        where = and_(
            ENTRIES.c.catalog == catalog,
            ENTRIES.c.metadata_location == metadata_location,
            ENTRIES.c.state == "kept",
        )
        return await self._threads.run(self._select, select(ENTRIES).where(where).limit(limit))

    async def exists(self, catalog: str, entry_id: str) -> bool:
        """Whether the entry is still there (kept, or being expired)."""
        where = and_(ENTRIES.c.catalog == catalog, ENTRIES.c.entry_id == entry_id)
        return bool(await self._threads.run(self._select, select(ENTRIES).where(where)))

    async def remove_location(self, catalog: str, metadata_location: str) -> list[TrashEntry]:
        """Delete the entries of a metadata file a live object now uses (registered again): never purged."""
        return await self._threads.run(self._remove_location, catalog, metadata_location)

    async def claim_expired(self, catalogs: Sequence[str], owner: str, lease: timedelta) -> TrashEntry | None:
        """Claim one expired entry of ``catalogs`` for expunging (or one whose claim is older than ``lease``)."""
        return await self._threads.run(self._claim, catalogs, owner, lease)

    async def finish(self, entry_id: str, owner: str) -> bool:
        """Delete an entry this owner claimed and expunged."""
        where = and_(ENTRIES.c.entry_id == entry_id, ENTRIES.c.claimed_by == owner)
        return bool(await self._threads.run(self._execute, delete(ENTRIES).where(where)))

    async def still_claimed(self, entry_id: str, owner: str) -> bool:
        """Whether the claim holds (the entry was not restored or registered meanwhile)."""
        return await self._threads.run(self._still_claimed, entry_id, owner)

    # Blocking parts ------------------------------------------------------------------------------------------
    def _execute(self, statement: Any) -> int:
        with database_errors("State database"), self._engine.begin() as conn:
            return int(conn.execute(statement).rowcount)

    def _select(self, statement: Any) -> list[TrashEntry]:
        with database_errors("State database"), self._engine.begin() as conn:
            return [_entry(row) for row in conn.execute(statement)]

    def _remove_location(self, catalog: str, metadata_location: str) -> list[TrashEntry]:
        where = and_(ENTRIES.c.catalog == catalog, ENTRIES.c.metadata_location == metadata_location)
        with database_errors("State database"), self._engine.begin() as conn:
            found = [_entry(row) for row in conn.execute(select(ENTRIES).where(where))]
            removed = {
                entry.entry_id
                for entry in found
                if conn.execute(delete(ENTRIES).where(ENTRIES.c.entry_id == entry.entry_id)).rowcount == 1
            }
        return [entry for entry in found if entry.entry_id in removed]

    def _get(self, catalog: str | None, entry_id: str) -> TrashEntry | None:
        where = and_(ENTRIES.c.entry_id == entry_id, ENTRIES.c.state == "kept")
        if catalog is not None:
            where = and_(where, ENTRIES.c.catalog == catalog)
        with database_errors("State database"), self._engine.begin() as conn:
            row = conn.execute(select(ENTRIES).where(where)).first()
        return None if row is None else _entry(row)

    def _list(self, catalog: str, which: TrashFilter, offset: int, limit: int) -> list[TrashEntry]:
        conditions = [ENTRIES.c.catalog == catalog, ENTRIES.c.state == "kept"]
        if which.namespace is not None:
            conditions.append(ENTRIES.c.namespace == json.dumps(list(which.namespace)))
        if which.kind is not None:
            conditions.append(ENTRIES.c.kind == which.kind)
        if which.dropped_by is not None:
            conditions.append(ENTRIES.c.dropped_by == which.dropped_by)
        statement = (
            select(ENTRIES)
            .where(*conditions)
            .order_by(ENTRIES.c.dropped_at.desc(), ENTRIES.c.entry_id)
            .offset(offset)
            .limit(limit)
        )
        with database_errors("State database"), self._engine.begin() as conn:
            return [_entry(row) for row in conn.execute(statement)]

    def _claim(self, catalogs: Sequence[str], owner: str, lease: timedelta) -> TrashEntry | None:
        now = datetime.now(UTC)
        expired = and_(
            ENTRIES.c.catalog.in_(list(catalogs)),
            or_(
                and_(ENTRIES.c.state == "kept", ENTRIES.c.expires_at <= now),
                and_(ENTRIES.c.state == "expunging", ENTRIES.c.claimed_at <= now - lease),
            ),
        )
        with database_errors("State database"), self._engine.begin() as conn:
            candidates = conn.execute(select(ENTRIES).where(expired).order_by(ENTRIES.c.expires_at).limit(5)).all()
        for row in candidates:
            claimed = update(ENTRIES).where(
                ENTRIES.c.entry_id == row.entry_id,
                ENTRIES.c.state == row.state,
                ENTRIES.c.claimed_by.is_(None) if row.claimed_by is None else ENTRIES.c.claimed_by == row.claimed_by,
            )
            if self._execute(claimed.values(state="expunging", claimed_by=owner, claimed_at=now)) == 1:
                return _entry(row)
        return None

    def _still_claimed(self, entry_id: str, owner: str) -> bool:
        where = and_(ENTRIES.c.entry_id == entry_id, ENTRIES.c.claimed_by == owner, ENTRIES.c.state == "expunging")
        with database_errors("State database"), self._engine.begin() as conn:
            return conn.execute(select(ENTRIES.c.entry_id).where(where)).first() is not None
