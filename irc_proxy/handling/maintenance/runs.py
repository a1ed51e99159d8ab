"""Maintenance runs: requested through the API (queued in the state database), run by any replica's worker.

The worker (:meth:`Maintenance.run_worker`, started by the application's lifespan) claims queued runs of
its catalogs, at most ``max_concurrent_runs`` at once, one run per table across replicas
(``stores.maintenance``), and renews each claim's lease while the run works, so a replica that dies
mid-run lets another take the run over once the lease ends. A run's jobs run in the order requested;
each records its own outcome (``succeeded``, ``skipped`` with the reason, ``failed`` with the error). The
run is ``failed`` if a job failed, ``skipped`` if every job was skipped, else ``succeeded``. Each finished run is
audited as ``maintenance.run`` by ``irc-proxy`` (who requested it, every job's outcome), and each of its jobs as
``maintenance.<job>`` (``maintenance.expire-snapshots``, ...: its outcome and counts, status 500 when it
failed), so an audit query by operation finds one job's outcomes; runs and jobs are metered
(``maintenance.metering``). Local jobs run in a child process by default (``children``: the claim, lease, outcome,
audit and metering stay here), Spark jobs in a Spark driver (``spark``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from irc_proxy import metrics
from irc_proxy.audit import AuditRecord, now
from irc_proxy.errors import BadRequest, CatalogError, Conflict, NotFound
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.maintenance import metering
from irc_proxy.handling.maintenance.children import ChildFailed, LocalChildren
from irc_proxy.handling.maintenance.job import JOBS, Job, Limits, skipped
from irc_proxy.handling.maintenance.policy import NamespaceLoader, Policy, namespace_layers, resolve
from irc_proxy.handling.maintenance.spark import Shape, SparkExecutor
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.security.context import SYSTEM_PRINCIPAL, RequestContext
from irc_proxy.settings import CatalogMaintenanceSettings
from irc_proxy.stores.maintenance import MaintenanceRun, MaintenanceStore, new_run
from irc_proxy.stores.maintenance_schedule import ScheduleStore
from irc_proxy.threads import ThreadRunner

__all__ = ["JOBS", "Maintenance", "MaintenanceRun", "NoSuchMaintenanceRun", "WorkerSettings"]
log = logging.getLogger("irc_proxy.maintenance")
MAX_ID_CHARS = 64
Lease = asyncio.Future[Any]
"""The renewal of a run's claim: done once the claim is lost."""


class NoSuchMaintenanceRun(NotFound):
    """No run with that id in the catalog."""


class AlreadyQueued(Conflict):
    """A run of the table is queued and has not started yet (409)."""


@dataclass(frozen=True)
class WorkerSettings:
    """How a replica runs maintenance (``[server.maintenance]``)."""

    max_concurrent_runs: int
    poll_seconds: float
    lease: timedelta
    limits: Limits
    protected: tuple[str, ...] = ()
    """``file:`` locations of the proxy's own files (data directory, SQLite databases): see ``Job.protected``."""


def run_status(results: dict[str, Any]) -> str:
    """A run's status from its jobs' outcomes (see the module)."""
    outcomes = [result.get("status") for result in results.values()]
    if "failed" in outcomes:
        return "failed"
    return "skipped" if outcomes and all(o == "skipped" for o in outcomes) else "succeeded"


def job_outcome(result: dict[str, Any]) -> str:
    """A job's outcome in one line: ``succeeded; files-deleted=3, ...``, ``skipped: why``, ``failed: error``."""
    status = str(result.get("status"))
    why = result.get("reason") or result.get("error")
    counts = ", ".join(f"{k}={v}" for k, v in result.items() if k not in ("status", "reason", "error", "seconds"))
    return status + (f": {why}" if why else "") + (f"; {counts}" if counts else "")


