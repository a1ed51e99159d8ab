"""Commit locks shared by every replica on the state database.

Backends without their own compare-and-swap guarantee (moto's Glue ignores ``VersionId``) hold
one of these around read-compare-write. PostgreSQL: a transaction-scoped advisory lock per key.
SQLite: ``BEGIN IMMEDIATE`` (one writer at a time across processes on the machine).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, text

from irc_proxy.dberrors import database_errors


def _advisory_key(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)


class CommitLocks:
    """Blocking, cross-process locks by name (call from worker threads, not the event loop)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        if self._engine.dialect.name == "postgresql":
            with database_errors("State database"), self._engine.connect() as conn, conn.begin():
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _advisory_key(key)})
                yield
            return
        with database_errors("State database"):
            raw = self._engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute("BEGIN IMMEDIATE")
            try:
                yield
            finally:
                cursor.execute("ROLLBACK")
                cursor.close()
        finally:
            raw.close()
