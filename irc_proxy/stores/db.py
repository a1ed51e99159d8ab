"""The state database: engine, Alembic migrations and the start-up schema check."""

from __future__ import annotations

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


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Bring the schema to the newest revision; returns (before, after)."""
    before = current_revision(engine)
    command.upgrade(_alembic_config(engine), "head")
    return before, head_revision()


def ensure_schema(engine: Engine, auto_upgrade: bool) -> None:
    """Refuse to run on an out-of-date schema; a brand-new empty database is initialised.

    Raises:
        SchemaOutOfDate: with a message saying which revision is there and what to run.
    """
    current, head = current_revision(engine), head_revision()
    if current == head:
        return
    fresh = current is None and not inspect(engine).get_table_names()
    if fresh or auto_upgrade:
        upgrade(engine)
        return
    raise SchemaOutOfDate(
        f"the state database schema is at revision {current or 'none'} but this irc-proxy needs {head}; "
        "run `irc-proxy db upgrade` (or set state.auto_upgrade = true)"
    )


def as_utc(moment: datetime) -> datetime:
    """A timestamp read back from the state database, with its UTC zone (SQLite drops it)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
