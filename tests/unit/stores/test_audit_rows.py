"""The audit sink's rows are the rows SQLAlchemy's ``insert`` of the model writes, on SQLite and on PostgreSQL.

``DatabaseSink`` writes a batch in a few statements (``irc_proxy.audit``: multi-row ``VALUES`` on SQLite, the rows
of one JSON array on PostgreSQL; ``executemany`` for a batch JSON cannot carry) instead of
``conn.execute(insert(AuditRecordRow), dicts)``. This writes the same records both ways into one table and
compares what the database holds, value by value with the storage type each value has (SQLite) or the
server's text of each value (PostgreSQL), then what the audit query (the admin API, the console, the CLI)
reads back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
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


def hostile(tag: str) -> list[AuditRecord]:
    """Texts a JSON or SQL round trip could change: astral characters, quotes, backslashes, control characters,
    texts that read as JSON, numbers, ``null`` or escapes, a NUL (stored as ``\\x00``), texts over their column's
    length (cut), a lone surrogate next to an astral character; latencies at the ends of a double's range, a
    negative zero, integral ones as ``int`` and as ``float``."""
    odd = [
        "😀 ünïcödé 𝄞 \U0010ffff",
        'it\'s "quoted" \\ back\\slash \\u0041 \\x00 \\n',
        "\x01\x07\t\n\r\x1b\x1f\x7f\x80\x9f\u2028\u2029\ufeff",
        '{"a": [1, 2.0, null]}',
        "[1, 2]",
        "1e5",
        "null",
        "true",
        " 12 ",
        "-0",
        "NaN",
        "a\x00b",
        "\ud83d\ude00 lone \udfff then 😀",
        "",
    ]
    made = [
        AuditRecord(T, text, "loadTable", text, text, 200, f"{tag}-{i}", 1.5, "denied", text)
        for i, text in enumerate(odd)
    ]
    latencies: list[float] = [2, 2.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1, 1e16, 12345]
    made += [AuditRecord(T, "p", "o", None, None, 200, f"{tag}-l{i}", latency) for i, latency in enumerate(latencies)]
    made.append(AuditRecord(T, "é" * 300, "op", "ç" * 300, "o" * 1100 + "😀", 200, f"{tag}-long", 1.0, "x", "r" * 9))
    return made


def write_the_old_way(engine: sa.Engine, batch: list[AuditRecord]) -> None:
    """What ``DatabaseSink._insert`` did before: SQLAlchemy core's executemany of dicts (texts made storable as
    the threat model says: a lone surrogate escaped, a NUL written ``\\x00``, a text cut to its column's length)."""
    rows = [{k: _valid(k, v) for k, v in vars(record).items()} for record in batch]
    with engine.begin() as conn:
        conn.execute(sa.insert(AuditRecordRow), rows)


