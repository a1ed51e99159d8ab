"""The audit sink's rows are the rows SQLAlchemy's ``insert`` of the model writes, on SQLite and on PostgreSQL.

``DatabaseSink`` hands the driver tuples through an ``INSERT`` compiled once (``irc_proxy.audit``) instead of
``conn.execute(insert(AuditRecordRow), dicts)``. This writes the same records both ways into one table and
compares what the database holds, value by value with the storage type each value has (SQLite) or the
server's text of each value (PostgreSQL), then what the audit query (the admin API, the console, the CLI)
reads back.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from irc_proxy.audit import AuditRecord, DatabaseSink
from irc_proxy.stores import db
from irc_proxy.stores.audit_query import query_audit
from irc_proxy.stores.tables import AuditRecordRow
from irc_proxy.threads import ThreadRunner
from tests.support.postgres import scratch_database

COLUMNS = "time, principal, operation, catalog, object, decision, reason, status, request_id, latency_ms"
T = datetime(2026, 11, 28, 16, 46, 10, 123456, tzinfo=UTC)
INDIA = timezone(timedelta(hours=5, minutes=30))


def records(tag: str) -> list[AuditRecord]:
    """Records of every shape: plain, without catalog/object/reason, non-ASCII text, a lone surrogate (made
    storable), a whole second (no microseconds), another zone, an early year, an integral latency."""
    return [
        AuditRecord(T, "alice", "loadTable", "lake", "sales.orders", 200, f"{tag}-1", 1.2345678901234567),
        AuditRecord(T, "anonymous", "ui.catalogs", None, None, 401, f"{tag}-2", 0.0, "denied", None),
        AuditRecord(T, "zoë", "createTable", "läke", "ventes.commandes", 403, f"{tag}-3", 3.5, "denied", "pas ça"),
        AuditRecord(T, "mallory", "loadTable", "lake", "ns.\ud800x", 400, f"{tag}-4", 2.0, "allowed", "bad \udcff"),
        AuditRecord(T.replace(microsecond=0), "bob", "listTables", "lake", "a", 200, f"{tag}-5", 10),
        AuditRecord(T.astimezone(INDIA), "bob", "x", "c", "o", 204, f"{tag}-6", 1e-9),
        AuditRecord(datetime(5, 1, 2, 3, 4, 5, 6, tzinfo=UTC), "carol", "drop", "lake", "o", 204, f"{tag}-7", 1e300),
    ]


def write_the_old_way(engine: sa.Engine, batch: list[AuditRecord]) -> None:
    """What ``DatabaseSink._insert`` did before: SQLAlchemy core's executemany of dicts (lone surrogates made
    storable the same way)."""
    rows = [{k: _valid(v) for k, v in vars(record).items()} for record in batch]
    with engine.begin() as conn:
        conn.execute(sa.insert(AuditRecordRow), rows)


def _valid(value: Any) -> Any:
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            return value.encode(errors="backslashreplace").decode()
    return value


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    if request.param == "sqlite":
        made = db.create_state_engine(f"sqlite:///{tmp_path / 'state.db'}")
        db.ensure_schema(made, auto_upgrade=True)
        yield made
        made.dispose()
        return
    with scratch_database() as url:
        made = db.create_state_engine(url)
        db.ensure_schema(made, auto_upgrade=True)
        yield made
        made.dispose()


def stored(engine: sa.Engine, tag: str) -> list[tuple[Any, ...]]:
    """The rows of ``tag`` as the database holds them (the request id without its tag)."""
    if engine.dialect.name == "sqlite":
        values = ", ".join(f"{c}, typeof({c})" for c in COLUMNS.split(", "))
    else:
        values = ", ".join(f"{c}::text, pg_typeof({c})::text" for c in COLUMNS.split(", "))
    query = f"SELECT {values} FROM audit_record WHERE substr(request_id, 1, 4) = '{tag}-' ORDER BY id"
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(query).all()
    return [tuple(v.split("-", 1)[1] if isinstance(v, str) and v.startswith(f"{tag}-") else v for v in r) for r in rows]


def test_the_sink_stores_every_value_as_sqlalchemy_s_insert_did(engine: sa.Engine) -> None:
    write_the_old_way(engine, records("old"))
    DatabaseSink(engine, ThreadRunner(1), 100, 100)._insert(records("new"))

    old, new = stored(engine, "old"), stored(engine, "new")
    assert len(old) == len(records("old"))
    assert new == old
    if engine.dialect.name == "sqlite":
        assert old[0][:2] == ("2026-11-28 16:46:10.123456", "text")  # SQLAlchemy's DateTime text, zone dropped
        assert old[3][8] == "ns.\\ud800x"


def test_the_audit_query_reads_the_sink_s_rows_as_it_read_the_old_ones(engine: sa.Engine) -> None:
    write_the_old_way(engine, records("old"))
    DatabaseSink(engine, ThreadRunner(1), 100, 100)._insert(records("new"))

    read = query_audit(engine, limit=100)
    old = [r | {"id": None, "request_id": r["request_id"][4:]} for r in read if r["request_id"].startswith("old-")]
    new = [r | {"id": None, "request_id": r["request_id"][4:]} for r in read if r["request_id"].startswith("new-")]
    assert len(old) == len(records("old"))
    assert new == old
    since = query_audit(engine, since=T, until=T + timedelta(microseconds=1), limit=100)
    found = sorted(r["request_id"] for r in since)
    assert [r[4:] for r in found if r.startswith("new-")] == [r[4:] for r in found if r.startswith("old-")]
    assert {"new-1", "new-4"} <= set(found)  # SQLite compares the stored text; PostgreSQL the instant
