"""The embedded local backend: pyiceberg's SQL catalog tables plus a warehouse location.

Namespaces and table pointers live in the ``iceberg_namespace_properties`` and ``iceberg_tables``
tables that pyiceberg's ``SqlCatalog`` (and Iceberg Java's ``JdbcCatalog``) use, on SQLite by
default or PostgreSQL. Pointer swaps are conditional UPDATEs inside one database transaction, so
several swaps commit atomically (multi-table transactions) and replicas sharing one database
never lose a commit.

Pointer reads are answered from a per-process ``PointerCache`` while nothing changed: on SQLite,
the wal-index header in the ``-shm`` file, read through a mmap (``WalIndex``; rewritten by every
commit, in any process), says so, with ``PRAGMA data_version`` when the header is in doubt; on
PostgreSQL, the ``PointerFeed`` (``LISTEN/NOTIFY``, the change sent in the swap's transaction).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar, cast

from pyiceberg.catalog.sql import IcebergNamespaceProperties, IcebergTables, SqlCatalogBaseTable
from pyiceberg.io import FileIO, load_file_io
from sqlalchemy import (
    Connection,
    Engine,
    Select,
    Table,
    and_,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    make_url,
    or_,
    select,
    text,
    union,
    update,
)
from sqlalchemy.exc import IntegrityError

from irc_proxy.backends.base import Capability, DroppedTable, Listing, PointerSwap, Properties
from irc_proxy.backends.local_pointers import LocalPointers
from irc_proxy.backends.pointer_cache import Peers
from irc_proxy.backends.sqlite_wal_index import WalIndex
from irc_proxy.dberrors import database_errors
from irc_proxy.errors import (
    AlreadyExists,
    CommitFailed,
    CommitStateUnknown,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    ServiceUnavailable,
    StartupError,
)
from irc_proxy.stores.db import schema_lock
from irc_proxy.threads import ThreadRunner

T = TypeVar("T")
EXISTS_MARKER = "exists"  # pyiceberg/JdbcCatalog's placeholder property for a namespace without properties
TABLES = cast(Table, IcebergTables.__table__)
NS_PROPS = cast(Table, IcebergNamespaceProperties.__table__)
# Built once: building and looking up a select per call costs more than running it on SQLite.
POINTER = select(TABLES.c.metadata_location).where(
    TABLES.c.catalog_name == bindparam("catalog"),
    TABLES.c.table_namespace == bindparam("namespace"),
    TABLES.c.table_name == bindparam("name"),
    or_(TABLES.c.iceberg_type.is_(None), TABLES.c.iceberg_type == "TABLE"),
)


DROP_ATTEMPTS = 20
"""Reads-then-deletes a drop tries while commits keep moving the table's pointer."""


