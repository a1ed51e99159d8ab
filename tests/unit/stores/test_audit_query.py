"""Reading the audit trail back: every filter narrows, newest first, pages by id, times in UTC with ``Z``."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlmodel import Session

from irc_proxy.stores.audit_query import AuditReader, query_audit
from irc_proxy.stores.tables import AuditRecordRow
from irc_proxy.threads import ThreadRunner

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def record(principal: str, minute: int, operation: str, obj: str, decision: str = "allow") -> AuditRecordRow:
    return AuditRecordRow(
        time=T0 + timedelta(minutes=minute),
        principal=principal,
        operation=operation,
        catalog="lake",
        object=obj,
        decision=decision,
        status=200 if decision == "allow" else 403,
        request_id="r",
        latency_ms=1.5,
    )


def seed(engine: sa.Engine, principal: str) -> None:
    with Session(engine) as session, session.begin():
        session.add(record(principal, 0, "loadTable", "lake.sales.orders"))
        session.add(record(principal, 1, "updateTable", "lake.sales.orders", "deny"))
        session.add(record(principal, 2, "loadView", "lake.sales_x.v"))
        session.add(record(principal, 3, "admin.createPrincipal", "principal:etl"))


def ops(rows: list[dict[str, object]]) -> list[object]:
    return [row["operation"] for row in rows]


def test_records_come_newest_first_with_utc_times(state_engine: sa.Engine, uid: str) -> None:
    seed(state_engine, uid)
    rows = query_audit(state_engine, principal=uid)
    assert ops(rows) == ["admin.createPrincipal", "loadView", "updateTable", "loadTable"]
    assert rows[-1]["time"] == "2026-03-01T12:00:00Z"


def test_each_filter_narrows_the_records(state_engine: sa.Engine, uid: str) -> None:
    seed(state_engine, uid)
    assert ops(query_audit(state_engine, principal=uid, decision="deny")) == ["updateTable"]
    assert ops(query_audit(state_engine, principal=uid, operation="loadView")) == ["loadView"]
    assert ops(query_audit(state_engine, principal=uid, operation_prefix="admin.")) == ["admin.createPrincipal"]
    assert ops(
        query_audit(state_engine, principal=uid, since=T0 + timedelta(minutes=1), until=T0 + timedelta(minutes=3))
    ) == ["loadView", "updateTable"]
    assert query_audit(state_engine, principal=f"other-{uid}") == []


def test_an_object_prefix_is_matched_literally_not_as_a_like_pattern(state_engine: sa.Engine, uid: str) -> None:
    seed(state_engine, uid)
    assert ops(query_audit(state_engine, principal=uid, object_prefix="lake.sales_")) == ["loadView"]
    assert ops(query_audit(state_engine, principal=uid, object_prefix="lake.sales.")) == ["updateTable", "loadTable"]
    assert query_audit(state_engine, principal=uid, object_prefix="lake.sales%") == []


def test_pages_resume_before_the_last_id_and_a_negative_limit_is_empty(state_engine: sa.Engine, uid: str) -> None:
    seed(state_engine, uid)
    first = query_audit(state_engine, principal=uid, limit=3)
    rest = query_audit(state_engine, principal=uid, limit=3, before_id=first[-1]["id"])
    assert ops(first) + ops(rest) == ["admin.createPrincipal", "loadView", "updateTable", "loadTable"]
    assert query_audit(state_engine, principal=uid, limit=-1) == []


def test_the_reader_queries_off_the_event_loop(state_engine: sa.Engine, threads: ThreadRunner, uid: str) -> None:
    seed(state_engine, uid)
    rows = asyncio.run(AuditReader(state_engine, threads).query(principal=uid, decision="deny"))
    assert ops(rows) == ["updateTable"]
