"""Revocations: the rows every replica shares, on a migrated SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from irc_proxy.stores import db
from irc_proxy.stores.revocations import RevocationStore
from irc_proxy.threads import ThreadRunner


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = db.create_state_engine(f"sqlite:///{tmp_path / 'state.db'}")
    db.upgrade(engine)
    yield engine
    engine.dispose()


def test_a_value_is_revoked_once_per_kind_until_it_expires(engine: sa.Engine) -> None:
    store = RevocationStore(engine, ThreadRunner(2))

    async def scenario() -> tuple[bool, ...]:
        return (
            await store.add("token", "d1", expires_at=200, now=100),
            await store.add("token", "d1", expires_at=300, now=101),
            await store.add("oidc-flow", "d1", expires_at=200, now=102),
            await store.has("token", "d1", now=150),
            await store.has("token", "d1", now=201),
            await store.has("token", "d2", now=150),
        )

    assert asyncio.run(scenario()) == (True, False, True, True, False, False)
    assert asyncio.run(store.live("token", now=150)) == {"d1"}
    assert asyncio.run(store.live("token", now=201)) == set()


def test_expired_revocations_are_pruned_by_a_later_add(engine: sa.Engine) -> None:
    store = RevocationStore(engine, ThreadRunner(2))

    async def scenario() -> None:
        await store.add("token", "old", expires_at=10, now=1)
        await store.add("token", "new", expires_at=500, now=100)  # 99 s after the last prune

    asyncio.run(scenario())
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT digest FROM auth_revoked")).scalars().all() == ["new"]
