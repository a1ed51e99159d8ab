"""Holder locks: held until let go or until the holding process is gone; never twice within one process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from irc_proxy.stores import db
from irc_proxy.stores.holders import (
    FileHolderLocks,
    HolderLocks,
    PostgresHolderLocks,
    ProcessHolderLocks,
    holder_locks,
    lock_key,
)


def test_lock_keys_are_stable_signed_64_bit_and_distinct() -> None:
    assert lock_key("a") == lock_key("a")
    assert lock_key("a") != lock_key("b")
    assert all(-(1 << 63) <= lock_key(name) < (1 << 63) for name in ("a", "b", "\0", "x" * 1000))


def test_the_locks_are_chosen_by_the_state_database(state_engine: sa.Engine, tmp_path: Path) -> None:
    chosen = holder_locks(state_engine)
    try:
        assert isinstance(chosen, PostgresHolderLocks if state_engine.dialect.name == "postgresql" else FileHolderLocks)
    finally:
        chosen.close()
    memory = db.create_state_engine("sqlite://")
    assert type(holder_locks(memory)) is ProcessHolderLocks


def eventually(attempt: Callable[[], bool], seconds: float = 10) -> bool:
    """Whether ``attempt()`` succeeds within ``seconds`` (a server notices a closed session a moment later)."""
    deadline = time.monotonic() + seconds
    while not attempt():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def locks(state_engine: sa.Engine) -> Iterator[HolderLocks]:
    held = holder_locks(state_engine)
    yield held
    held.close()


def test_a_held_name_is_not_free_in_the_same_process_until_let_go(locks: HolderLocks, uid: str) -> None:
    assert locks.try_hold(uid)
    assert not locks.try_hold(uid)
    assert locks.try_hold(f"other-{uid}")
    locks.let_go(uid)
    locks.let_go(uid)  # letting go twice is harmless
    assert locks.try_hold(uid)


def test_another_process_holds_a_name_only_once_this_one_lets_go(
    state_engine: sa.Engine, locks: HolderLocks, uid: str
) -> None:
    # Another process with its own holder locks on the same database: it tries ``uid`` once per line it reads.
    code = textwrap.dedent(
        f"""
        import sys
        from sqlalchemy import create_engine
        from irc_proxy.stores.holders import holder_locks
        locks = holder_locks(create_engine({state_engine.url.render_as_string(hide_password=False)!r}))
        for _ in sys.stdin:
            print(locks.try_hold({uid!r}), flush=True)
        """
    )
    assert locks.try_hold(uid)
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as other:
        assert other.stdin is not None and other.stdout is not None

        def other_tries() -> str:
            other.stdin.write("try\n")  # type: ignore[union-attr]
            other.stdin.flush()  # type: ignore[union-attr]
            return other.stdout.readline().strip()  # type: ignore[union-attr]

        assert other_tries() == "False"
        locks.let_go(uid)
        assert other_tries() == "True"
        assert not locks.try_hold(uid)  # the other process holds it now
        other.stdin.close()
        assert other.wait(30) == 0
    assert eventually(lambda: locks.try_hold(uid))  # it exited: the kernel (or the server) let go of its locks


def test_postgres_locks_are_taken_again_after_the_connection_is_lost(state_engine: sa.Engine, uid: str) -> None:
    if state_engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL session locks")
    url = state_engine.url.render_as_string(hide_password=False)
    first, second, third = PostgresHolderLocks(url), PostgresHolderLocks(url), PostgresHolderLocks(url)
    try:
        assert first.try_hold(uid)
        assert not second.try_hold(uid)
        first._drop_connection()  # the session died: the server releases its locks (once it notices)
        assert eventually(lambda: second.try_hold(uid))
        second.close()
        assert first.try_hold(f"other-{uid}")  # a new session re-takes what it remembered holding
        assert not third.try_hold(uid)
    finally:
        for locks in (first, second, third):
            locks.close()
