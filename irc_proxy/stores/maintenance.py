"""Maintenance runs in the state database: queued by the API, claimed and run by any replica.

A run is ``queued`` until a replica *claims* it (one UPDATE setting ``running``, the holder, a lease and
the table's ``lease_key``). ``lease_key`` is unique, so while one run of a table holds it no other run of
that table can be claimed, on any replica. The holder renews the lease while it works; a run whose lease
ran out (its replica died) is claimed again by another replica, which starts it over (every job plans
from the table as it is then). Finishing clears the key and records the outcome.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, and_, delete, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from irc_proxy.dberrors import database_errors
from irc_proxy.stores.db import as_utc
from irc_proxy.stores.tables import MaintenanceRunRow, table_of
from irc_proxy.threads import ThreadRunner

RUNS = table_of(MaintenanceRunRow)
STATUSES = ("queued", "running", "succeeded", "failed", "skipped")
FINISHED = ("succeeded", "failed", "skipped")
_CANDIDATES = 100
"""Queued runs one claim looks at, oldest first, after leaving out those of tables a run holds now."""


@dataclass(frozen=True)
class MaintenanceRun:
    id: str
    catalog: str
    namespace: tuple[str, ...]
    name: str
    jobs: tuple[str, ...]
    dry_run: bool
    status: str
    requested_by: str
    created_at: datetime
    results: dict[str, Any] = field(default_factory=dict)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The run as the management API answers it."""
        return {
            "id": self.id,
            "catalog": self.catalog,
            "table": {"namespace": list(self.namespace), "name": self.name},
            "jobs": list(self.jobs),
            "dry-run": self.dry_run,
            "status": self.status,
            "results": self.results,
            "requested-by": self.requested_by,
            "created-at": self.created_at.isoformat(),
            "started-at": _moment(self.started_at),
            "finished-at": _moment(self.finished_at),
            "error": self.error,
        }


