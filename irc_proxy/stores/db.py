"""The state database: engine, Alembic migrations, the start-up schema check and the schema lock.

A brand-new database is created straight from the models (``irc_proxy.stores.tables``) and stamped with
``HEAD_REVISION`` in Alembic's version table, without importing Alembic (~0.5 s of every first start);
``tests/unit/stores/test_schema.py`` proves it equals what the migration chain builds. Alembic runs only to
upgrade a database that already has a schema.

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
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    create_engine,
    event,
    inspect,
    make_url,
    text,
)

from irc_proxy.dberrors import database_errors
from irc_proxy.errors import StartupError

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"
# The newest migration's revision, so that start-up on an up-to-date schema never imports Alembic (~0.5 s).
# tests/unit/stores/test_db.py checks it against Alembic's script directory: a new migration must bump it.
HEAD_REVISION = "0013"
VERSION_TABLE = "alembic_version"  # Alembic's default, which env.py keeps
VERSION_TABLE_DEFINITION = Table(
    VERSION_TABLE,
    MetaData(),
    Column("version_num", String(32), nullable=False),
    PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"),
)
"""Alembic's version table as Alembic itself creates it (``alembic.ddl.impl``), for a database made from the models."""
SCHEMA_LOCK_KEY = int.from_bytes(hashlib.sha256(b"irc-proxy schema").digest()[:8], "big", signed=True)
"""The PostgreSQL advisory lock (per database) every schema change holds."""
SCHEMA_LOCK_TIMEOUT = "120s"
"""How long a start-up waits for another process's schema change before refusing to start."""
CATALOG_TABLE_NAMES = frozenset({"iceberg_tables", "iceberg_namespace_properties"})
"""pyiceberg's SQL catalog tables (``irc_proxy.backends.local``), which may share the state database."""


class SchemaOutOfDate(StartupError):
    """The database schema is older (or newer) than this version of irc-proxy expects."""


class NoStateDatabase(StartupError):
    """A command that only uses the state database found none there; only ``serve`` and ``db upgrade`` make one.

    ``where`` is the SQLite file's path, or the database URL with its password masked."""

    def __init__(self, where: str) -> None:
        super().__init__(f"no state database at {where}")
        self.where = where


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL; None for another database or an in-memory one (which nothing else shares)."""
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def create_state_engine(url: str, create: bool = True) -> Engine:
    """An engine for the state database (SQLite gets WAL and a busy timeout).

    ``create=False`` is for commands that use an existing database and must not leave a new one behind (a
    typo'd ``--config`` or another working directory would otherwise make an empty database and report
    "nothing there"): a SQLite file that does not exist raises ``NoStateDatabase`` before anything is
    made (SQLite creates the file on connect), nor when it is empty (the WAL pragma would write a 4 KB database
    into it). A server database is checked by ``ensure_schema``.
    """
    file = sqlite_file(url) if url.startswith("sqlite") else None
    if file is not None and create:
        file.parent.mkdir(parents=True, exist_ok=True)
    elif file is not None and (not file.is_file() or file.stat().st_size == 0):
        raise NoStateDatabase(str(file.resolve()))  # an empty file too: connecting writes SQLite's header into it
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
    from alembic.config import Config  # deferred: Alembic is needed only to change the schema

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def head_revision() -> str:
    """The newest revision, as Alembic's script directory says (``HEAD_REVISION`` is its cached copy)."""
    from alembic.script import ScriptDirectory  # deferred: Alembic is needed only to change the schema

    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision stored in Alembic's version table, or None (no table or no row), read with plain SQL
    so that the start-up check does not import Alembic; more than one row (branches: never ours) is an error."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        rows = list(conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars())  # noqa: S608 (a constant)
    if len(rows) > 1:
        raise SchemaOutOfDate(f"the state database has several schema revisions ({', '.join(sorted(rows))})")
    return rows[0] if rows else None


def _upgrade_to_head(engine: Engine) -> None:
    from alembic import command  # deferred: Alembic is needed only to change the schema

    command.upgrade(_alembic_config(engine), "head")


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


def create_from_models(engine: Engine) -> None:
    """Make a brand-new database's schema from the models and stamp it ``HEAD_REVISION``, all in one transaction.

    The caller holds ``schema_lock`` and has just seen the database fresh (``_fresh``). PostgreSQL's DDL is
    transactional, and on SQLite an explicit ``BEGIN`` makes it so (the driver would commit each ``CREATE`` on
    its own): a failure part-way leaves the database as fresh as it was, never tables without a revision.
    """
    from sqlmodel import SQLModel  # the models' metadata; the stores import it at start-up anyway

    from irc_proxy.stores import tables  # noqa: F401  (registers every table on SQLModel.metadata)

    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN")
        _create_and_stamp(conn, SQLModel.metadata)
        conn.commit()


def _create_and_stamp(conn: Connection, metadata: MetaData) -> None:
    metadata.create_all(conn, checkfirst=False)  # fresh, seen under the lock: a table already there is an error
    VERSION_TABLE_DEFINITION.create(conn, checkfirst=False)
    conn.execute(VERSION_TABLE_DEFINITION.insert().values(version_num=HEAD_REVISION))


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Bring the schema to the newest revision under the schema lock; returns (before, after).

    A brand-new database is made from the models (``create_from_models``), as at start-up, without Alembic."""
    with schema_lock(engine):
        before = current_revision(engine)
        if _fresh(engine, before):
            create_from_models(engine)
            return before, HEAD_REVISION
        head = head_revision()
        if before != head:
            _upgrade_to_head(engine)
    return before, head


def ensure_schema(engine: Engine, auto_upgrade: bool, initialise: bool = True) -> None:
    """Refuse to run on an out-of-date schema; a brand-new empty database is initialised (``initialise``).

    The check runs without a lock; a change runs under ``schema_lock`` and checks again there (another
    replica may have just done it).

    Raises:
        SchemaOutOfDate: with a message saying which revision is there and what to run.
        NoStateDatabase: ``initialise`` is false and the database is brand-new (no schema of ours, nothing
            but a local catalog's tables): what ``serve`` would initialise.
    """
    current = current_revision(engine)
    if current == HEAD_REVISION:
        return  # the common case, decided without Alembic
    if _fresh(engine, current):  # brand-new: made from the models, also without Alembic
        if not initialise:  # before the lock: its SQLite lock file is state too
            file = sqlite_file(engine.url.render_as_string(hide_password=False))
            raise NoStateDatabase(str(file.resolve()) if file else engine.url.render_as_string(hide_password=True))
        with schema_lock(engine):
            current = current_revision(engine)
            if current == HEAD_REVISION:
                return  # another replica made it while this one waited for the lock
            if _fresh(engine, current):
                create_from_models(engine)
                return
    head = head_revision()
    if current == head:
        return
    with schema_lock(engine):
        current = current_revision(engine)
        if current == head:
            return
        if auto_upgrade:
            _upgrade_to_head(engine)
            return
    raise SchemaOutOfDate(
        f"the state database schema is at revision {current or 'none'} but this irc-proxy needs {head}; "
        "run `irc-proxy db upgrade` (or set state.auto_upgrade = true)"
    )


def _fresh(engine: Engine, current: str | None) -> bool:
    """Brand-new: no schema revision, and no tables but (perhaps) a local catalog's, when it shares this database."""
    return current is None and set(inspect(engine).get_table_names()) <= CATALOG_TABLE_NAMES


def as_utc(moment: datetime) -> datetime:
    """A timestamp read back from the state database, with its UTC zone (SQLite drops it)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
