"""Claims of maintenance runs: the worker's claim of any queued run, and ``claim_run`` of one run by its id
(``irc-proxy maintenance run --here``) under the same rules: one holder, one run per table."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import sqlalchemy as sa

from irc_proxy.stores.maintenance import MaintenanceStore, new_run
from irc_proxy.threads import ThreadRunner

LEASE = timedelta(minutes=5)


def test_claim_run_takes_only_that_run_once_and_never_beside_a_run_of_the_same_table(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    store = MaintenanceStore(state_engine, threads)
    first = new_run(uid, ("sales",), "orders", ["expire-snapshots"], False, "cli:someone")
    second = new_run(uid, ("sales",), "orders", ["remove-orphan-files"], True, "cli:someone")
    other = new_run(uid, ("sales",), "customers", ["expire-snapshots"], False, "cli:someone")

    async def scenario() -> None:
        for run in (first, second, other):
            await store.add(run)
        claimed = await store.claim_run(second.id, "cli", LEASE)
        assert claimed is not None and (claimed.id, claimed.status) == (second.id, "running")
        assert await store.claim_run(second.id, "worker", LEASE) is None  # held: never twice
        assert await store.claim_run(first.id, "worker", LEASE) is None  # its table is held by the second
        worker = await store.claim([uid], "worker", LEASE)
        assert worker is not None and worker.id == other.id  # the worker skips the held table too
        assert await store.finish(second.id, "cli", "succeeded", {}, None)
        again = await store.claim_run(first.id, "worker", LEASE)
        assert again is not None and again.id == first.id
        assert await store.claim_run("no-such-run", "cli", LEASE) is None

    asyncio.run(scenario())


def test_claim_run_takes_over_a_run_whose_lease_ran_out(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    store = MaintenanceStore(state_engine, threads)
    run = new_run(uid, ("sales",), "orders", ["expire-snapshots"], False, "cli:someone")

    async def scenario() -> None:
        await store.add(run)
        assert await store.claim_run(run.id, "dead replica", timedelta(seconds=-1)) is not None
        taken = await store.claim_run(run.id, "cli", LEASE)
        assert taken is not None and taken.status == "running"
        assert not await store.finish(run.id, "dead replica", "succeeded", {}, None)  # its outcome is dropped
        assert await store.finish(run.id, "cli", "succeeded", {}, None)

    asyncio.run(scenario())


def test_adding_a_run_forgets_its_tables_finished_runs_but_the_newest(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    """A table's writer may request a run each time the last finished: the history stays ``kept_per_table``
    finished runs (plus the one queued), another table's runs and a running run are never forgotten."""
    store = MaintenanceStore(state_engine, threads, kept_per_table=2)
    other = new_run(uid, ("sales",), "customers", ["expire-snapshots"], True, "w")

    async def scenario() -> None:
        await store.add(other)
        assert await store.claim_run(other.id, "worker", LEASE) is not None  # running through all of it
        added = []
        for _ in range(5):
            run = new_run(uid, ("sales",), "orders", ["expire-snapshots"], True, "w")
            await store.add(run)
            added.append(run.id)
            assert await store.claim_run(run.id, "worker", LEASE) is not None
            assert await store.finish(run.id, "worker", "succeeded", {}, None)
        kept = [run.id for run in await store.page(uid, ("sales",), "orders", 0, 100)]
        assert kept == added[::-1][:3]  # the newest two kept when the fifth was added, then the fifth
        assert [run.id for run in await store.page(uid, ("sales",), "customers", 0, 100)] == [other.id]

    asyncio.run(scenario())


def test_claim_passes_over_the_callers_own_running_runs_whose_lease_lapsed(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    """A replica that stalled past its lease must not take its own run again; another replica may."""
    store = MaintenanceStore(state_engine, threads)
    run = new_run(uid, ("sales",), "orders", ["expire-snapshots"], False, "cli:someone")

    async def scenario() -> None:
        await store.add(run)
        assert await store.claim([uid], "stalled", timedelta(seconds=-1), ()) is not None  # lapsed at once
        assert await store.claim([uid], "stalled", LEASE, [run.id]) is None
        taken = await store.claim([uid], "other", LEASE, ())
        assert taken is not None and taken.id == run.id

    asyncio.run(scenario())
