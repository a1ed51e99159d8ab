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
