"""``irc-proxy maintenance run|status|list``: table maintenance runs from the command line.

The management API's operations (``/management/v1/catalogs/{catalog}/maintenance/runs``) through the same
handling code (``handling.operations.maintenance_ops`` over ``handling.maintenance.runs.Maintenance``), printing
the API's JSON bodies, audited as the API audits them (``management.requestMaintenanceRun`` …) by
``cli:<local user>``. The command line is an administrator: whoever can open the state database can do anything.

A run is queued in the state database; a running ``irc-proxy serve`` with the same state database (any replica)
claims and runs it. ``--wait`` polls until the run has finished, at most ``--timeout`` seconds (exit 3 when the
run is still queued or running then: it goes on). ``--here`` runs it in this process instead, with the worker's
own claim and lease, so it never runs twice beside a server's worker: for when no server runs (or none runs
maintenance).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from irc_proxy.cli_help import CONFIG_HELP, command, group

if TYPE_CHECKING:  # imported where used: `irc-proxy --help` must not pay for pyiceberg and the handlers
    from irc_proxy.audit import Auditor
    from irc_proxy.handling.catalog import Catalog, Catalogs
    from irc_proxy.handling.maintenance.runs import Maintenance, MaintenanceRun
    from irc_proxy.handling.security.access import Access
    from irc_proxy.handling.security.authz import Authorizer
    from irc_proxy.settings import Settings

FINISHED = ("succeeded", "failed", "skipped")
POLL_SECONDS = 0.5
EXIT_STILL_RUNNING = 3
"""``--wait`` gave up: the run had not finished within ``--timeout`` (it stays queued or running)."""
TABLE_HELP = (
    "the table: sales.orders, sales:eu:orders or sales%%1Feu%%1Forders (the namespace as everywhere in the CLI, the "
    "name last; ':' or '%%1F' split levels, then %%XX escapes are decoded; '.' only when there is no ':' or '%%')"
)
JOBS_HELP = (
    "a job to run (repeatable; in the order given): expire-snapshots, remove-orphan-files, rewrite-manifests, "
    "rewrite-data-files. Default: all four, in that order"
)


def add_commands(commands: Any) -> None:
    """``maintenance run|status|list`` under the main parser's ``commands``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    waiting = argparse.ArgumentParser(add_help=False)
    waiting.add_argument("--wait", action="store_true", help="poll until the run has finished; print it then")
    waiting.add_argument(
        "--timeout", type=float, default=600.0, metavar="SECONDS", help="stop waiting after this long (default 600)"
    )
    waiting.add_argument(
        "--here",
        action="store_true",
        help="run it in this process (no server needed), then print it; if a server took it first, or another run "
        "holds the table, wait as --wait does (and run it once the table is free)",
    )
    actions = group(
        commands,
        "maintenance",
        "request and follow table maintenance runs",
        "Expire snapshots and remove orphan files of a table (docs/maintenance.md). A run is queued in the state "
        "database and run by a running irc-proxy serve (any replica), or with --here by this process. Each action "
        "is the management API's operation, prints its JSON and is audited as cli:<user>.",
        [
            "irc-proxy maintenance run sales.orders --dry-run --wait",
            "irc-proxy maintenance list --namespace sales",
        ],
        "maintenance_command",
    )
    run = command(
        actions,
        "run",
        "queue a maintenance run of a table",
        "Queue a run of one table's maintenance jobs and print {id, status}, as POST .../maintenance/runs answers. "
        "A running irc-proxy serve with this state database runs it. With --wait, poll until it has finished and "
        "print the run (exit 1 if it failed; 3 if it is still queued or running after --timeout: it goes on). "
        "With --here, run it in this process now (claimed as a server's worker claims it: never twice).",
        [
            "irc-proxy maintenance run sales.orders --dry-run --wait --config irc-proxy.toml",
            "irc-proxy maintenance run sales:eu:orders --job expire-snapshots --catalog lake",
            "irc-proxy maintenance run sales.orders --here",
        ],
        [common, waiting],
    )
    run.add_argument("table", metavar="TABLE", help=TABLE_HELP)
    run.add_argument("--catalog", default="", help="the catalog (default: the default catalog)")
    run.add_argument("--job", action="append", default=[], metavar="JOB", help=JOBS_HELP)
    run.add_argument("--dry-run", action="store_true", help="report what the jobs would do; change nothing")
    status = command(
        actions,
        "status",
        "print a run (its status and each job's counts)",
        "Print one run as GET .../maintenance/runs/{id} answers: status (queued, running, succeeded, failed, "
        "skipped), each job's outcome and counts, times, error. The id alone finds it in any catalog.",
        [
            "irc-proxy maintenance status 3f1c0e9a2b7d4c55a1e0f6b9c8d7e6f5",
            "irc-proxy maintenance status RUN --wait",
            "irc-proxy maintenance status RUN --here",
        ],
        [common, waiting],
    )
    status.add_argument("id", metavar="RUN", help="the run's id (as maintenance run or list printed it)")
    status.add_argument("--catalog", default="", help="the catalog that holds the run (default: search them all)")
    listing = command(
        actions,
        "list",
        "print runs, newest first (JSON)",
        "Print one catalog's runs, newest first, as GET .../maintenance/runs answers: {runs, next-page-token} "
        "(pass the token to --page-token for the next page).",
        [
            "irc-proxy maintenance list --config irc-proxy.toml",
            "irc-proxy maintenance list --catalog lake --table sales.orders --limit 5",
        ],
        [common],
    )
    listing.add_argument("--catalog", default="", help="the catalog (default: the default catalog)")
    which = listing.add_mutually_exclusive_group()
    which.add_argument("--namespace", help="only runs of tables in this namespace: sales.eu, sales:eu or sales%%1Feu")
    which.add_argument("--table", help="only runs of this table (typed as for maintenance run)")
    listing.add_argument("--limit", type=int, default=100, help="at most N runs, 1 to 1000 (default 100)")
    listing.add_argument("--page-token", default="0", help="the next-page-token of a previous list")