class LocalBackend:
    """Backend over pyiceberg's SQL catalog schema."""

    capabilities = frozenset({Capability.TABLE_COMMITS, Capability.MULTI_TABLE_COMMIT})

    def __init__(
        self,
        catalog_name: str,
        warehouse: str,
        database_url: str,
        threads: ThreadRunner,
        pointer_cache_seconds: float = 5.0,
        peers: Peers | None = None,
    ) -> None:
        """``pointer_cache_seconds``: how long a cached pointer may live on PostgreSQL, where writers bypassing
        the proxy send no change message (0: no pointer cache); ``peers``: the server's change feeds (one per
        database, shared by its catalogs)."""
        self.warehouse = warehouse
        self._name = catalog_name
        self._threads = threads
        self._engine = catalog_engine(database_url)
        # Not pyiceberg's SqlCatalog: it creates missing tables without a lock, and replicas starting
        # together on one fresh database collide (a duplicate key in pg_type).
        ensure_catalog_tables(self._engine, upgrade=False)
        self._io: FileIO | None = None  # built on first use: pyiceberg's FileIO imports pyarrow (~0.5 s)
        self._io_lock = threading.Lock()
        self._fast_reads = _fast_sqlite_reader(self._engine)
        self._wal_index: WalIndex | None = None
        if self._fast_reads is not None and self._engine.url.database:
            self._wal_index = WalIndex.open(self._fast_reads, self._engine.url.database)
        self._pointers = LocalPointers(
            catalog_name,
            self._engine.dialect.name,
            database_url,
            self._fast_reads,
            pointer_cache_seconds,
            peers,
            self._wal_index,
        )

    async def close(self) -> None:
        await self._pointers.close()
        if self._wal_index is not None:
            self._wal_index.close()
        if self._fast_reads is not None:
            self._fast_reads.close()
        self._engine.dispose()

    async def ping(self) -> None:
        await self._run(lambda conn: conn.execute(select(1)))

    def file_io(self, location: str, properties: Mapping[str, str]) -> FileIO:
        with self._io_lock:  # one FileIO per backend, as before, though threads may ask at once
            if self._io is None:
                self._io = load_file_io({}, self.warehouse)
            return self._io

    async def _run(self, fn: Callable[[Connection], T]) -> T:
        return await self._threads.run(self._transaction, fn)

    def _transaction(self, fn: Callable[[Connection], T]) -> T:
        with database_errors("Catalog database"), self._engine.connect() as conn, conn.begin():
            return fn(conn)

    def _swap_transaction(self, fn: Callable[[Connection], None]) -> None:
        """Like ``_transaction``, but losing the database while the COMMIT is in flight is CommitStateUnknown:
        the swap may have landed, and a client told "unavailable" would delete the files it now references."""
        committing = False
        try:
            with database_errors("Catalog database"), self._engine.connect() as conn, conn.begin():
                fn(conn)
                committing = True
        except ServiceUnavailable as exc:
            if committing:
                raise CommitStateUnknown(
                    "The catalog database connection failed while committing; the commit state is unknown"
                ) from exc
            raise

    def _read_pointer(self, namespace: str, name: str) -> str | None:
        """One SELECT, no explicit transaction (a single statement sees one consistent row)."""
        with database_errors("Catalog database"), self._engine.connect() as conn:
            row = conn.execute(POINTER, {"catalog": self._name, "namespace": namespace, "name": name}).first()
        return None if row is None else str(row[0])

    # Namespaces --------------------------------------------------------------------------
    def _ns_names(self) -> Any:
        cat = self._name
        return union(
            select(NS_PROPS.c.namespace.label("name")).where(NS_PROPS.c.catalog_name == cat),
            select(TABLES.c.table_namespace.label("name")).where(TABLES.c.catalog_name == cat),
        ).subquery()

    def _ns_exists(self, conn: Connection, name: str) -> bool:
        names = self._ns_names()
        return conn.execute(select(names.c.name).where(names.c.name == name).limit(1)).first() is not None

    async def list_namespaces(self, prefix: str, token: str | None, limit: int) -> Listing:
        def query(conn: Connection) -> Listing:
            names = self._ns_names()
            stmt = select(names.c.name)
            if prefix:
                stmt = stmt.where(func.substr(names.c.name, 1, len(prefix)) == prefix)
            return _keyset(self._names(conn, stmt, names.c.name, token, limit), limit)

        return await self._run(query)

    async def namespace_exists(self, name: str) -> bool:
        return await self._run(lambda conn: self._ns_exists(conn, name))

    async def create_namespaces(self, namespaces: Sequence[tuple[str, Properties]]) -> None:
        def create(conn: Connection) -> None:
            for name, _ in namespaces:
                if self._ns_exists(conn, name):
                    raise AlreadyExists(name)
            rows = [
                {"catalog_name": self._name, "namespace": name, "property_key": key, "property_value": value}
                for name, properties in namespaces
                for key, value in ({EXISTS_MARKER: "true"} | dict(properties)).items()
            ]
            conn.execute(insert(NS_PROPS), rows)

        try:
            await self._run(create)
        except IntegrityError as exc:
            raise AlreadyExists(namespaces[0][0]) from exc

    def _properties(self, conn: Connection, name: str) -> Properties:
        rows = conn.execute(
            select(NS_PROPS.c.property_key, NS_PROPS.c.property_value).where(
                NS_PROPS.c.catalog_name == self._name, NS_PROPS.c.namespace == name
            )
        ).all()
        if not rows and not self._ns_exists(conn, name):
            raise NoSuchNamespace(name)
        return {key: value for key, value in rows if key != EXISTS_MARKER}

    async def load_namespace(self, name: str) -> Properties:
        return await self._run(lambda conn: self._properties(conn, name))

    async def update_namespace(self, name: str, removals: Sequence[str], updates: Mapping[str, str]) -> Properties:
        def apply(conn: Connection) -> Properties:
            before = self._properties(conn, name)
            keys = [*removals, *updates, EXISTS_MARKER]
            conn.execute(
                delete(NS_PROPS).where(
                    NS_PROPS.c.catalog_name == self._name,
                    NS_PROPS.c.namespace == name,
                    NS_PROPS.c.property_key.in_(keys),
                )
            )
            rows = [
                {"catalog_name": self._name, "namespace": name, "property_key": key, "property_value": value}
                for key, value in ({EXISTS_MARKER: "true"} | dict(updates)).items()
            ]
            conn.execute(insert(NS_PROPS), rows)
            return before

        return await self._run(apply)

    async def drop_namespace(self, name: str) -> None:
        def drop(conn: Connection) -> None:
            if not self._ns_exists(conn, name):
                raise NoSuchNamespace(name)
            has_table = conn.execute(
                select(TABLES.c.table_name)
                .where(TABLES.c.catalog_name == self._name, TABLES.c.table_namespace == name)
                .limit(1)
            ).first()
            if has_table is not None:
                raise NamespaceNotEmpty(name)
            conn.execute(delete(NS_PROPS).where(NS_PROPS.c.catalog_name == self._name, NS_PROPS.c.namespace == name))

        await self._run(drop)

    # Tables ------------------------------------------------------------------------------
    def _names(self, conn: Connection, stmt: Select[Any], column: Any, token: str | None, limit: int) -> list[str]:
        """A listing's page: the first ``limit + 1`` values of ``column`` in ``stmt`` after ``token``, in order.

        On SQLite the page comes back as one row, a JSON array: sqlite3 lets go of the GIL for every row it steps,
        and each re-take while the event loop runs is a forced hand-over (a 10,000-name page cost its thread
        ~10,000 context switches; five such listings a second moved a served 304's p50 from 0.163 to ~0.19 ms,
        2026-11). The order is SQLite's BINARY collation, written out (a ``catalog.db`` made by another tool may
        declare the column ``COLLATE NOCASE``): in a UTF-8 database that is code-point order, Python's. The array
        is used only when it is in that order: ``json_group_array`` promises none, and a database another tool
        made in UTF-16 (``PRAGMA encoding``) compares UTF-16 bytes, another order; the page is then read row by
        row, in SQLite's order, as the token's ``>`` compares (re-sorted in Python, pages in such a database
        repeated a name and never showed another). A value that is not text (a BLOB another tool wrote: JSON
        holds none, and the whole listing failed as "database unavailable") is no name a client can ask for, and
        is left out, as NULL is by every comparison.
        """
        if conn.dialect.name != "sqlite":
            if token is not None:
                stmt = stmt.where(column > token)
            return cast(list[str], list(conn.execute(stmt.order_by(column).limit(limit + 1)).scalars()))
        binary = column.collate("BINARY")
        stmt = stmt.where(func.typeof(column) == "text")
        if token is not None:
            stmt = stmt.where(binary > token)
        page = stmt.order_by(binary).limit(limit + 1)
        packed = conn.execute(select(func.json_group_array(page.subquery().c[0]))).scalar_one()
        names = cast(list[str], json.loads(packed))
        if names == sorted(names):  # one C pass over a page in order
            return names
        return cast(list[str], list(conn.execute(page).scalars()))

    def _table(self, namespace: str, name: str) -> Any:
        return and_(
            TABLES.c.catalog_name == self._name,
            TABLES.c.table_namespace == namespace,
            TABLES.c.table_name == name,
            or_(TABLES.c.iceberg_type.is_(None), TABLES.c.iceberg_type == "TABLE"),
        )

    async def list_tables(self, namespace: str, token: str | None, limit: int) -> Listing:
        def query(conn: Connection) -> Listing:
            stmt = select(TABLES.c.table_name).where(
                TABLES.c.catalog_name == self._name,
                TABLES.c.table_namespace == namespace,
                or_(TABLES.c.iceberg_type.is_(None), TABLES.c.iceberg_type == "TABLE"),
            )
            names = self._names(conn, stmt, TABLES.c.table_name, token, limit)
            if not names and not self._ns_exists(conn, namespace):
                raise NoSuchNamespace(namespace)
            return _keyset(names, limit)

        return await self._run(query)

    async def load_table_pointer(self, namespace: str, name: str) -> str | None:
        return await self._pointers.read((namespace, name), lambda: self._load_pointer(namespace, name))

    async def _load_pointer(self, namespace: str, name: str) -> str | None:
        """On SQLite, read on the event loop first: a thread hop costs more than the query, and a WAL
        reader does not wait for writers. If the database is busy anyway, read in the thread pool."""
        if self._fast_reads is not None:
            try:
                params = {"catalog": self._name, "namespace": namespace, "name": name}
                row = self._fast_reads.execute(FAST_POINTER, params).fetchone()
                return None if row is None else str(row[0])
            except sqlite3.Error:
                pass
        return await self._threads.run(self._read_pointer, namespace, name)

    async def swap_table_pointers(self, swaps: Sequence[PointerSwap]) -> bool:
        class _Lost(Exception):
            pass

        def swap(conn: Connection) -> None:
            for s in swaps:
                if s.expected is None:
                    conn.execute(
                        insert(TABLES).values(
                            catalog_name=self._name,
                            table_namespace=s.namespace,
                            table_name=s.name,
                            metadata_location=s.new,
                            previous_metadata_location=None,
                            iceberg_type="TABLE",
                        )
                    )
                    continue
                result = conn.execute(
                    update(TABLES)
                    .where(self._table(s.namespace, s.name), TABLES.c.metadata_location == s.expected)
                    .values(metadata_location=s.new, previous_metadata_location=s.expected)
                )
                if result.rowcount != 1:
                    raise _Lost  # rolls the whole transaction back
            self._pointers.announce(conn, announced)

        keys = [(s.namespace, s.name) for s in swaps]
        announced = self._pointers.change(keys)
        try:
            await self._threads.run(self._swap_transaction, swap)
        except BaseException as exc:  # forgotten either way: a stale cached pointer may be why the swap missed
            # An unknown outcome may have landed (its notification with it): settle as a landed swap does,
            # since the client now reloads to decide, and deletes the new metadata if a replica's cache
            # still answers the old pointer.
            await self._pointers.changed(keys, announced, committed=isinstance(exc, CommitStateUnknown))
            if isinstance(exc, (_Lost, IntegrityError)):
                return False
            raise
        await self._pointers.changed(keys, announced)
        return True

    async def drop_table_pointer(self, namespace: str, name: str) -> DroppedTable:
        def drop(conn: Connection) -> str | None:
            """The location the row had when this transaction deleted it; None: it moved meanwhile (retry)."""
            row = conn.execute(select(TABLES.c.metadata_location).where(self._table(namespace, name))).first()
            if row is None:
                raise NoSuchTable(name)
            where = and_(self._table(namespace, name), TABLES.c.metadata_location == row[0])
            if conn.execute(delete(TABLES).where(where)).rowcount != 1:
                return None
            self._pointers.announce(conn, announced)
            return str(row[0])

        # Compare-and-delete: a commit landing between the read and the delete (or a concurrent drop)
        # must not be lost; whoever deletes the row answers with what it deleted, the other NoSuchTable.
        keys = [(namespace, name)]
        for _ in range(DROP_ATTEMPTS):
            announced = self._pointers.change(keys)
            try:
                location = await self._run(drop)
            except BaseException:
                await self._pointers.changed(keys, announced, committed=False)
                raise
            await self._pointers.changed(keys, announced, committed=location is not None)
            if location is not None:
                return DroppedTable(location)
        raise CommitFailed(f"Table {name} kept changing while it was being dropped; retry")

    def moved_elsewhere(self, namespace: str, name: str) -> AbstractContextManager[None]:
        return self._pointers.moved_elsewhere((namespace, name))

    async def rename_table(self, namespace: str, name: str, to_namespace: str, to_name: str) -> None:
        def rename(conn: Connection) -> None:
            result = conn.execute(
                update(TABLES)
                .where(self._table(namespace, name))
                .values(table_namespace=to_namespace, table_name=to_name)
            )
            if result.rowcount != 1:
                raise NoSuchTable(name)
            self._pointers.announce(conn, announced)

        keys = [(namespace, name), (to_namespace, to_name)]
        announced = self._pointers.change(keys)
        try:
            await self._run(rename)
        except IntegrityError as exc:
            await self._pointers.changed(keys, announced, committed=False)
            raise AlreadyExists(to_name) from exc
        except BaseException:
            await self._pointers.changed(keys, announced, committed=False)
            raise
        await self._pointers.changed(keys, announced)


