"""The maintenance operations of the management API, with their authorization.

Admins may do anything. Anyone else needs ``table.write`` on the table a run is for: to request a run (it
commits to the table and deletes its files), to read it, and to see it in a listing (a listing without a
table shows only the runs of tables the caller may write; a caller with no grant in the catalog is refused).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from irc_proxy.errors import Forbidden
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.maintenance.attention import reasons, small_files
from irc_proxy.handling.maintenance.runs import Maintenance, MaintenanceRun
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.security.access import Access
from irc_proxy.handling.security.authz import Privilege


def _table(run: MaintenanceRun) -> TableIdent:
    return TableIdent(run.namespace, run.name)


async def request_run(
    access: Access, maintenance: Maintenance, catalog: Catalog, ident: TableIdent, jobs: Sequence[str], dry_run: bool
) -> MaintenanceRun:
    """Queue a run (403 before the table is looked up). The request's audit record (by the caller:
    ``management.requestMaintenanceRun``, ``ui.maintenance.request`` from the console, the command line's) names
    the run: reason ``run <id>: <jobs>`` (`` (dry run)`` added for a dry run)."""
    access.context.audit.object = str(ident)
    if (await access.grants()).fixed:  # a run's own credential does not start more runs
        access.note("denied", "a maintenance run's credential cannot request runs")
        raise Forbidden(f"Principal {access.context.principal} is not authorized: a run credential requests no runs")
    await access.require(Privilege.TABLE_WRITE, access.table(ident))
    run = await maintenance.submit(catalog, ident, jobs, dry_run, access.context.principal)
    dry = " (dry run)" if run.dry_run else ""
    access.context.audit.reason = "; ".join(
        filter(None, [access.context.audit.reason, f"run {run.id}: {', '.join(run.jobs)}" + dry])
    )
    return run


async def read_run(access: Access, maintenance: Maintenance, catalog: Catalog, run_id: str) -> MaintenanceRun:
    run = await maintenance.get(catalog, run_id)
    access.context.audit.object = str(_table(run))
    await access.require(Privilege.TABLE_WRITE, access.table(_table(run)))
    return run


async def list_runs(
    access: Access,
    maintenance: Maintenance,
    catalog: Catalog,
    table: TableIdent | None,
    namespace: Sequence[str] | None,
    offset: int,
    limit: int,
) -> tuple[list[MaintenanceRun], int | None]:
    """One page of the runs the caller may see, newest first, and the next page's offset (None: the last)."""
    held = await access.grants()
    if table is not None:
        await access.require(Privilege.TABLE_WRITE, access.table(table))
        namespace = table.namespace
    elif not held.admin:
        await access.uses_catalog()
    found = await maintenance.page(catalog, namespace, None if table is None else table.name, offset, limit + 1)
    page = found[:limit]
    if not held.admin:
        page = [run for run in page if held.check(Privilege.TABLE_WRITE, access.table(_table(run))).allowed]
    return page, (offset + limit if len(found) > limit else None)


async def table_policy(access: Access, maintenance: Maintenance, catalog: Catalog, ident: TableIdent) -> dict[str, Any]:
    """The table's effective policy, each value with where it came from, and whether it needs attention now."""
    access.context.audit.object = str(ident)
    await access.require(Privilege.TABLE_WRITE, access.table(ident))
    loaded = await catalog.tables.load(ident)
    policy = await maintenance.policy(catalog, ident, loaded.metadata.properties)
    why = reasons(loaded.metadata, policy, int(time.time() * 1000))
    return {
        **policy.to_json(),
        "scheduled": maintenance.scheduled(catalog.name) and policy.settings.enabled,
        "estimated-small-files": small_files(loaded.metadata, policy),
        "needs-attention": why,
    }
