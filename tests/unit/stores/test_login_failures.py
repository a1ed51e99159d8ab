"""Failed logins: the rows every replica shares, on a migrated SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from irc_proxy.stores import db
from irc_proxy.stores.login_failures import LoginFailureStore, stored_key
from irc_proxy.stores.tables import MAX_LOGIN_KEY
from irc_proxy.threads import ThreadRunner


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = db.create_state_engine(f"sqlite:///{tmp_path / 'state.db'}")
    db.upgrade(engine)
    yield engine
    engine.dispose()


def test_a_long_login_key_is_stored_as_its_digest() -> None:
    assert stored_key("etl-job") == "etl-job"
    assert stored_key("x" * MAX_LOGIN_KEY) == "x" * MAX_LOGIN_KEY
    long = stored_key("x" * (MAX_LOGIN_KEY + 1))
    assert long.startswith("sha256:") and len(long) <= MAX_LOGIN_KEY
    assert long != stored_key("y" * (MAX_LOGIN_KEY + 1))


def test_a_key_is_blocked_by_its_latest_failures_within_the_window(engine: sa.Engine) -> None:
    store = LoginFailureStore(engine, ThreadRunner(2), window_seconds=60)
    long_client = "c" * 1000

    async def scenario() -> list[dict[tuple[str, str], float]]:
        seen = []
        for at in (100.0, 110.0, 120.0):
            await store.record([("client", long_client), ("address", "10.0.0.1")], now=at)
        seen.append(await store.blocked_until([("client", long_client, 3), ("address", "10.0.0.1", 4)], now=121))
        seen.append(await store.blocked_until([("client", long_client, 3)], now=161))  # 100 has left the window
        seen.append(await store.blocked_until([("client", long_client, 2)], now=161))
        return seen

    at_121, at_161, fewer = asyncio.run(scenario())
    assert at_121 == {("client", long_client): 160.0}
    assert at_161 == {}
    assert fewer == {("client", long_client): 170.0}