def _valid(column: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    value = value.encode(errors="backslashreplace").decode().replace("\x00", "\\x00")
    length = getattr(AuditRecordRow.__table__.c[column].type, "length", None)  # type: ignore[attr-defined]
    if length is not None and len(value) > length:
        more = f"...({len(value) - length} more)"
        value = value[: length - len(more)] + more
    return value


@contextmanager
def statements(engine: sa.Engine) -> Iterator[list[tuple[str, bool]]]:
    """The statements the driver is given meanwhile, each with whether it went as an ``executemany``."""
    seen: list[tuple[str, bool]] = []

    def before(_c: Any, _cursor: Any, statement: str, _parameters: Any, _context: Any, executemany: bool) -> None:
        seen.append((statement, executemany))

    sa.event.listen(engine, "before_cursor_execute", before)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", before)


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
    with statements(engine) as seen:
        DatabaseSink(engine, ThreadRunner(1), 100, 100)._insert(records("new"))
    assert [many for _, many in seen] == [False] * len(seen)  # one statement for many rows, not executemany

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


def test_hostile_texts_and_numbers_are_stored_as_sqlalchemy_s_insert_stored_them(engine: sa.Engine) -> None:
    write_the_old_way(engine, hostile("old"))
    with statements(engine) as seen:
        DatabaseSink(engine, ThreadRunner(1), 100, 100)._insert(hostile("new"))

    old, new = stored(engine, "old"), stored(engine, "new")
    assert len(old) == len(hostile("old"))
    assert new == old
    assert [many for _, many in seen] == [False] * len(seen)
    texts = {row[16]: row[2] for row in old}  # request id: principal
    assert texts["0"] == "😀 ünïcödé 𝄞 \U0010ffff"
    assert texts["5"] == "1e5"
    assert texts["6"] == "null"
    assert texts["11"] == "a\\x00b"
    assert texts["12"] == "\\ud83d\\ude00 lone \\udfff then 😀"  # a pair of lone surrogates is no emoji
    if engine.dialect.name == "sqlite":
        assert {row[3] for row in old[:14]} == {"text"}  # "1e5", "null", " 12 " stay text
        assert [row[18:] for row in old[14:16]] == [(2.0, "real"), (2.0, "real")]
    else:
        assert [row[18] for row in old[14:23]] == [
            "2",
            "2",
            "-0",
            "5e-324",
            "2.2250738585072014e-308",
            "1.7976931348623157e+308",
            "0.1",
            "1e+16",
            "12345",
        ]


@pytest.mark.parametrize("size", [1, 2, 63, 64, 65, 127, 128, 450, 1000])
def test_a_batch_of_any_size_is_written_whole_in_order_in_a_few_statements(engine: sa.Engine, size: int) -> None:
    batch = [AuditRecord(T, "p", "o", "c", f"n.{i}", 200, f"new-{i}", i / 7) for i in range(size)]
    with statements(engine) as seen:
        DatabaseSink(engine, ThreadRunner(1), size, size)._insert(batch)

    rows = stored(engine, "new")
    assert [row[16] for row in rows] == [str(i) for i in range(size)]
    assert [float(row[18]) for row in rows] == [i / 7 for i in range(size)]
    inserts = [many for sql, many in seen if sql.startswith("INSERT")]
    assert not any(inserts)
    if engine.dialect.name == "sqlite":  # 512 rows a statement, then 256, 128, ... 1 (1000: 512, 256, 128, 64, 32, 8)
        assert len(inserts) == size // 512 + (size % 512).bit_count()
    else:
        assert len(inserts) == 1


def test_under_the_999_parameters_of_sqlite_before_3_32_a_statement_takes_64_rows(tmp_path: Path) -> None:
    engine = db.create_state_engine(f"sqlite:///{tmp_path / 'state.db'}")
    db.ensure_schema(engine, auto_upgrade=True)
    engine.dispose()
    sa.event.listen(engine, "connect", lambda conn, _: conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999))
    batch = [AuditRecord(T, "p", "o", "c", f"n.{i}", 200, f"new-{i}", i / 7) for i in range(450)]
    with statements(engine) as seen:
        DatabaseSink(engine, ThreadRunner(1), 450, 450)._insert(batch)

    assert [row[16] for row in stored(engine, "new")] == [str(i) for i in range(450)]
    inserts = [sql.count("?") for sql, _ in seen if sql.startswith("INSERT")]
    assert inserts == [640] * 7 + [20]  # 7 x 64 rows, then 2 (SQLite 3.32 and later: 256, 128, 64, 2)
    engine.dispose()


ODD = {
    "infinite": (T, float("inf")),
    "minus infinite": (T, float("-inf")),
    "not a number": (T, float("nan")),
    "offset with a fraction of a second": (T.astimezone(timezone(timedelta(seconds=30, microseconds=5))), 1.0),
    "offset with seconds": (T.astimezone(timezone(timedelta(hours=-3, seconds=-15))), 1.0),
    "naive": (T.replace(tzinfo=None), 1.0),
}


@pytest.mark.parametrize("odd", list(ODD))
def test_odd_times_and_latencies_are_written_as_before(engine: sa.Engine, odd: str) -> None:
    """PostgreSQL: a NaN or infinite latency (JSON has neither), a zone offset with a fraction of a second (no
    text PostgreSQL reads): the batch goes row by row, as it did, rather than failing; an offset with seconds and a
    naive time (the session's zone) go as text. SQLite binds every value as it did (a NaN becomes NULL there,
    which the column refuses: the batch failed before too)."""
    moment, latency = ODD[odd]
    if engine.dialect.name == "sqlite" and latency != latency:
        pytest.skip("SQLite stores a NaN as NULL")

    def batch(tag: str) -> list[AuditRecord]:
        return [
            AuditRecord(T, "a", "o", None, None, 200, f"{tag}-1", 1.0),
            AuditRecord(moment, "a", "o", None, None, 200, f"{tag}-2", latency),
            AuditRecord(T, "a", "o", None, None, 200, f"{tag}-3", 1.0),
        ]

    write_the_old_way(engine, batch("old"))
    DatabaseSink(engine, ThreadRunner(1), 100, 100)._insert(batch("new"))

    assert stored(engine, "new") == stored(engine, "old")
    assert len(stored(engine, "old")) == 3
