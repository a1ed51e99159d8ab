"""Server-side scan planning: planTableScan, fetchPlanningResult, cancelPlanning and fetchScanTasks.

A plan is stored in the state database (``stores.scan_plans``) so any replica can answer for it; what
it stores is how to plan each piece again: the metadata file it was planned on, the request, and the
chunks of manifests (``planning.planner``) its ``plan-tasks`` stand for. So:

* planTableScan reads the manifest list, plans chunks inline until ``tasks_per_response`` tasks or
  the time budget are reached, and hands out the other chunks as plan tasks (``<plan-id>:<chunk>``).
  If even the manifest list takes longer than ``sync_budget``, the answer is ``submitted`` and the
  plan completes in the background (polled with fetchPlanningResult).
* fetchScanTasks plans one chunk; it is bounded by ``files_per_task`` files.
* Plans are bound to the caller: another principal, another table or an expired plan gets the spec's
  404 (NoSuchPlanId / NoSuchPlanTask), never someone else's plan.

The catalog opens the table (``Catalog.open_table``), wherever it is served: a remote catalog's table is
planned over the upstream's metadata, read with the storage access the upstream vends to the proxy. The
caller was authorized (``table.read``) by the dispatcher; ``storage-credentials`` are added as for loadTable.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pyiceberg.table.metadata import TableMetadata

from irc_proxy import errors, metrics
from irc_proxy.errors import BadRequest, CatalogError, NoSuchPlanId, NoSuchPlanTask, NotFound, ServiceUnavailable
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.operations import delegation
from irc_proxy.handling.operations.delegation import Asked
from irc_proxy.handling.operations.open_plans import OpenPlans
from irc_proxy.handling.security.access import Access
from irc_proxy.handling.vending.vending import table_locations
from irc_proxy.numbers import is_number
from irc_proxy.planning.budget import Budget
from irc_proxy.planning.expressions import FilterLimits
from irc_proxy.planning.manifests import ManifestCache, ManifestSource
from irc_proxy.planning.planner import Chunk, ScanPlanner, ScanRequest, ScanTasks, repeated_residual_bytes
from irc_proxy.stores.scan_plans import PlanOwner, ScanPlanStore, StoredPlan
from irc_proxy.threads import ThreadRunner

log = logging.getLogger("irc_proxy.planning")
LEASE_SECONDS = 300.0
"""A plan still ``submitted`` this long after its last update lost its planner (a replica stopped): failed."""


@dataclass(frozen=True)
class PlanningLimits:
    """The bounds of scan planning, from ``[server.scan_planning]`` (which holds their defaults)."""

    sync_budget: float
    """Seconds a planTableScan may plan before answering ``submitted`` (0: always asynchronous)."""
    files_per_task: int
    """Files one plan task (one fetchScanTasks) covers at most, by the manifest list's counts."""
    tasks_per_response: int
    """File scan tasks put inline in a planTableScan answer before the rest goes out as plan tasks."""
    response_bytes: int
    """JSON of file scan tasks in one answer (planTableScan or fetchScanTasks) before the rest goes out as plan
    tasks (one task at least)."""
    cpu_seconds: float
    """CPU time one request may spend planning (``planning.budget``); past it the answer is 400."""
    wall_seconds: float
    """Wall-clock time one request may spend planning in worker threads."""
    filters: FilterLimits
    """Bounds of a request's filter (literal sizes, list lengths, total)."""


@dataclass(frozen=True)
class _Table:
    """One table as planning reads it."""

    metadata: TableMetadata
    location: str
    source: ManifestSource
    upstream_credentials: list[dict[str, Any]] | None = None
    """Storage credentials a remote catalog vended for the table (planned here over its metadata)."""


@dataclass(frozen=True)
class _Prepared:
    planner: ScanPlanner
    chunks: list[Chunk]


def _task_id(plan_id: str, index: int, chunk: list[int]) -> str:
    """A plan task: ``<plan-id>:<chunk>``, or ``<plan-id>:<chunk>:<entry>`` to resume a chunk after an entry."""
    return f"{plan_id}:{index}" if not chunk[2] else f"{plan_id}:{index}:{chunk[2]}"