def _moment(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _run(row: Any) -> MaintenanceRun:
    return MaintenanceRun(
        id=row.id,
        catalog=row.catalog,
        namespace=tuple(json.loads(row.namespace)),
        name=row.name,
        jobs=tuple(json.loads(row.jobs)),
        dry_run=bool(row.dry_run),
        status=row.status,
        requested_by=row.requested_by,
        created_at=as_utc(row.created_at),
        results=json.loads(row.results) if row.results else {},
        started_at=None if row.started_at is None else as_utc(row.started_at),
        finished_at=None if row.finished_at is None else as_utc(row.finished_at),
        error=row.error,
    )


def table_key(catalog: str, namespace: Sequence[str], name: str) -> str:
    """The digest that names one table in ``lease_key`` (any length of names fits the column)."""
    return hashlib.sha256(json.dumps([catalog, list(namespace), name]).encode()).hexdigest()


def new_run(
    catalog: str, namespace: Sequence[str], name: str, jobs: Sequence[str], dry_run: bool, requested_by: str
) -> MaintenanceRun:
    """A run requested now, queued."""
    return MaintenanceRun(
        uuid.uuid4().hex,
        catalog,
        tuple(namespace),
        name,
        tuple(jobs),
        dry_run,
        "queued",
        requested_by,
        datetime.now(UTC),
    )


class MaintenanceStore:
    """Runs of every catalog; each method is one short transaction in a worker thread."""

    def __init__(self, engine: Engine, threads: ThreadRunner, kept_per_table: int = 100) -> None:
        self._engine, self._threads, self._kept = engine, threads, kept_per_table

    async def add(self, run: MaintenanceRun) -> None:
        """Queue ``run`` and forget its table's finished runs but the newest ``kept_per_table`` (one transaction):
        one run of a table is queued at a time, but a writer requesting a dry run each time the last one finished
        would otherwise add rows without end."""
        await self._threads.run(self._add, run)

    def _add(self, run: MaintenanceRun) -> None:
        statement = insert(RUNS).values(
            id=run.id,
            catalog=run.catalog,
            namespace=json.dumps(list(run.namespace)),
            name=run.name,
            jobs=json.dumps(list(run.jobs)),
            dry_run=run.dry_run,
            status=run.status,
            requested_by=run.requested_by,
            created_at=run.created_at,
        )
        same = and_(
            RUNS.c.catalog == run.catalog,
            RUNS.c.namespace == json.dumps(list(run.namespace)),
            RUNS.c.name == run.name,
            RUNS.c.status.in_(FINISHED),
        )
        kept = select(RUNS.c.created_at).where(same).order_by(RUNS.c.created_at.desc())
        with database_errors("State database"), self._engine.begin() as conn:
            conn.execute(statement)
            oldest_kept = conn.execute(kept.offset(self._kept - 1).limit(1)).first()
            if oldest_kept is not None:
                conn.execute(delete(RUNS).where(same, RUNS.c.created_at < oldest_kept.created_at))

    async def get(self, catalog: str, run_id: str) -> MaintenanceRun | None:
        where = and_(RUNS.c.catalog == catalog, RUNS.c.id == run_id)
        found = await self._threads.run(self._select, select(RUNS).where(where))
        return found[0] if found else None

    async def page(
        self, catalog: str, namespace: Sequence[str] | None, name: str | None, offset: int, limit: int
    ) -> list[MaintenanceRun]:
        """Runs of ``catalog`` (of one namespace, of one table), newest first."""
        conditions = [RUNS.c.catalog == catalog]
        if namespace is not None:
            conditions.append(RUNS.c.namespace == json.dumps(list(namespace)))
        if name is not None:
            conditions.append(RUNS.c.name == name)
        statement = (
            select(RUNS).where(*conditions).order_by(RUNS.c.created_at.desc(), RUNS.c.id).offset(offset).limit(limit)
        )
        return await self._threads.run(self._select, statement)

    async def queued(self, catalog: str, namespace: Sequence[str], name: str) -> MaintenanceRun | None:
        """A queued run of the table, if any (at most one is queued per table: see ``Maintenance.submit``)."""
        where = and_(
            RUNS.c.catalog == catalog,
            RUNS.c.namespace == json.dumps(list(namespace)),
            RUNS.c.name == name,
            RUNS.c.status == "queued",
        )
        found = await self._threads.run(self._select, select(RUNS).where(where).limit(1))
        return found[0] if found else None

    async def claim(
        self, catalogs: Sequence[str], holder: str, lease: timedelta, running: Collection[str] = ()
    ) -> MaintenanceRun | None:
        """Claim one queued run of ``catalogs`` whose table no other run holds, or one whose lease ran out, but none
        of ``running``: the runs the caller still runs itself. A replica that stalled past its lease (a long pause, a
        loaded host) must not take its own run again when it thaws: it would run the same jobs twice at once, and
        its first attempt goes on, since the holder is the same."""
        return await self._threads.run(self._claim, catalogs, holder, lease, tuple(running))

    async def claim_run(self, run_id: str, holder: str, lease: timedelta) -> MaintenanceRun | None:
        """Claim run ``run_id`` as :meth:`claim` would (None: not claimable now, or its table is held)."""
        return await self._threads.run(self._claim_run, run_id, holder, lease)

    async def renew(self, run_id: str, holder: str, lease: timedelta) -> bool:
        """Extend the lease; False when the run is no longer this holder's (taken over)."""
        where = and_(RUNS.c.id == run_id, RUNS.c.holder == holder, RUNS.c.status == "running")
        statement = update(RUNS).where(where).values(lease_expires_at=datetime.now(UTC) + lease)
        return bool(await self._threads.run(self._execute, statement))

    async def finish(self, run_id: str, holder: str, status: str, results: dict[str, Any], error: str | None) -> bool:
        """Record the outcome and let go of the table; False when the run was taken over meanwhile."""
        where = and_(RUNS.c.id == run_id, RUNS.c.holder == holder, RUNS.c.status == "running")
        statement = (
            update(RUNS)
            .where(where)
            .values(
                status=status,
                results=json.dumps(results),
                error=error,
                finished_at=datetime.now(UTC),
                lease_key=None,
                lease_expires_at=None,
            )
        )
        return bool(await self._threads.run(self._execute, statement))

    async def checkpoint(self, run_id: str) -> dict[str, Any]:
        """Each job's notes of the run (``Job.checkpoint``): what an attempt killed midway left to finish."""
        rows = await self._threads.run(self._checkpoint, run_id)
        return json.loads(rows) if rows else {}

    async def save_checkpoint(self, run_id: str, holder: str, notes: dict[str, Any]) -> bool:
        """Store the run's notes while this holder runs it; False when the run was taken over."""
        where = and_(RUNS.c.id == run_id, RUNS.c.holder == holder, RUNS.c.status == "running")
        statement = update(RUNS).where(where).values(checkpoint=json.dumps(notes))
        return bool(await self._threads.run(self._execute, statement))

    # Blocking parts ------------------------------------------------------------------------------------------
    def _execute(self, statement: Any) -> int:
        with database_errors("State database"), self._engine.begin() as conn:
            return int(conn.execute(statement).rowcount)

    def _select(self, statement: Any) -> list[MaintenanceRun]:
        with database_errors("State database"), self._engine.begin() as conn:
            return [_run(row) for row in conn.execute(statement)]

    def _checkpoint(self, run_id: str) -> str | None:
        with database_errors("State database"), self._engine.begin() as conn:
            row = conn.execute(select(RUNS.c.checkpoint).where(RUNS.c.id == run_id)).first()
        return None if row is None else row.checkpoint

    def _claim(
        self, catalogs: Sequence[str], holder: str, lease: timedelta, running: tuple[str, ...]
    ) -> MaintenanceRun | None:
        now = datetime.now(UTC)
        statement = (
            select(RUNS)
            .where(RUNS.c.catalog.in_(list(catalogs)), _claimable(now), RUNS.c.id.not_in(running))
            .order_by(RUNS.c.created_at)
            .limit(_CANDIDATES)
        )
        held = select(RUNS.c.lease_key).where(RUNS.c.lease_key.is_not(None), RUNS.c.lease_expires_at > now)
        with database_errors("State database"), self._engine.begin() as conn:
            busy = {key for (key,) in conn.execute(held)}
            rows = conn.execute(statement).all()
        # A table a run holds now cannot be claimed: its queued runs are passed over, so they cannot keep every
        # other table's runs waiting behind them.
        candidates = [row for row in rows if table_key(row.catalog, json.loads(row.namespace), row.name) not in busy]
        for row in candidates:
            taken = self._take(row, holder, lease, now)
            if taken is not None:
                return taken
        return None

    def _claim_run(self, run_id: str, holder: str, lease: timedelta) -> MaintenanceRun | None:
        now = datetime.now(UTC)
        with database_errors("State database"), self._engine.begin() as conn:
            row = conn.execute(select(RUNS).where(RUNS.c.id == run_id, _claimable(now))).first()
        return None if row is None else self._take(row, holder, lease, now)

    def _take(self, row: Any, holder: str, lease: timedelta, now: datetime) -> MaintenanceRun | None:
        """Claim ``row`` if nobody changed it since it was read and no other run holds its table."""
        same = and_(
            RUNS.c.id == row.id,
            RUNS.c.status == row.status,
            RUNS.c.holder.is_(None) if row.holder is None else RUNS.c.holder == row.holder,
        )
        taken = (
            update(RUNS)
            .where(same)
            .values(
                status="running",
                holder=holder,
                lease_key=table_key(row.catalog, json.loads(row.namespace), row.name),
                lease_expires_at=now + lease,
                started_at=now,
            )
        )
        try:
            with database_errors("State database"), self._engine.begin() as conn:
                if conn.execute(taken).rowcount == 1:
                    found = conn.execute(select(RUNS).where(RUNS.c.id == row.id)).first()
                    return None if found is None else _run(found)
        except IntegrityError:  # another run of the same table holds its key
            pass
        return None


def _claimable(now: datetime) -> Any:
    """Queued, or running on a lease that ran out (its replica died)."""
    return or_(RUNS.c.status == "queued", and_(RUNS.c.status == "running", RUNS.c.lease_expires_at <= now))
