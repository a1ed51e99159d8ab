"""Marks and sweep leases of scheduled maintenance: a mark is one row per table that moves on; a sweep is held by
one holder at a time, only when due, and resumes from the cursor the last one stored."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import sqlalchemy as sa

from irc_proxy.stores.maintenance_schedule import ScheduleStore
from irc_proxy.threads import ThreadRunner

MINUTE, HOUR = timedelta(minutes=1), timedelta(hours=1)


def test_marks_are_one_per_table_and_a_newer_mark_survives_unmarking_the_older(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    store = ScheduleStore(state_engine, threads)

    async def scenario() -> None:
        for _ in range(3):
            await store.mark(uid, ("a", "b"), "t")
        await store.mark(uid, ("a",), "u")
        marks = await store.marks(uid, 10)
        assert [(m.namespace, m.name) for m in marks] == [(("a", "b"), "t"), (("a",), "u")]
        await store.mark(uid, ("a", "b"), "t")  # a commit after the sweep read the marks
        await store.unmark(uid, marks[0])
        await store.unmark(uid, marks[1])
        assert [(m.namespace, m.name) for m in await store.marks(uid, 10)] == [(("a", "b"), "t")]

    asyncio.run(scenario())


def test_a_sweep_has_one_holder_is_due_after_its_interval_and_resumes_from_its_cursor(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    store = ScheduleStore(state_engine, threads)

    async def scenario() -> None:
        taken = await asyncio.gather(*(store.take_sweep(uid, f"r{i}", HOUR, MINUTE) for i in range(4)))
        holders = [f"r{i}" for i, cursor in enumerate(taken) if cursor is not None]
        assert len(holders) == 1 and taken[int(holders[0][1:])] == ((), "")
        assert not await store.finish_sweep(uid, "someone else", None)  # only the holder finishes it
        assert await store.finish_sweep(uid, holders[0], (("a",), "t"))
        assert await store.take_sweep(uid, "r9", HOUR, MINUTE) is None  # not due for an hour
        assert await store.take_sweep(uid, "r9", timedelta(0), MINUTE) == (("a",), "t")
        assert await store.take_sweep(uid, "r8", timedelta(0), MINUTE) is None  # r9 holds a live lease
        assert await store.finish_sweep(uid, "r9", None)  # reached the end: the next starts over
        assert await store.take_sweep(uid, "r8", timedelta(0), timedelta(seconds=-1)) == ((), "")
        assert await store.take_sweep(uid, "r7", timedelta(0), MINUTE) is not None  # r8 died: lease ran out

    asyncio.run(scenario())
