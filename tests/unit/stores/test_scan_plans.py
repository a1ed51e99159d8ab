"""Server-side scan plans: created, settled once, cancelled, expired, and never larger than a row may be."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
import sqlalchemy as sa

from irc_proxy.errors import PayloadTooLarge
from irc_proxy.stores.scan_plans import MAX_ROW_BYTES, PlanOwner, ScanPlanStore
from irc_proxy.threads import ThreadRunner

OWNER = PlanOwner("alice", "lake", ("sales", "eu"), "orders")
REQUEST = {"select": ["id"], "filter": {"type": "true"}}


@pytest.fixture
def store(state_engine: sa.Engine, threads: ThreadRunner) -> ScanPlanStore:
    return ScanPlanStore(state_engine, threads, ttl=timedelta(minutes=5))


def test_a_completed_plan_is_read_back_with_its_owner_and_chunks(store: ScanPlanStore, uid: str) -> None:
    asyncio.run(store.create(uid, OWNER, "s3://m/1.json", REQUEST, [[0, 4, 0], [4, 8, 1]]))
    plan = asyncio.run(store.get(uid))
    assert plan is not None
    assert (plan.owner, plan.status, plan.chunks, plan.request) == (OWNER, "completed", [[0, 4, 0], [4, 8, 1]], REQUEST)
    assert plan.metadata_location == "s3://m/1.json"
    assert plan.updated_at.tzinfo is not None
    assert asyncio.run(store.get(f"missing-{uid}")) is None


def test_a_plan_with_nothing_left_to_fetch_keeps_no_request(store: ScanPlanStore, uid: str) -> None:
    asyncio.run(store.create(uid, OWNER, "s3://m/1.json", REQUEST, [[]]))
    plan = asyncio.run(store.get(uid))
    assert plan is not None and (plan.request, plan.chunks) == ({}, [])


def test_a_submitted_plan_is_settled_once(store: ScanPlanStore, uid: str) -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        await store.create(uid, OWNER, "s3://m/1.json", REQUEST, None)
        submitted = await store.get(uid)
        assert submitted is not None and (submitted.status, submitted.chunks) == ("submitted", None)
        return (
            await store.complete(uid, [[0, 1, 0]], REQUEST),
            await store.fail(uid, {"message": "late", "type": "X", "code": 500}),
            await store.complete(uid, [[0, 2, 0]], REQUEST),
        )

    assert asyncio.run(scenario()) == (True, False, False)
    plan = asyncio.run(store.get(uid))
    assert plan is not None and (plan.status, plan.chunks, plan.error) == ("completed", [[0, 1, 0]], None)


def test_a_failed_plan_keeps_its_error_and_drops_its_request(store: ScanPlanStore, uid: str) -> None:
    error = {"message": "no such snapshot", "type": "NoSuchSnapshotException", "code": 404}
    asyncio.run(store.create(uid, OWNER, "s3://m/1.json", REQUEST, None))
    assert asyncio.run(store.fail(uid, error))
    plan = asyncio.run(store.get(uid))
    assert plan is not None and (plan.status, plan.error, plan.request) == ("failed", error, {})


def test_a_cancelled_plan_cannot_be_completed(store: ScanPlanStore, uid: str) -> None:
    asyncio.run(store.create(uid, OWNER, "s3://m/1.json", REQUEST, None))
    assert asyncio.run(store.cancel(uid))
    assert not asyncio.run(store.complete(uid, [[0, 1, 0]], REQUEST))
    plan = asyncio.run(store.get(uid))
    assert plan is not None and (plan.status, plan.chunks, plan.request) == ("cancelled", None, {})
    assert not asyncio.run(store.cancel(f"missing-{uid}"))


def test_an_expired_plan_is_gone_and_cannot_be_cancelled(
    state_engine: sa.Engine, threads: ThreadRunner, uid: str
) -> None:
    store = ScanPlanStore(state_engine, threads, ttl=timedelta(seconds=-1))
    asyncio.run(store.create(uid, OWNER, "s3://m/1.json", REQUEST, [[0, 1, 0]]))
    assert asyncio.run(store.get(uid)) is None
    assert not asyncio.run(store.cancel(uid))


def test_a_plan_larger_than_a_row_may_hold_is_payload_too_large(store: ScanPlanStore, uid: str) -> None:
    huge = {"filter": "x" * MAX_ROW_BYTES}
    with pytest.raises(PayloadTooLarge, match="narrow the scan"):
        asyncio.run(store.create(uid, OWNER, "s3://m/1.json", huge, [[0, 1, 0]]))
    asyncio.run(store.create(uid, OWNER, "s3://m/1.json", REQUEST, None))
    with pytest.raises(PayloadTooLarge):
        asyncio.run(store.complete(uid, [[0, 1, 0]], huge))
    plan = asyncio.run(store.get(uid))
    assert plan is not None and plan.status == "submitted"