def _pending(plan_id: str, chunks: list[list[int]]) -> list[str]:
    return [_task_id(plan_id, i, chunk) for i, chunk in enumerate(chunks) if chunk]


class ScanPlanning:
    """The process's scan planning: the plan store, the manifest cache, the worker threads, the limits."""

    def __init__(
        self, store: ScanPlanStore, cache: ManifestCache, threads: ThreadRunner, limits: PlanningLimits
    ) -> None:
        self.store, self.cache, self._threads, self.limits = store, cache, threads, limits
        self._background: set[asyncio.Task[None]] = set()
        self.open_plans = OpenPlans()
        """Each principal's plans that keep a request, bounded (``handling.operations.open_plans``)."""

    # Operations ----------------------------------------------------------------------------------------
    async def plan(
        self, access: Access, catalog: Catalog, ident: TableIdent, body: Any, asked: Asked
    ) -> dict[str, Any]:
        """planTableScan: a ``completed`` answer (tasks inline and/or plan tasks) or ``submitted``."""
        request = ScanRequest.from_json(body, self.limits.filters)
        table = await self._open(access, catalog, ident)
        plan_id, owner = uuid.uuid4().hex, _owner(access, catalog, ident)
        budget = self._budget()
        deadline = time.monotonic() + self.limits.sync_budget
        # Only reading the manifest list may turn a plan asynchronous: once chunked, the chunk being planned
        # is waited for (inline planning stops between chunks at the deadline), since most clients
        # (pyiceberg 0.12) cannot poll. Every step is held to the request's budget (PlanTooCostly: 400).
        work = asyncio.ensure_future(self._threads.run(self._prepare, table, request, budget))
        done, _ = await asyncio.wait({work}, timeout=max(0.0, deadline - time.monotonic()))
        if not done:
            await self.store.create(plan_id, owner, table.location, request.to_json(), None)
            await self._opened(owner, plan_id, request.to_json(), None)
            self._settle_later(plan_id, work)
            metrics.SCAN_PLANS.labels(status="submitted").inc()
            return {"status": "submitted", "plan-id": plan_id}
        prepared = work.result()
        inline, remaining = await self._threads.run(self._start, prepared, request, deadline, budget)
        tasks = _pending(plan_id, remaining)
        # A plan with nothing left to fetch is kept without its request (a poll needs only its status).
        kept = prepared.planner.stored_request() if tasks else {}
        await self.store.create(plan_id, owner, table.location, kept, remaining if tasks else [])
        if tasks:
            await self._opened(owner, plan_id, kept, remaining)
        metrics.SCAN_PLANS.labels(status="completed").inc()
        answer: dict[str, Any] = {"status": "completed", "plan-id": plan_id, **inline.body()}
        if tasks:
            answer["plan-tasks"] = tasks
        return answer | await self._credentials(access, catalog, ident, table, asked)

    async def result(
        self, access: Access, catalog: Catalog, ident: TableIdent, plan_id: str, asked: Asked
    ) -> dict[str, Any]:
        """fetchPlanningResult: the plan's status; a completed plan's tasks are all plan tasks."""
        plan = await self._owned(access, catalog, ident, plan_id)
        if plan.status == "submitted" and time.time() - plan.updated_at.timestamp() > LEASE_SECONDS:
            interrupted = ServiceUnavailable("Planning was interrupted (the server planning it stopped); plan again")
            await self.store.fail(plan_id, _error(interrupted))
            plan = await self._owned(access, catalog, ident, plan_id)
        if plan.status == "completed":
            answer: dict[str, Any] = {"status": "completed", "plan-id": plan_id}
            tasks = _pending(plan_id, plan.chunks or [])
            if tasks:
                answer["plan-tasks"] = tasks
            table = await self._open(access, catalog, ident, plan.metadata_location)
            return answer | await self._credentials(access, catalog, ident, table, asked)
        if plan.status == "failed":
            return {"status": "failed", "error": plan.error or _error(ServiceUnavailable("Planning failed"))}
        return {"status": plan.status}

    async def cancel(self, access: Access, catalog: Catalog, ident: TableIdent, plan_id: str) -> None:
        """cancelPlanning: the plan's tasks are released (a poll answers ``cancelled``)."""
        await self._owned(access, catalog, ident, plan_id)
        await self.store.cancel(plan_id)
        self.open_plans.closed(access.context.principal, plan_id)

    async def tasks(self, access: Access, catalog: Catalog, ident: TableIdent, plan_task: Any) -> dict[str, Any]:
        """fetchScanTasks: the file scan tasks of one plan task."""
        if not isinstance(plan_task, str):
            raise BadRequest("Invalid fetchScanTasks request: plan-task must be a string")
        parts = plan_task.split(":")
        plan_id = parts[0]
        if len(parts) not in (2, 3) or not plan_id or not all(is_number(part, 9) for part in parts[1:]):
            raise NoSuchPlanTask(f"No such plan task: {_shown(plan_task)}")
        try:
            plan = await self._owned(access, catalog, ident, plan_id)
        except NoSuchPlanId:
            raise NoSuchPlanTask(f"No such plan task: {_shown(plan_task)}") from None
        index, skip = int(parts[1]), int(parts[2]) if len(parts) == 3 else 0
        chunks = plan.chunks or []
        chunk = chunks[index] if plan.status == "completed" and index < len(chunks) else None
        if not chunk or len(chunk) != 3 or not all(isinstance(n, int) for n in chunk) or skip < chunk[2]:
            raise NoSuchPlanTask(f"No such plan task: {_shown(plan_task)}")
        try:
            table = await self._open(access, catalog, ident, plan.metadata_location)
        except NoSuchPlanId:
            raise NoSuchPlanTask(f"No such plan task: {_shown(plan_task)} (its table was dropped since)") from None
        request = ScanRequest.from_json(plan.request, None)
        tasks, resume = await self._threads.run(self._plan_chunk, table, request, (chunk[0], chunk[1]), skip)
        answer = tasks.body()
        if resume is not None:
            answer["plan-tasks"] = [_task_id(plan_id, index, [chunk[0], chunk[1], resume])]
        return answer

    # Planning (blocking, in worker threads) ----------------------------------------------------------------
    def _budget(self) -> Budget:
        return Budget(self.limits.cpu_seconds, self.limits.wall_seconds)

    def _planner(self, table: _Table, request: ScanRequest, budget: Budget) -> ScanPlanner:
        residual_bytes = repeated_residual_bytes(self.limits.response_bytes)
        return ScanPlanner(table.metadata, request, table.source, budget, residual_bytes)

    def _answer(self, max_tasks: int) -> ScanTasks:
        return ScanTasks(max_tasks=max_tasks, max_bytes=self.limits.response_bytes)

    def _prepare(self, table: _Table, request: ScanRequest, budget: Budget) -> _Prepared:
        """Read the manifest list and chunk the data manifests that may match."""
        with budget.running():
            planner = self._planner(table, request, budget)
            return _Prepared(planner, planner.chunks(self.limits.files_per_task))

    def _start(
        self, prepared: _Prepared, request: ScanRequest, deadline: float, budget: Budget
    ) -> tuple[ScanTasks, list[list[int]]]:
        """Plan chunks inline until the time, the task or size limit, or ``min-rows-requested`` is reached (one
        chunk's first task at least). The chunks as stored: ``[start, end, entry to resume at]``, ``[]`` when done."""
        planner, chunks = prepared.planner, prepared.chunks
        inline = self._answer(self.limits.tasks_per_response)
        remaining = [[start, end, 0] for start, end in chunks]
        wanted = request.min_rows_requested
        with budget.running():
            for i, chunk in enumerate(chunks):
                if i and (time.monotonic() >= deadline or inline.full):
                    break
                resume = planner.plan_chunk(chunk, inline)
                if wanted is not None and inline.plain_rows >= wanted:  # enough rows: the rest is not needed
                    remaining[i:] = [[] for _ in remaining[i:]]
                    break
                if resume is not None:
                    remaining[i][2] = resume
                    break
                remaining[i] = []
        return inline, remaining

    def _plan_chunk(self, table: _Table, request: ScanRequest, chunk: Chunk, skip: int) -> tuple[ScanTasks, int | None]:
        budget = self._budget()
        with budget.running():
            tasks = self._answer(self.limits.files_per_task)
            resume = self._planner(table, request, budget).plan_chunk(chunk, tasks, skip)
            return tasks, resume

    async def _opened(
        self, owner: PlanOwner, plan_id: str, request: dict[str, Any], chunks: list[list[int]] | None
    ) -> None:
        """Count a plan that keeps its request against its principal's bound; cancel the oldest past it."""
        size = len(json.dumps(request, separators=(",", ":"))) + len(json.dumps(chunks or []))
        ttl = self.store.ttl.total_seconds()
        for old in self.open_plans.opened(owner.principal, plan_id, size, ttl):
            await self.store.cancel(old)

    def _settle_later(self, plan_id: str, work: asyncio.Future[_Prepared]) -> None:
        async def settle() -> None:
            try:
                prepared = await work
            except CatalogError as exc:
                await self.store.fail(plan_id, _error(exc))
                return
            except Exception:
                log.exception("scan plan %s failed", plan_id)
                await self.store.fail(plan_id, _error(ServiceUnavailable("Planning failed; plan again")))
                return
            # all chunks: the inline ones were never sent
            chunks = [[start, end, 0] for start, end in prepared.chunks]
            await self.store.complete(plan_id, chunks, prepared.planner.stored_request())

        task = asyncio.get_running_loop().create_task(settle())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        """Wait (briefly) for background plans to be stored."""
        if self._background:
            await asyncio.wait(self._background, timeout=5)

    # Plans and tables ------------------------------------------------------------------------------------
    async def _owned(self, access: Access, catalog: Catalog, ident: TableIdent, plan_id: str) -> StoredPlan:
        plan = await self.store.get(plan_id) if len(plan_id) <= 64 else None
        if plan is None or plan.owner != _owner(access, catalog, ident):
            raise NoSuchPlanId(f"No such plan: {_shown(plan_id)}")
        return plan

    async def _open(self, access: Access, catalog: Catalog, ident: TableIdent, location: str | None = None) -> _Table:
        """The table at its current metadata, or at ``location`` (a plan's; the table must still exist)."""
        opened = await catalog.open_table(access.context, ident)
        current = opened.load
        metadata = current.metadata
        if location is not None and location != current.location:
            metadata = await _planned_metadata(opened.metadata_at, location)
            _same_table(metadata, current.metadata)
        read, owns = opened.files(metadata)
        source = ManifestSource(self.cache, opened.cache_key, read, owns)
        return _Table(metadata, location or current.location, source, current.storage_credentials)

    async def _credentials(
        self, access: Access, catalog: Catalog, ident: TableIdent, table: _Table, asked: Asked
    ) -> dict[str, Any]:
        """``storage-credentials`` for the files, when the caller asked for vended credentials and may have them."""
        if delegation.VENDED not in asked.modes:
            return {}
        if table.upstream_credentials is not None:
            return {"storage-credentials": table.upstream_credentials} if table.upstream_credentials else {}
        locations = table_locations(table.metadata.location, table.metadata.properties)
        granted = await delegation.table_access(
            access, catalog, ident, locations, Asked(frozenset({delegation.VENDED}))
        )
        found = granted.fields.get("storage-credentials")
        return {"storage-credentials": found} if found else {}


# Helpers ----------------------------------------------------------------------------------------------------
async def _planned_metadata(read: Callable[[str], Awaitable[TableMetadata]], location: str) -> TableMetadata:
    """The metadata file a plan was planned on; gone (the table was purged or expired) is no plan."""
    try:
        return await read(location)
    except NotFound:
        raise NoSuchPlanId("No such plan: its table's metadata is gone") from None


def _same_table(planned: TableMetadata, current: TableMetadata) -> None:
    """A plan belongs to one table, not to a name: a table dropped and created again has other plans."""
    if planned.table_uuid != current.table_uuid:
        raise NoSuchPlanId("No such plan: its table was dropped since")


def _owner(access: Access, catalog: Catalog, ident: TableIdent) -> PlanOwner:
    return PlanOwner(access.context.principal, catalog.name, tuple(ident.namespace), ident.name)


def _error(exc: CatalogError) -> dict[str, Any]:
    """The spec's error object for a failed plan."""
    status, type_name = errors.answer(exc) or errors.answer(ServiceUnavailable("")) or (503, "")
    return {"message": str(exc), "type": type_name, "code": status}


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 80 else repr(value[:77] + "...")
