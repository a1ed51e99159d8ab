"""Scheduled maintenance in the state database: tables marked by commits, and each catalog's sweep lease.

A commit through the proxy *marks* its table: one upsert of a one-row-per-table mark (the mark's time moves
on), the only write a commit adds. The sweep of a catalog is held by one replica at a time: ``take_sweep`` is
one UPDATE that succeeds only when the last sweep finished ``interval`` ago and no replica holds a live lease,
so replicas that wake together sweep once. A replica that dies mid-sweep leaves it to another when the lease
ends; the walk through the catalog's tables goes on from the cursor the last finished sweep stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, and_, delete, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from irc_proxy.dberrors import database_errors
from irc_proxy.stores.db import as_utc
from irc_proxy.stores.maintenance import table_key
from irc_proxy.stores.tables import MaintenanceMarkRow, MaintenanceSweepRow, table_of
from irc_proxy.threads import ThreadRunner

MARKS = table_of(MaintenanceMarkRow)
SWEEPS = table_of(MaintenanceSweepRow)


@dataclass(frozen=True)
class Mark:
    namespace: tuple[str, ...]
    name: str
    marked_at: datetime


class ScheduleStore:
    """Marks and sweep leases of every catalog; each method is one short transaction in a worker thread."""

    def __init__(self, engine: Engine, threads: ThreadRunner) -> None:
        self._engine, self._threads = engine, threads

    async def mark(self, catalog: str, namespace: Sequence[str], name: str) -> None:
        """Mark a table for the next sweep (one upsert)."""
        await self._threads.run(self._mark, catalog, list(namespace), name)

    async def marks(self, catalog: str, limit: int) -> list[Mark]:
        """The catalog's marked tables, oldest mark first."""
        statement = select(MARKS).where(MARKS.c.catalog == catalog).order_by(MARKS.c.marked_at).limit(limit)
        rows = await self._threads.run(self._rows, statement)
        return [Mark(tuple(json.loads(r.namespace)), r.name, as_utc(r.marked_at)) for r in rows]

    async def unmark(self, catalog: str, mark: Mark) -> None:
        """Forget a mark once evaluated, unless a commit marked the table again since."""
        key = table_key(catalog, mark.namespace, mark.name)
        statement = delete(MARKS).where(MARKS.c.key == key, MARKS.c.marked_at <= mark.marked_at)
        await self._threads.run(self._execute, statement)

    async def take_sweep(
        self, catalog: str, holder: str, interval: timedelta, lease: timedelta
    ) -> tuple[tuple[str, ...], str] | None:
        """Hold the catalog's sweep if it is due and nobody holds it: the walk's cursor (None: not now)."""
        return await self._threads.run(self._take_sweep, catalog, holder, interval, lease)

    async def finish_sweep(self, catalog: str, holder: str, cursor: tuple[tuple[str, ...], str] | None) -> bool:
        """Store where the walk goes on and let go of the sweep; False when another replica took it over."""
        where = and_(SWEEPS.c.catalog == catalog, SWEEPS.c.holder == holder)
        values = {
            "cursor": None if cursor is None else json.dumps([list(cursor[0]), cursor[1]]),
            "swept_at": datetime.now(UTC),
            "holder": None,
            "lease_expires_at": None,
        }
        return bool(await self._threads.run(self._execute, update(SWEEPS).where(where).values(**values)))

    # Blocking parts ------------------------------------------------------------------------------------------
    def _mark(self, catalog: str, namespace: list[str], name: str) -> None:
        now = datetime.now(UTC)
        values = {
            "key": table_key(catalog, namespace, name),
            "catalog": catalog,
            "namespace": json.dumps(namespace),
            "name": name,
            "marked_at": now,
        }
        dialect = self._engine.dialect.name
        with database_errors("State database"), self._engine.begin() as conn:
            if dialect in ("postgresql", "sqlite"):
                insert_of = postgresql.insert if dialect == "postgresql" else sqlite.insert
                upsert = insert_of(MARKS).values(**values)
                conn.execute(upsert.on_conflict_do_update(index_elements=["key"], set_={"marked_at": now}))
                return
            try:  # another database: insert, else move the mark on
                with conn.begin_nested():
                    conn.execute(insert(MARKS).values(**values))
            except IntegrityError:
                conn.execute(update(MARKS).where(MARKS.c.key == values["key"]).values(marked_at=now))

    def _take_sweep(
        self, catalog: str, holder: str, interval: timedelta, lease: timedelta
    ) -> tuple[tuple[str, ...], str] | None:
        now = datetime.now(UTC)
        with database_errors("State database"), self._engine.begin() as conn:
            if conn.execute(select(SWEEPS.c.catalog).where(SWEEPS.c.catalog == catalog)).first() is None:
                try:
                    with conn.begin_nested():
                        conn.execute(insert(SWEEPS).values(catalog=catalog))
                except IntegrityError:  # another replica inserted it first
                    pass
        due = and_(
            SWEEPS.c.catalog == catalog,
            or_(SWEEPS.c.lease_expires_at.is_(None), SWEEPS.c.lease_expires_at <= now),
            or_(SWEEPS.c.swept_at.is_(None), SWEEPS.c.swept_at <= now - interval),
        )
        taken = update(SWEEPS).where(due).values(holder=holder, lease_expires_at=now + lease)
        with database_errors("State database"), self._engine.begin() as conn:
            if conn.execute(taken).rowcount != 1:
                return None
            row = conn.execute(select(SWEEPS.c.cursor).where(SWEEPS.c.catalog == catalog)).first()
        if row is None or not row.cursor:
            return ((), "")
        namespace, name = json.loads(row.cursor)
        return (tuple(namespace), str(name))

    def _execute(self, statement: Any) -> int:
        with database_errors("State database"), self._engine.begin() as conn:
            return int(conn.execute(statement).rowcount)

    def _rows(self, statement: Any) -> list[Any]:
        with database_errors("State database"), self._engine.begin() as conn:
            return list(conn.execute(statement))
