"""Reading the audit trail back: filtered by time, principal, object, operation and decision, newest first,
paged by record id."""

from __future__ import annotations

import datetime
from typing import Any

from sqlalchemy import Engine, select
from sqlmodel import col

from irc_proxy.dberrors import database_errors
from irc_proxy.stores.db import as_utc
from irc_proxy.stores.tables import AuditRecordRow
from irc_proxy.threads import ThreadRunner


def query_audit(
    engine: Engine,
    *,
    since: datetime.datetime | None = None,
    until: datetime.datetime | None = None,
    principal: str | None = None,
    object_prefix: str | None = None,
    operation: str | None = None,
    operation_prefix: str | None = None,
    decision: str | None = None,
    before_id: int | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Matching records as plain dicts with ``time`` in ISO 8601 UTC (``Z``); ``before_id`` resumes after the
    last record of a previous page (ids only grow)."""
    query = select(*AuditRecordRow.__table__.c).order_by(col(AuditRecordRow.id).desc()).limit(max(limit, 0))  # type: ignore[attr-defined]
    if since is not None:
        query = query.where(col(AuditRecordRow.time) >= since)
    if until is not None:
        query = query.where(col(AuditRecordRow.time) < until)
    if principal is not None:
        query = query.where(col(AuditRecordRow.principal) == principal)
    if object_prefix is not None:
        query = query.where(col(AuditRecordRow.object).startswith(object_prefix, autoescape=True))
    if operation is not None:
        query = query.where(col(AuditRecordRow.operation) == operation)
    if operation_prefix is not None:
        query = query.where(col(AuditRecordRow.operation).startswith(operation_prefix, autoescape=True))
    if decision is not None:
        query = query.where(col(AuditRecordRow.decision) == decision)
    if before_id is not None:
        query = query.where(col(AuditRecordRow.id) < before_id)
    with database_errors("State database"), engine.connect() as conn:
        rows = [dict(row._mapping) for row in conn.execute(query)]
    for row in rows:
        row["time"] = as_utc(row["time"]).astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")
    return rows


class AuditReader:
    """:func:`query_audit` off the event loop."""

    def __init__(self, engine: Engine, threads: ThreadRunner) -> None:
        self._engine = engine
        self._threads = threads

    async def query(self, **filters: Any) -> list[dict[str, Any]]:
        return await self._threads.run(lambda: query_audit(self._engine, **filters))