def catalog_engine(database_url: str) -> Engine:
    """The engine of a local catalog's database (SQLite gets WAL and a busy timeout)."""
    if database_url.startswith("sqlite:///"):
        Path(database_url.removeprefix("sqlite:///").split("?", 1)[0]).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(_with_connect_timeout(database_url), pool_pre_ping=True)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def ensure_catalog_tables(engine: Engine, upgrade: bool) -> str:
    """Create the catalog tables when they are missing; returns what was done ("" when nothing).

    A catalog written by an older pyiceberg (``iceberg_tables`` without ``iceberg_type``) gets the
    column only with ``upgrade`` (``irc-proxy db upgrade``); otherwise start-up refuses. Changes run
    under the database's schema lock and look again once they hold it.

    Raises:
        StartupError: the tables are of the old shape and ``upgrade`` is false.
    """
    if _catalog_shape(engine) == "current":
        return ""
    with schema_lock(engine):
        shape = _catalog_shape(engine)
        if shape == "missing":
            SqlCatalogBaseTable.metadata.create_all(engine)  # checkfirst: only the missing ones
            return "created"
        if shape == "v0":
            if not upgrade:
                raise StartupError(
                    f"the local catalog database {engine.url.render_as_string()} has iceberg_tables without "
                    "iceberg_type (written by an older pyiceberg); run `irc-proxy db upgrade`"
                )
            with engine.begin() as conn:
                conn.execute(text("ALTER TABLE iceberg_tables ADD COLUMN iceberg_type VARCHAR(5)"))
            return "upgraded"
    return ""


