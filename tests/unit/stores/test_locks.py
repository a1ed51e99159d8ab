"""Commit locks on the state database: one holder per key at a time, across connections."""

from __future__ import annotations

import threading

import sqlalchemy as sa

from irc_proxy.stores.locks import CommitLocks


def test_a_second_holder_of_a_key_waits_for_the_first(state_engine: sa.Engine, uid: str) -> None:
    locks = CommitLocks(state_engine)
    second_holds = threading.Event()

    def second() -> None:
        with locks.hold(f"table-{uid}"):
            second_holds.set()

    with locks.hold(f"table-{uid}"):
        thread = threading.Thread(target=second)
        thread.start()
        assert not second_holds.wait(0.3)
    assert second_holds.wait(10)
    thread.join()


def test_the_lock_is_let_go_when_the_holder_raises(state_engine: sa.Engine, uid: str) -> None:
    locks = CommitLocks(state_engine)
    try:
        with locks.hold(f"t-{uid}"):
            raise RuntimeError("commit failed")
    except RuntimeError:
        pass
    done = threading.Event()

    def again() -> None:
        with locks.hold(f"t-{uid}"):
            done.set()

    thread = threading.Thread(target=again)
    thread.start()
    assert done.wait(10)
    thread.join()
