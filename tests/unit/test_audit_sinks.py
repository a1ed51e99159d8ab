"""The audit sinks' queue: batches, bounds, drops counted, and nothing lost on a timely shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

from irc_proxy.audit import AuditRecord, _QueuedSink


def record(i: int) -> AuditRecord:
    return AuditRecord(datetime.now(UTC), "alice", "loadTable", "local", f"ns.t{i}", 200, f"id-{i}", 1.0)


class Collecting(_QueuedSink):
    """A sink that keeps what it is given; ``gate`` holds each write until it is set."""

    name = "collecting"

    def __init__(self, queue_size: int = 100, batch_size: int = 10, fail: bool = False) -> None:
        super().__init__(queue_size, batch_size)
        self.batches: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail = fail

    async def write(self, batch: Sequence[AuditRecord]) -> None:
        await self.gate.wait()
        if self.fail:
            raise OSError("disk full")
        self.batches.append([r.request_id for r in batch])


def test_records_offered_while_a_write_is_busy_go_out_in_batches_in_order() -> None:
    async def scenario() -> list[list[str]]:
        sink = Collecting(batch_size=4)
        sink.start()
        sink.gate.clear()
        sink.offer(record(0))
        await asyncio.sleep(0)  # the task takes the first record and waits in write
        for i in range(1, 10):
            sink.offer(record(i))
        sink.gate.set()
        await sink.caught_up(2.0)
        await sink.close(1.0)
        return sink.batches

    batches = asyncio.run(scenario())
    assert batches == [["id-0"], ["id-1", "id-2", "id-3", "id-4"], ["id-5", "id-6", "id-7", "id-8"], ["id-9"]]


def test_an_idle_sink_wakes_for_the_next_record() -> None:
    async def scenario() -> list[list[str]]:
        sink = Collecting()
        sink.start()
        await asyncio.sleep(0.01)  # idle, waiting for a record
        sink.offer(record(1))
        await sink.caught_up(2.0)
        sink.offer(record(2))
        await sink.caught_up(2.0)
        await sink.close(1.0)
        return sink.batches

    assert asyncio.run(scenario()) == [["id-1"], ["id-2"]]


def test_a_full_queue_drops_and_counts_the_overflow() -> None:
    async def scenario() -> tuple[int, int, list[list[str]]]:
        sink = Collecting(queue_size=3, batch_size=10)
        sink.start()
        for i in range(5):  # the task has not run yet: nothing was taken from the queue
            sink.offer(record(i))
        await sink.close(2.0)
        return sink.offered, sink.drops.count, sink.batches

    offered, dropped, batches = asyncio.run(scenario())
    assert (offered, dropped) == (3, 2)
    assert batches == [["id-0", "id-1", "id-2"]]


def test_close_writes_everything_queued_before_it_stops() -> None:
    async def scenario() -> tuple[list[list[str]], int]:
        sink = Collecting(batch_size=2)
        sink.start()
        for i in range(7):
            sink.offer(record(i))
        await sink.close(5.0)
        return sink.batches, sink.drops.count

    batches, dropped = asyncio.run(scenario())
    assert [r for batch in batches for r in batch] == [f"id-{i}" for i in range(7)]
    assert dropped == 0


def test_close_after_its_timeout_counts_what_was_never_written() -> None:
    async def scenario() -> tuple[int, list[list[str]]]:
        sink = Collecting(batch_size=2)
        sink.start()
        sink.gate.clear()  # the store hangs
        for i in range(5):
            sink.offer(record(i))
        await sink.close(0.05)
        return sink.drops.count, sink.batches

    dropped, batches = asyncio.run(scenario())
    assert batches == []
    assert dropped == 3  # the two in the hanging write were taken; the three queued behind it are counted


def test_a_failing_write_drops_its_batch_and_the_sink_goes_on() -> None:
    async def scenario() -> tuple[int, int]:
        sink = Collecting(batch_size=5, fail=True)
        sink.start()
        for i in range(3):
            sink.offer(record(i))
        await sink.caught_up(2.0)
        sink.fail = False
        sink.offer(record(3))
        await sink.close(2.0)
        return sink.drops.count, len(sink.batches)

    assert asyncio.run(scenario()) == (3, 1)
