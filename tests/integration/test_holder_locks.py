"""Idempotency-Key holder locks live exactly as long as their holder process (SQLite file, PostgreSQL).

Another process holds a key: this one cannot take it, not even while the holder is paused (SIGSTOP);
the holder is SIGKILLed: the key is free at once. Within one process a held key is not free either.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from irc_proxy.stores.holders import holder_locks
from tests.support.postgres import scratch_database

HOLD = """
import sys, time
import sqlalchemy as sa
from irc_proxy.stores.holders import holder_locks
locks = holder_locks(sa.create_engine(sys.argv[1]))
assert locks.try_hold("alice\\0key")
print("held", flush=True)
time.sleep(120)
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'state.db'}"
        return
    with scratch_database() as url:
        yield url


def test_key_is_free_exactly_when_its_holder_process_is_gone(state_url: str) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, state_url], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        engine = sa.create_engine(state_url)
        locks = holder_locks(engine)
        assert not locks.try_hold("alice\0key")
        assert locks.try_hold("bob\0key")  # another key is unaffected
        holder.send_signal(signal.SIGSTOP)
        time.sleep(0.5)
        assert not locks.try_hold("alice\0key")  # paused is not dead
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        deadline = time.monotonic() + 5
        while not locks.try_hold("alice\0key"):
            assert time.monotonic() < deadline, "the dead holder's key was not freed within 5 s"
            time.sleep(0.05)
        assert not locks.try_hold("alice\0key")  # held by this process now: not free to a second request
        locks.let_go("alice\0key")
        assert locks.try_hold("alice\0key")
        locks.close()
        engine.dispose()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
