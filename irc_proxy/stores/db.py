"""The state database: engine, Alembic migrations, the start-up schema check and the schema lock.

Every schema change (``irc-proxy db upgrade``, a start-up that initialises an empty database or the
local catalogs' tables) runs under ``schema_lock``: replicas that start together on one fresh database
take turns, and each re-checks the schema once it holds the lock, so exactly one of them changes it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event, inspect, text

from irc_proxy.dberrors import database_errors
from irc_proxy.errors import StartupError

MIGRATIONS = Path(__file__).parent / "migrations"
SCHEMA_LOCK_KEY = int.from_bytes(hashlib.sha256(b"irc-proxy schema").digest()[:8], "big", signed=True)
"""The PostgreSQL advisory lock (per database) every schema change holds."""
SCHEMA_LOCK_TIMEOUT = "120s"
"""How long a start-up waits for another process's schema change before refusing to start."""
CATALOG_TABLE_NAMES = frozenset({"iceberg_tables", "iceberg_namespace_properties"})
"""pyiceberg's SQL catalog tables (``irc_proxy.backends.local``), which may share the state database."""


class SchemaOutOfDate(StartupError):
    """The database schema is older (or newer) than this version of irc-proxy expects."""


def create_state_engine(url: str) -> Engine:
    """An engine for the state database (SQLite gets WAL and a busy timeout)."""
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///").split("?", 1)[0]).parent.mkdir(parents=True, exist_ok=True)
    # A short connect timeout: an unreachable database answers 503 quickly instead of hanging requests.
    connect_args = {"connect_timeout": 5} if url.startswith("postgresql") else {}
    engine = create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def ping(engine: Engine) -> None:
    """Raise unless the database answers ``SELECT 1`` (a readiness check)."""
    with database_errors("State database"), engine.connect() as conn:
        conn.execute(text("SELECT 1"))


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def head_revision() -> str:
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


@contextmanager
def schema_lock(engine: Engine) -> Iterator[None]:
    """Hold the database's schema lock: a PostgreSQL session advisory lock, or an exclusive ``flock`` on
    ``<file>.schema-lock`` beside a SQLite file. Both die with the process that holds them."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text(f"SET lock_timeout = '{SCHEMA_LOCK_TIMEOUT}'"))
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": SCHEMA_LOCK_KEY})
                conn.commit()
        return
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:" or database.startswith("file:"):
        yield  # an in-memory database belongs to this process alone
        return
    descriptor = os.open(f"{database}.schema-lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Bring the schema to the newest revision under the schema lock; returns (before, after)."""
    with schema_lock(engine):
        before = current_revision(engine)
        if before != head_revision():
            command.upgrade(_alembic_config(engine), "head")
    return before, head_revision()


def ensure_schema(engine: Engine, auto_upgrade: bool) -> None:
    """Refuse to run on an out-of-date schema; a brand-new empty database is initialised.

    The check runs without a lock; a change runs under ``schema_lock`` and checks again there (another
    replica may have just done it).

    Raises:
        SchemaOutOfDate: with a message saying which revision is there and what to run.
    """
    head = head_revision()
    if current_revision(engine) == head:
        return
    with schema_lock(engine):
        current = current_revision(engine)
        if current == head:
            return
        # Fresh: nothing but (perhaps) a local catalog's tables, when it shares this database.
        fresh = current is None and set(inspect(engine).get_table_names()) <= CATALOG_TABLE_NAMES
        if fresh or auto_upgrade:
            command.upgrade(_alembic_config(engine), "head")
            return
    raise SchemaOutOfDate(
        f"the state database schema is at revision {current or 'none'} but this irc-proxy needs {head}; "
        "run `irc-proxy db upgrade` (or set state.auto_upgrade = true)"
    )


def as_utc(moment: datetime) -> datetime:
    """A timestamp read back from the state database, with its UTC zone (SQLite drops it)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