def _catalog_shape(engine: Engine) -> str:
    """``missing`` (a table is absent), ``v0`` (no ``iceberg_type`` column) or ``current``."""
    with engine.connect() as conn:
        found = inspect(conn)
        if not (found.has_table(TABLES.name) and found.has_table(NS_PROPS.name)):
            return "missing"
        columns = {column["name"] for column in found.get_columns(TABLES.name)}
    return "current" if "iceberg_type" in columns else "v0"


def _keyset(names: list[str], limit: int) -> Listing:
    """``names`` was fetched with ``limit + 1``: the extra one tells whether a next page exists."""
    return Listing(names[:limit], names[limit - 1] if len(names) > limit else None)


def _with_connect_timeout(url: str) -> str:
    """PostgreSQL gets a 5 s connect timeout unless the URL sets one (as the state database does): an
    unreachable database is a quick 503, not a request hanging on the operating system's TCP timeout."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql" or "connect_timeout" in parsed.query:
        return url
    return parsed.update_query_dict({"connect_timeout": "5"}).render_as_string(hide_password=False)


FAST_POINTER = (  # POINTER, for the raw sqlite3 connection
    "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = :catalog AND table_namespace = :namespace "
    "AND table_name = :name AND (iceberg_type IS NULL OR iceberg_type = 'TABLE')"
)
FAST_READ_BUSY_MS = 20


def _fast_sqlite_reader(engine: Engine) -> sqlite3.Connection | None:
    """An autocommit connection for event-loop reads of a SQLite file (None for other databases).

    Its busy timeout is short: a read that would wait falls back to the thread pool instead of
    blocking the event loop.
    """
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:" or database.startswith("file:"):
        return None
    connection = sqlite3.connect(database, timeout=FAST_READ_BUSY_MS / 1000, check_same_thread=False)
    connection.isolation_level = None  # autocommit: every SELECT sees the latest commit
    return connection


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
