"""Which process holds an Idempotency-Key: locks that live exactly as long as their holder.

A claim is taken over only when its holder is gone, never because it is slow: a replica that is
paused (SIGSTOP, a long GC, a starved thread pool) keeps its claim, one that died loses it at once.
The holder's liveness is the operating system's and the database's, not a timer:

* PostgreSQL: a session advisory lock per key, all on one dedicated connection per process. The
  process dies, its connection closes, the server releases every lock it held. A host that vanishes
  without closing the connection is noticed by TCP keepalives (about 11 s, set on that session).
* SQLite (every replica on one machine): a POSIX record lock on one byte of ``<file>.holders`` per
  key; the kernel releases a process's record locks when it exits.

Session and record locks are reentrant within a process, so each process also remembers the keys it
holds: a second request for a held key in the same process is "held", not "free".
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import threading
from typing import Protocol

from sqlalchemy import Connection, Engine, NullPool, create_engine, text
from sqlalchemy.exc import DBAPIError

from irc_proxy.dberrors import database_errors

log = logging.getLogger(__name__)

# Server-side keepalives of the lock session: a dead host's locks go after about idle + interval * count.
_KEEPALIVES = "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3"
_LOCK_NAMESPACE = b"irc-proxy idempotency\0"


def lock_key(name: str) -> int:
    """A signed 64-bit key for ``name`` (PostgreSQL advisory locks take a bigint)."""
    return int.from_bytes(hashlib.sha256(_LOCK_NAMESPACE + name.encode()).digest()[:8], "big", signed=True)


class HolderLocks(Protocol):
    """Blocking (call from worker threads): ``try_hold`` is true when this process now holds ``name``."""

    def try_hold(self, name: str) -> bool: ...
    def let_go(self, name: str) -> None: ...
    def close(self) -> None: ...


class ProcessHolderLocks:
    """This process only (an in-memory database has no other process to share keys with)."""

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._mutex = threading.Lock()

    def try_hold(self, name: str) -> bool:
        with self._mutex:
            if name in self._held:
                return False
            self._held.add(name)
            return True

    def let_go(self, name: str) -> None:
        with self._mutex:
            self._held.discard(name)

    def close(self) -> None:
        with self._mutex:
            self._held.clear()


class FileHolderLocks(ProcessHolderLocks):
    """POSIX record locks on ``path``, one byte per key (the descriptor stays open: closing any descriptor
    of the file would drop every record lock this process has on it)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    def try_hold(self, name: str) -> bool:
        with self._mutex:
            if name in self._held:
                return False
            try:
                fcntl.lockf(self._descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _offset(name))
            except OSError:  # another process holds it
                return False
            self._held.add(name)
            return True

    def let_go(self, name: str) -> None:
        with self._mutex:
            if name in self._held:
                self._held.discard(name)
                fcntl.lockf(self._descriptor, fcntl.LOCK_UN, 1, _offset(name))

    def close(self) -> None:
        with self._mutex:
            self._held.clear()
            os.close(self._descriptor)


def _offset(name: str) -> int:
    return lock_key(name) & ((1 << 62) - 1)


class PostgresHolderLocks(ProcessHolderLocks):
    """Session advisory locks on one connection of this process's own (autocommit, keepalives on)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        # Keepalives both ways: the server drops a dead host's session (and its locks); this side stops
        # waiting on a server that vanished instead of hanging on the operating system's TCP timeout.
        connect_args: dict[str, object] = {
            "connect_timeout": 5,
            "options": _KEEPALIVES,
            "keepalives": 1,
            "keepalives_idle": 5,
            "keepalives_interval": 2,
            "keepalives_count": 3,
            "tcp_user_timeout": 10_000,
        }
        self._engine = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT", connect_args=connect_args)
        self._conn: Connection | None = None

    def _connection(self) -> Connection:
        if self._conn is None:
            self._conn = self._engine.connect()
            lost = [name for name in self._held if not self._lock(self._conn, name)]
            if lost:  # the old session died with this process alive: another may have taken these over
                log.warning("%d Idempotency-Key claims were lost with the state database connection", len(lost))
        return self._conn

    @staticmethod
    def _lock(conn: Connection, name: str) -> bool:
        return bool(conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": lock_key(name)}).scalar())

    def _call(self, name: str, statement: str) -> bool:
        with database_errors("State database"):
            try:
                conn = self._connection()
                return bool(conn.execute(text(statement), {"key": lock_key(name)}).scalar())
            except DBAPIError:
                self._drop_connection()
                raise

    def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.invalidate()
                self._conn.close()
            except DBAPIError:
                pass
            self._conn = None

    def try_hold(self, name: str) -> bool:
        with self._mutex:
            if name in self._held:
                return False
            if not self._call(name, "SELECT pg_try_advisory_lock(:key)"):
                return False
            self._held.add(name)
            return True

    def let_go(self, name: str) -> None:
        with self._mutex:
            if name not in self._held:
                return
            self._held.discard(name)
            self._call(name, "SELECT pg_advisory_unlock(:key)")

    def close(self) -> None:
        with self._mutex:
            self._held.clear()
            self._drop_connection()
            self._engine.dispose()


def holder_locks(engine: Engine) -> HolderLocks:
    """The holder locks for the state database ``engine``."""
    if engine.dialect.name == "postgresql":
        return PostgresHolderLocks(engine.url.render_as_string(hide_password=False))
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database and database != ":memory:" and not database.startswith("file:"):
        return FileHolderLocks(f"{database}.holders")
    return ProcessHolderLocks()