class Maintenance:
    """Maintenance runs of every catalog of a process."""

    def __init__(
        self,
        store: MaintenanceStore,
        threads: ThreadRunner,
        settings: WorkerSettings,
        audit: Callable[[AuditRecord], None] | None = None,
        policies: Mapping[str, CatalogMaintenanceSettings] | None = None,
        schedule: ScheduleStore | None = None,
        spark: Mapping[str, SparkExecutor] | None = None,
        children: LocalChildren | None = None,
    ) -> None:
        self.store, self._threads, self.settings, self._audit = store, threads, settings, audit
        self.policies = dict(policies or {})
        """Each catalog's ``[catalogs.<name>.maintenance]`` (a catalog not named: the defaults)."""
        self.schedule = schedule
        """Marks and sweeps (None: nothing is scheduled, commits mark nothing)."""
        self._spark = dict(spark or {})
        """The ``spark`` executor of each catalog that has one (``[catalogs.<name>.maintenance]``)."""
        self._children = children
        """Where local jobs run (``isolation = "process"``); None: in this process."""
        self.holder = uuid.uuid4().hex
        self._running: set[asyncio.Task[None]] = set()
        self._mine: set[str] = set()
        """The runs this process is running now: never claimed again here, even once their lease lapsed."""
        self._allowed: dict[str, tuple[str, ...]] = {}
        """Each catalog's allowed locations (``Job.foreign`` of the others), known once the worker starts."""

    # Requests ----------------------------------------------------------------------------------------------
    async def submit(
        self, catalog: Catalog, ident: TableIdent, jobs: Sequence[str], dry_run: bool, principal: str
    ) -> MaintenanceRun:
        """Queue a run of ``jobs`` on an existing table. Raises BadRequest (no or unknown jobs), NoSuchTable,
        AlreadyQueued (a run of the table is queued: one at a time, so one caller's requests cannot fill the
        queue and the state database)."""
        wanted = list(dict.fromkeys(jobs))
        unknown = [job for job in wanted if job not in JOBS]
        if not wanted or unknown:
            raise BadRequest(f"Invalid jobs {unknown or wanted}: name one or more of {', '.join(JOBS)}")
        await catalog.tables.exists(ident)
        if (waiting := await self.store.queued(catalog.name, ident.namespace, ident.name)) is not None:
            raise AlreadyQueued(f"A maintenance run of table {ident} is queued already: {waiting.id}")
        run = new_run(catalog.name, ident.namespace, ident.name, wanted, dry_run, principal)
        await self.store.add(run)
        return run

    async def get(self, catalog: Catalog, run_id: str) -> MaintenanceRun:
        found = await self.store.get(catalog.name, run_id) if len(run_id) <= MAX_ID_CHARS else None
        if found is None:
            raise NoSuchMaintenanceRun(f"No such maintenance run in catalog {catalog.name}: {run_id[:MAX_ID_CHARS]}")
        return found

    async def page(
        self, catalog: Catalog, namespace: Sequence[str] | None, name: str | None, offset: int, limit: int
    ) -> list[MaintenanceRun]:
        return await self.store.page(catalog.name, namespace, name, offset, limit)

    async def running(self, catalog: str, run_id: str, ident: TableIdent) -> bool:
        """Whether run ``run_id`` of ``catalog`` is running now on table ``ident`` (a run credential is honoured
        only then; see ``run_tokens.WithRunCredentials``)."""
        found = await self.store.get(catalog, run_id)
        return (
            found is not None
            and found.status == "running"
            and (tuple(found.namespace), found.name) == (tuple(ident.namespace), ident.name)
        )

    def scheduled(self, catalog: str) -> bool:
        """Whether the catalog's tables are maintained on a schedule (``enabled``)."""
        return self.schedule is not None and self.policy_settings(catalog).enabled

    def policy_settings(self, catalog: str) -> CatalogMaintenanceSettings:
        return self.policies.get(catalog) or CatalogMaintenanceSettings()

    async def mark(self, catalog: str, idents: Sequence[TableIdent]) -> None:
        """Mark tables a commit changed for the next sweep of a scheduled catalog (one cheap write per table; a
        failure is logged, never the commit's: the sweep's walk finds the table anyway)."""
        if self.schedule is None or not self.scheduled(catalog):
            return
        try:
            for ident in idents:
                await self.schedule.mark(catalog, ident.namespace, ident.name)
        except CatalogError as exc:
            log.warning("maintenance: could not mark %s for evaluation: %s", catalog, exc)

    async def policy(
        self, catalog: Catalog, ident: TableIdent, properties: Mapping[str, str], load: NamespaceLoader | None = None
    ) -> Policy:
        """The table's effective policy (``policy.resolve``): its namespaces' properties are read here, through
        ``load`` when given (``policy.OncePerNamespace``: many tables, each namespace read once)."""
        layers = await namespace_layers(load or catalog.namespaces.load, ident.namespace)
        return resolve(self.policy_settings(catalog.name), layers, properties)

    async def policy_or_own(
        self, catalog: Catalog, ident: TableIdent, properties: Mapping[str, str], load: NamespaceLoader | None = None
    ) -> Policy:
        """``policy``, or the catalog's and the table's own layers when the proxy cannot read the namespaces (a
        remote catalog's, or dropped meanwhile): a reader of many tables goes on."""
        try:
            return await self.policy(catalog, ident, properties, load)
        except CatalogError:
            return resolve(self.policy_settings(catalog.name), [], properties)

    # The worker --------------------------------------------------------------------------------------------
    async def run_worker(self, catalogs: dict[str, Catalog]) -> None:
        """Claim and run queued runs until cancelled (each replica runs one worker)."""
        self.know(catalogs)
        try:
            while True:
                try:
                    await self.work_once(catalogs)  # a catalog that cannot run a job answers skipped, with why
                except CatalogError as exc:  # the state database is away: next round
                    log.warning("maintenance worker: %s", exc)
                await asyncio.sleep(self.settings.poll_seconds)
        finally:
            for task in self._running:
                task.cancel()

    def know(self, catalogs: dict[str, Catalog]) -> None:
        """Remember every catalog's allowed locations (a job leaves alone tables overlapping another's)."""
        for name, catalog in catalogs.items():
            locations = catalog.tables.storage.locations
            self._allowed[name] = () if locations is None else tuple(str(loc) for loc in locations.allowed)

    async def work_once(self, catalogs: dict[str, Catalog]) -> int:
        """Start as many claimable runs as the bound allows; returns how many were started."""
        started = 0
        while catalogs and len(self._running) < self.settings.max_concurrent_runs:
            run = await self.store.claim(list(catalogs), self.holder, self.settings.lease, self._mine)
            if run is None:
                break
            task = asyncio.create_task(self.execute(catalogs[run.catalog], run))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
            started += 1
        return started

    async def run_here(self, catalog: Catalog, run_id: str) -> bool:
        """Claim run ``run_id`` and run it in this process (``irc-proxy maintenance run --here``), under the same
        claim and lease as the worker's, so a replica's worker never runs it too. False when it cannot be claimed
        now: a worker took it first, or another run holds its table."""
        run = await self.store.claim_run(run_id, self.holder, self.settings.lease)
        if run is None:
            return False
        await self.execute(catalog, run)
        return True

    async def wait(self) -> None:
        """Wait for the runs this replica is running (tests, the command line)."""
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)

    async def execute(self, catalog: Catalog, run: MaintenanceRun) -> None:
        """Run a claimed run's jobs and record the outcome (the lease renewed meanwhile)."""
        self._mine.add(run.id)  # until its outcome is recorded
        try:
            await self._execute(catalog, run)
        finally:
            self._mine.discard(run.id)

    async def _execute(self, catalog: Catalog, run: MaintenanceRun) -> None:
        begun = time.monotonic()
        metrics.MAINTENANCE_RUNNING.inc()
        renewing = asyncio.create_task(self._renew(run.id))
        results: dict[str, Any] = {}
        error: str | None = None
        try:
            error = await self._run(catalog, run, results, renewing)
        except CatalogError as exc:  # the table is gone, the storage is away, ...
            error = exc.message
        except Exception as exc:  # a bug: recorded, the worker goes on
            log.exception("maintenance run %s failed", run.id)
            error = f"{type(exc).__name__}: internal error"
        finally:
            renewing.cancel()
            metrics.MAINTENANCE_RUNNING.dec()
        status = "failed" if error is not None else run_status(results)
        for name, result in results.items():
            metering.job_finished(name, result, float(result.get("seconds", 0.0)), run.dry_run)
        metering.run_finished(run.catalog, status, time.monotonic() - begun)
        if not await self.store.finish(run.id, self.holder, status, results, error):
            log.warning("maintenance run %s was taken over by another replica; its outcome here is dropped", run.id)
            return
        self._record(run, status, results, error, begun)

    async def _run(self, catalog: Catalog, run: MaintenanceRun, results: dict[str, Any], lease: Lease) -> str | None:
        """The run's jobs in the order requested, into ``results``: its Spark jobs all at once (one Spark driver per
        run), each stretch of local jobs here or in a child process. The error that stopped the run, if any."""
        spark = self._spark.get(catalog.name)
        local: list[str] = []
        for name in [*run.jobs, None]:
            if name is not None and (spark is None or not spark.runs(name)):
                local.append(name)
                continue
            if local:
                error = await self._local(catalog, run, local, results, lease)
                if error is not None:
                    return error
                local = []
            if spark is not None and name is not None and name not in results:
                results.update(await self._spark_jobs(spark, catalog, run))
        return None

    async def _local(
        self,
        catalog: Catalog,
        run: MaintenanceRun,
        jobs: list[str],
        results: dict[str, Any],
        lease: asyncio.Future[Any],
    ) -> str | None:
        """Local jobs in a child process (``isolation = "process"``), else here."""
        if self._children is None:
            await self.run_jobs(catalog, run, jobs, results)
            return None
        ident = TableIdent(run.namespace, run.name)
        # While the child may commit, this process serves the table's pointer from no cache (read-your-writes).
        with contextlib.nullcontext() if run.dry_run else catalog.tables.moved_elsewhere(ident):
            try:
                async with self._children.child() as child:
                    return await child.run(catalog.name, run.id, self.holder, jobs, results, lease)
            except ChildFailed as exc:
                return str(exc)

    async def run_jobs(
        self,
        catalog: Catalog,
        run: MaintenanceRun,
        jobs: Sequence[str],
        results: dict[str, Any],
        report: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        """Run local ``jobs`` of ``run`` in this process, each result into ``results`` (and to ``report``) as it
        ends. Raises CatalogError (the table is gone, the storage is away, ...)."""
        ident = TableIdent(run.namespace, run.name)
        policy = await self._run_policy(catalog, ident)
        for name in jobs:
            results[name] = await self._job(catalog, ident, name, run, policy)
            if report is not None:
                report(name, results[name])

    async def close(self) -> None:
        """Stop the child processes (the server stops)."""
        if self._children is not None:
            await self._children.close()

    async def _job(
        self, catalog: Catalog, ident: TableIdent, name: str, run: MaintenanceRun, policy: Policy
    ) -> dict[str, Any]:
        foreign = tuple(loc for other, allowed in self._allowed.items() if other != catalog.name for loc in allowed)
        checkpoint = _RunCheckpoint(self.store, run.id, self.holder, name)
        job = Job(
            catalog,
            ident,
            run.dry_run,
            self.settings.limits,
            self._threads,
            foreign,
            self.settings.protected,
            policy,
            checkpoint,
        )
        started = time.monotonic()
        # deferred: the runners pull pyarrow and boto3, which a proxy that runs no job never needs
        from irc_proxy.handling.maintenance.runners import RUNNERS

        runner = RUNNERS.get(name)
        result = skipped("not implemented yet") if runner is None else await runner(job)
        warnings = {"policy-warnings": list(policy.warnings)} if policy.warnings else {}
        return {**result, **warnings, "seconds": round(time.monotonic() - started, 3)}

    async def _run_policy(self, catalog: Catalog, ident: TableIdent) -> Policy:
        """The table's policy, or the catalog's alone when the proxy cannot read the table (each job then says
        why it cannot run: the table is gone, its remote catalog commits it, ...)."""
        context = RequestContext(request_id=f"maintenance-{uuid.uuid4().hex}", principal=SYSTEM_PRINCIPAL)
        try:
            loaded = await catalog.load_table(context, ident)  # served here or by its remote catalog
        except CatalogError:
            return resolve(self.policy_settings(catalog.name), [], {})
        return await self.policy_or_own(catalog, ident, loaded.metadata.properties)

    async def _spark_jobs(self, spark: SparkExecutor, catalog: Catalog, run: MaintenanceRun) -> dict[str, Any]:
        """The run's Spark jobs in one Spark driver (a dry run starts none: it reports the table as it is)."""
        jobs = [name for name in run.jobs if spark.runs(name)]
        ident = TableIdent(run.namespace, run.name)
        before = Shape.of((await catalog.tables.load(ident)).metadata)
        if run.dry_run:
            return {name: before.dry_run(name) for name in jobs}
        started = time.monotonic()
        found = await spark.run(run.id, catalog.name, ident, jobs, before.format_version)
        seconds = round(time.monotonic() - started, 3)
        after = Shape.of((await catalog.tables.load(ident)).metadata)
        return {
            name: {**found[name], **before.change(name, after), "executor": "spark", "seconds": seconds}
            for name in jobs
        }

    async def _renew(self, run_id: str) -> None:
        every = max(self.settings.lease.total_seconds() / 3, 0.05)
        while True:
            await asyncio.sleep(every)
            with contextlib.suppress(CatalogError):  # the next renewal tries again
                if not await self.store.renew(run_id, self.holder, self.settings.lease):
                    return

    def _record(
        self, run: MaintenanceRun, status: str, results: dict[str, Any], error: str | None, begun: float
    ) -> None:
        summary = ", ".join(f"{job}: {result.get('status')}" for job, result in results.items())
        log.info("maintenance run %s of %s.%s: %s (%s)", run.id, ".".join(run.namespace), run.name, status, summary)
        if self._audit is None:
            return
        table, requested = str(TableIdent(run.namespace, run.name)), f"run {run.id} requested by {run.requested_by}"
        requested += " (dry run)" if run.dry_run else ""
        for job, result in results.items():
            self._audit(
                AuditRecord(
                    time=now(),
                    principal=SYSTEM_PRINCIPAL,
                    operation=f"maintenance.{job}",
                    catalog=run.catalog,
                    object=table,
                    status=500 if result.get("status") == "failed" else 200,
                    request_id=f"maintenance-{run.id}",
                    latency_ms=round(float(result.get("seconds", 0.0)) * 1000, 3),
                    reason=f"{requested}: {job_outcome(result)}",
                )
            )
        self._audit(
            AuditRecord(
                time=now(),
                principal=SYSTEM_PRINCIPAL,
                operation="maintenance.run",
                catalog=run.catalog,
                object=table,
                status=500 if status == "failed" else 200,
                request_id=f"maintenance-{run.id}",
                latency_ms=round((time.monotonic() - begun) * 1000, 3),
                reason=f"{requested}: {status}; {summary}" + (f"; {error}" if error else ""),
            )
        )


class _RunCheckpoint:
    """One job's notes in its run's row (``Job.checkpoint``): a replica that takes the run over reads them."""

    def __init__(self, store: MaintenanceStore, run_id: str, holder: str, job: str) -> None:
        self._store, self._run_id, self._holder, self._job = store, run_id, holder, job

    async def load(self) -> dict[str, Any]:
        notes = (await self._store.checkpoint(self._run_id)).get(self._job)
        return notes if isinstance(notes, dict) else {}

    async def save(self, notes: dict[str, Any]) -> None:
        every = await self._store.checkpoint(self._run_id)
        every[self._job] = notes
        if not await self._store.save_checkpoint(self._run_id, self._holder, every):
            raise RunTakenOver(f"maintenance run {self._run_id} was taken over by another replica")


class RunTakenOver(Conflict):
    """This replica's lease on the run ended and another replica holds it now: this one stops."""
