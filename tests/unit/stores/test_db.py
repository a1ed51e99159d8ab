"""The state database's start-up check, migrations and schema lock, on SQLite files."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from pyiceberg.catalog.sql import SqlCatalogBaseTable

from irc_proxy.stores import db


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = db.create_state_engine(f"sqlite:///{tmp_path / 'nested' / 'state.db'}")
    yield engine
    engine.dispose()


def test_an_empty_database_is_initialised_at_start_up(engine: sa.Engine) -> None:
    db.ensure_schema(engine, auto_upgrade=False)
    assert db.current_revision(engine) == db.head_revision()


def test_a_database_holding_only_a_local_catalog_is_initialised(engine: sa.Engine) -> None:
    SqlCatalogBaseTable.metadata.create_all(engine)
    db.ensure_schema(engine, auto_upgrade=False)
    assert db.current_revision(engine) == db.head_revision()


def test_a_foreign_database_is_refused(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE someone_elses (id INTEGER PRIMARY KEY)"))
    with pytest.raises(db.SchemaOutOfDate, match="revision none"):
        db.ensure_schema(engine, auto_upgrade=False)
    assert db.current_revision(engine) is None


def test_an_older_schema_is_refused_unless_auto_upgrade(engine: sa.Engine) -> None:
    command.upgrade(db._alembic_config(engine), "0010")
    with pytest.raises(db.SchemaOutOfDate, match=f"revision 0010 but this irc-proxy needs {db.head_revision()}"):
        db.ensure_schema(engine, auto_upgrade=False)
    assert db.current_revision(engine) == "0010"
    db.ensure_schema(engine, auto_upgrade=True)
    assert db.current_revision(engine) == db.head_revision()


def test_upgrade_says_where_it_started(engine: sa.Engine) -> None:
    assert db.upgrade(engine) == (None, db.head_revision())
    assert db.upgrade(engine) == (db.head_revision(), db.head_revision())


def test_the_sqlite_schema_lock_admits_one_holder_at_a_time(engine: sa.Engine) -> None:
    second_holds = threading.Event()

    def second() -> None:
        with db.schema_lock(engine):
            second_holds.set()

    with db.schema_lock(engine):
        thread = threading.Thread(target=second)
        thread.start()
        assert not second_holds.wait(0.3)
    assert second_holds.wait(10)
    thread.join()


def test_ping_answers_and_as_utc_adds_the_zone(engine: sa.Engine) -> None:
    db.ping(engine)
    naive = datetime(2026, 1, 2, 3, 4, 5)
    assert db.as_utc(naive) == naive.replace(tzinfo=UTC)
    other = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    assert db.as_utc(other) is other


def test_the_cached_head_revision_is_alembics() -> None:
    """Start-up compares the stored revision with ``HEAD_REVISION`` without Alembic: a new migration bumps it."""
    assert db.head_revision() == db.HEAD_REVISION
