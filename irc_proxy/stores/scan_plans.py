"""Server-side scan plans in the state database, so any replica answers a poll, a task fetch or a cancel.

A row holds what is needed to plan again any piece of the plan (the table, the metadata file it was
planned on, the request) and, once planned, the chunks of manifests its plan tasks stand for (as
``[start, end, entry]`` positions in the manifest list, ``[]`` once answered). A plan with nothing left to
fetch (or cancelled) keeps neither request nor chunks, and no row is larger than ``MAX_ROW_BYTES``. Rows
live for ``ttl`` after they are created and are purged opportunistically afterwards.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete, insert, select, update

from irc_proxy.dberrors import database_errors
from irc_proxy.errors import PayloadTooLarge
from irc_proxy.stores.db import as_utc
from irc_proxy.stores.tables import ScanPlanRow, table_of
from irc_proxy.threads import ThreadRunner

PLANS = table_of(ScanPlanRow)
PURGE_INTERVAL_SECONDS = 60.0
MAX_ROW_BYTES = 4 << 20
"""A plan's request and chunks together (a request is at most 1 MiB: ``planning.planner``)."""


def _encoded(request: dict[str, Any], chunks: list[list[int]] | None) -> tuple[str, str | None]:
    """The request and chunks as stored: without the request when no chunk is left to fetch. Raises PayloadTooLarge."""
    if chunks is not None and not any(chunks):
        request, chunks = {}, []
    encoded = json.dumps(request, separators=(",", ":")), None if chunks is None else json.dumps(chunks)
    if len(encoded[0]) + len(encoded[1] or "") > MAX_ROW_BYTES:
        raise PayloadTooLarge(f"The scan plan is too large to keep (over {MAX_ROW_BYTES} bytes): narrow the scan")
    return encoded


@dataclass(frozen=True)
class PlanOwner:
    """Whose plan it is: the principal, and the table it scans."""

    principal: str
    catalog: str
    namespace: tuple[str, ...]
    name: str


@dataclass(frozen=True)
class StoredPlan:
    plan_id: str
    owner: PlanOwner
    status: str
    """``submitted``, ``completed``, ``failed`` or ``cancelled``."""
    metadata_location: str
    request: dict[str, Any]
    chunks: list[list[int]] | None
    error: dict[str, Any] | None
    updated_at: datetime


class ScanPlanStore:
    """Create, read and settle plans; every method is one short transaction in a worker thread."""

    def __init__(self, engine: Engine, threads: ThreadRunner, ttl: timedelta) -> None:
        self._engine, self._threads, self.ttl = engine, threads, ttl
        self._purged_at = 0.0

    async def create(
        self,
        plan_id: str,
        owner: PlanOwner,
        metadata_location: str,
        request: dict[str, Any],
        chunks: list[list[int]] | None,
    ) -> None:
        """Store a new plan: ``completed`` with its ``chunks``, or ``submitted`` (chunks None) until settled."""
        now = datetime.now(UTC)
        request_text, chunks_text = _encoded(request, chunks)
        row = {
            "plan_id": plan_id,
            "principal": owner.principal,
            "catalog": owner.catalog,
            "namespace": json.dumps(list(owner.namespace)),
            "name": owner.name,
            "status": "submitted" if chunks is None else "completed",
            "metadata_location": metadata_location,
            "request": request_text,
            "chunks": chunks_text,
            "created_at": now,
            "updated_at": now,
            "expires_at": now + self.ttl,
        }
        await self._threads.run(self._execute, insert(PLANS).values(**row))

    async def get(self, plan_id: str) -> StoredPlan | None:
        """The plan, or None when there is none (or it expired)."""
        return await self._threads.run(self._get, plan_id)

    async def complete(self, plan_id: str, chunks: list[list[int]], request: dict[str, Any]) -> bool:
        """Settle a submitted plan as completed with its ``chunks`` and the ``request`` to plan them with; False when
        it is no longer submitted (cancelled, gone)."""
        request_text, chunks_text = _encoded(request, chunks)
        return await self._settle(plan_id, "completed", chunks=chunks_text, request=request_text)

    async def fail(self, plan_id: str, error: dict[str, Any]) -> bool:
        """Settle a submitted plan as failed with the spec's ``error`` object."""
        return await self._settle(plan_id, "failed", error=json.dumps(error), request="{}")

    async def cancel(self, plan_id: str) -> bool:
        """Cancel the plan (its tasks are gone); False when there is no such plan."""
        statement = (
            update(PLANS)
            .where(PLANS.c.plan_id == plan_id, PLANS.c.expires_at > datetime.now(UTC))
            .values(status="cancelled", chunks=None, request="{}", updated_at=datetime.now(UTC))
        )
        return bool(await self._threads.run(self._execute, statement))

    async def _settle(self, plan_id: str, status: str, **values: Any) -> bool:
        statement = (
            update(PLANS)
            .where(PLANS.c.plan_id == plan_id, PLANS.c.status == "submitted")
            .values(status=status, updated_at=datetime.now(UTC), **values)
        )
        return bool(await self._threads.run(self._execute, statement))

    # Blocking parts, run in worker threads ----------------------------------------------------------------
    def _execute(self, statement: Any) -> int:
        with database_errors("State database"), self._engine.begin() as conn:
            return int(conn.execute(statement).rowcount)

    def _get(self, plan_id: str) -> StoredPlan | None:
        if time.monotonic() - self._purged_at > PURGE_INTERVAL_SECONDS:
            self._purged_at = time.monotonic()
            self._execute(delete(PLANS).where(PLANS.c.expires_at < datetime.now(UTC)))
        with database_errors("State database"), self._engine.begin() as conn:
            row = conn.execute(select(PLANS).where(PLANS.c.plan_id == plan_id)).first()
        if row is None or as_utc(row.expires_at) <= datetime.now(UTC):
            return None
        return StoredPlan(
            plan_id=row.plan_id,
            owner=PlanOwner(row.principal, row.catalog, tuple(json.loads(row.namespace)), row.name),
            status=row.status,
            metadata_location=row.metadata_location,
            request=json.loads(row.request),
            chunks=None if row.chunks is None else json.loads(row.chunks),
            error=None if row.error is None else json.loads(row.error),
            updated_at=as_utc(row.updated_at),
        )