@dataclass
class _Plan:
    """An action as the management API knows it: its operationId, its path (the audit record's object unless the
    handler names the table), and the call, given the caller's access in the catalog."""

    operation: str
    catalog: Catalog
    path: str
    call: Callable[[Access], Awaitable[Any]]


def _usage(args: argparse.Namespace, separator: str) -> str | None:
    """What is wrong with the arguments themselves (exit 2, before the state database is opened), or None."""
    from irc_proxy.errors import CatalogError
    from irc_proxy.handling.maintenance.job import JOBS
    from irc_proxy.handling.naming import typed_identifier, typed_namespace
    from irc_proxy.text import printable

    unknown = [job for job in getattr(args, "job", []) if job not in JOBS]
    if unknown:
        return f"unknown job {printable(unknown[0])}; one or more of: {', '.join(JOBS)}"
    if getattr(args, "timeout", 1) <= 0:
        return "--timeout must be more than 0 seconds"
    if args.maintenance_command == "list" and not 1 <= args.limit <= 1000:
        return "--limit must be 1 to 1000"
    if args.maintenance_command == "list" and not (args.page_token.isdigit() and len(args.page_token) <= 12):
        return "--page-token must be a next-page-token a previous list printed"
    try:
        if args.maintenance_command == "run":
            args.ident = typed_identifier(args.table, separator)
        if args.maintenance_command == "list":
            args.ident = typed_identifier(args.table, separator) if args.table else None
            args.levels = typed_namespace(args.namespace, separator) if args.namespace else None
    except CatalogError as exc:
        return printable(exc.message)
    return None


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Run one ``maintenance`` action: 0 done; 1 refused, or a waited-for run failed; 2 usage; 3 still running."""
    import asyncio
    import json

    from irc_proxy.app import build_catalogs, build_maintenance
    from irc_proxy.audit import Auditor
    from irc_proxy.cli_state import open_state
    from irc_proxy.errors import CatalogError
    from irc_proxy.handling.security.authz import Authorizer
    from irc_proxy.stores.authz import AuthzStore
    from irc_proxy.text import printable
    from irc_proxy.threads import ThreadRunner

    wrong = _usage(args, settings.server.namespace_separator)
    if wrong is not None:
        print(f"irc-proxy: {wrong}", file=sys.stderr)
        return 2
    engine = open_state(settings)  # before any catalog is built: a local one would make its database
    threads = ThreadRunner(settings.server.blocking_threads)

    async def act() -> tuple[Any, int]:
        catalogs = build_catalogs(settings, threads, engine)
        auditor = Auditor.build(settings.audit, engine, threads)
        auditor.start()
        try:
            # `--here` runs the jobs in this process: it is already a process of its own, started for this run.
            maintenance = build_maintenance(settings, engine, threads, auditor.submit, isolation="thread")
            maintenance.know({c.name: c for c in catalogs.all()})  # `--here` leaves other catalogs' storage alone
            plan = await _plan(catalogs, maintenance, args)
            # The command line is an administrator: the authorizer of `auth.mode = "none"` (no grants looked up).
            authorizer = Authorizer(AuthzStore(engine, threads), threads, enabled=False, authenticated=False)
            body = await _audited(auditor, authorizer, plan)
            if args.maintenance_command == "list" or not (args.wait or getattr(args, "here", False)):
                return body, 0
            return await _follow(maintenance, plan.catalog, body["id"], args)
        finally:
            await auditor.close()
            await catalogs.close()

    try:
        body, code = asyncio.run(act())
    except CatalogError as exc:
        print(f"irc-proxy: {printable(exc.message)}", file=sys.stderr)  # may quote stored names
        return 1
    except KeyboardInterrupt:
        print("irc-proxy: interrupted; a queued or running run goes on (maintenance status shows it)", file=sys.stderr)
        return 130
    finally:
        engine.dispose()
    print(json.dumps(body, indent=2))  # the management API's body (JSON escapes every control character)
    if code == EXIT_STILL_RUNNING:
        why = (
            "another process holds it or its table (a server's worker, or another --here) and goes on with it"
            if getattr(args, "here", False)
            else "no running irc-proxy serve with this state database has finished it (is one running, with "
            "max_concurrent_runs above 0?). It stays queued (one queued run per table): run it here with "
            f"`irc-proxy maintenance status {body['id']} --here`"
        )
        print(
            f"irc-proxy: run {body['id']} is still {body['status']} after {args.timeout:g}s: {why}; follow it with "
            f"`irc-proxy maintenance status {body['id']} --wait`",
            file=sys.stderr,
        )
    return code


async def _plan(catalogs: Catalogs, maintenance: Maintenance, args: argparse.Namespace) -> _Plan:
    """The action ``args`` ask for, as the management API would route it."""
    from irc_proxy.handling.operations import maintenance_ops

    action = args.maintenance_command
    if action == "status":
        catalog = await _holder(catalogs, maintenance, args.id, args.catalog)
        path = f"catalogs/{catalog.name}/maintenance/runs/{args.id}"

        async def read(access: Access) -> dict[str, Any]:
            return (await maintenance_ops.read_run(access, maintenance, catalog, args.id)).to_json()

        return _Plan("getMaintenanceRun", catalog, path, read)
    catalog = catalogs.get(args.catalog or None)
    path = f"catalogs/{catalog.name}/maintenance/runs"
    if action == "run":

        async def request(access: Access) -> dict[str, Any]:
            jobs = args.job or list(_all_jobs())
            run = await maintenance_ops.request_run(access, maintenance, catalog, args.ident, jobs, args.dry_run)
            return {"id": run.id, "status": run.status}

        return _Plan("requestMaintenanceRun", catalog, path, request)

    async def page(access: Access) -> dict[str, Any]:
        runs, following = await maintenance_ops.list_runs(
            access, maintenance, catalog, args.ident, args.levels, int(args.page_token), args.limit
        )
        body: dict[str, Any] = {"runs": [run.to_json() for run in runs]}
        if following is not None:
            body["next-page-token"] = str(following)
        return body

    return _Plan("listMaintenanceRuns", catalog, path, page)


def _all_jobs() -> tuple[str, ...]:
    from irc_proxy.handling.maintenance.job import JOBS

    return JOBS


async def _holder(catalogs: Catalogs, maintenance: Maintenance, run_id: str, name: str) -> Catalog:
    """The catalog that holds run ``run_id``: ``name``, or the one whose runs include it (ids are unique)."""
    if name:
        return catalogs.get(name)
    for catalog in catalogs.all():
        if await maintenance.store.get(catalog.name, run_id) is not None:
            return catalog
    return catalogs.get(None)  # not found anywhere: the default catalog's handler answers NotFound


async def _audited(auditor: Auditor, authorizer: Authorizer, plan: _Plan) -> Any:
    """Run ``plan`` as the command line's administrator, recorded as the management API records the operation
    (``management.<operationId>``, by ``cli:<local user>``; a refusal too, with the status the API would answer)."""
    import time
    import uuid

    from irc_proxy.audit import AuditRecord, now
    from irc_proxy.cli_trash import cli_principal
    from irc_proxy.errors import CatalogError, answer
    from irc_proxy.handling.security.access import Access
    from irc_proxy.handling.security.authz import Grants
    from irc_proxy.handling.security.context import RequestContext

    context = RequestContext(request_id=f"cli-{uuid.uuid4().hex}", principal=cli_principal())
    context.grants = Grants((), admin=True)
    context.audit.note("allowed", "command line")
    access = Access(context, authorizer, plan.catalog.name)
    started, status = time.monotonic(), 202 if plan.operation == "requestMaintenanceRun" else 200
    try:
        return await plan.call(access)
    except CatalogError as exc:
        status = (answer(exc) or (500, ""))[0]
        raise
    finally:
        auditor.submit(
            AuditRecord(
                time=now(),
                principal=context.principal,
                operation=f"management.{plan.operation}",
                catalog=plan.catalog.name,
                object=context.audit.object or plan.path,
                status=status,
                request_id=context.request_id,
                latency_ms=round((time.monotonic() - started) * 1000, 3),
                decision=context.audit.decision,
                reason=context.audit.reason,
            )
        )


async def _follow(maintenance: Maintenance, catalog: Catalog, run_id: str, args: argparse.Namespace) -> tuple[Any, int]:
    """Poll until the run has finished or ``--timeout`` passed; with ``--here``, run it in this process whenever it
    can be claimed (at once, unless a worker took it first or another run holds its table). The run as GET answers
    it, and the exit code."""
    import asyncio
    import time

    here = getattr(args, "here", False)
    deadline = time.monotonic() + args.timeout
    while True:
        run: MaintenanceRun = await maintenance.get(catalog, run_id)
        if run.status in FINISHED:
            return run.to_json(), 1 if run.status == "failed" else 0
        if here and await maintenance.run_here(catalog, run_id):  # claimable: queued, or its lease ran out
            continue
        if time.monotonic() >= deadline:
            return run.to_json(), EXIT_STILL_RUNNING
        await asyncio.sleep(min(POLL_SECONDS, max(deadline - time.monotonic(), 0.01)))
