"""One store operation is one transaction; a database that fails is ServiceUnavailable, a conflict stays itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from irc_proxy.errors import ServiceUnavailable
from irc_proxy.stores.tables import RoleRow
from irc_proxy.stores.transactions import TransactionalStore
from irc_proxy.threads import ThreadRunner


def roles(engine: sa.Engine, name: str) -> int:
    with engine.connect() as conn:
        return len(conn.execute(sa.text("SELECT name FROM authz_role WHERE name = :n"), {"n": name}).all())


def test_an_operation_that_raises_leaves_nothing_behind(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    store = TransactionalStore(state_engine, threads)

    def half_done(session: Session) -> None:
        session.add(RoleRow(name=uid))
        session.flush()
        raise ValueError("second step failed")

    with pytest.raises(ValueError, match="second step failed"):
        asyncio.run(store._run(half_done))
    assert roles(state_engine, uid) == 0
    store.run_sync(lambda session: session.add(RoleRow(name=uid)))
    assert roles(state_engine, uid) == 1


def test_a_unique_conflict_passes_through_as_integrity_error(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    store = TransactionalStore(state_engine, threads)
    store.run_sync(lambda session: session.add(RoleRow(name=uid)))
    with pytest.raises(IntegrityError):
        store.run_sync(lambda session: session.add(RoleRow(name=uid)))


def test_an_unreachable_database_is_service_unavailable(tmp_path: Path, threads: ThreadRunner) -> None:
    missing = sa.create_engine(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")
    with pytest.raises(ServiceUnavailable, match="State database is unavailable: OperationalError"):
        TransactionalStore(missing, threads).run_sync(lambda session: session.get(RoleRow, "x"))
    closed_port = sa.create_engine(
        "postgresql+psycopg://postgres@127.0.0.1:9/none", connect_args={"connect_timeout": 2}
    )
    with pytest.raises(ServiceUnavailable, match="State database is unavailable"):
        asyncio.run(TransactionalStore(closed_port, threads)._run(lambda session: session.get(RoleRow, "x")))


def test_an_exhausted_pool_is_service_unavailable_busy(tmp_path: Path, threads: ThreadRunner) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'one.db'}", pool_size=1, max_overflow=0, pool_timeout=0.05)
    with engine.connect(), pytest.raises(ServiceUnavailable, match="State database is busy"):
        TransactionalStore(engine, threads).run_sync(lambda session: session.execute(sa.text("SELECT 1")))
    engine.dispose()
