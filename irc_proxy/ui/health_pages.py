"""The console's maintenance pages: a table's health, a catalog's tables needing attention, one maintenance run,
and the form that requests a run.

Who sees what: the health panel needs ``loadTable`` (``table.read``), like the table's page; its last runs and
the request form need ``table.write`` on the table, as the management API's runs do
(``handling.operations.maintenance_ops`` decides both, so the console shows nothing the API would refuse). The
attention page shows only tables the caller's listings show and it may load. The request is a POST with the
console's CSRF token (``ui.session.check_csrf``), audited as ``ui.maintenance.request`` by the caller with the
run's id (the same reason as ``management.requestMaintenanceRun``), then Post/Redirect/Get to the run's page.
Reads are bounded (``ui.health_reads``); nothing here deletes or commits: the run is queued for the worker.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from irc_proxy.handling.maintenance.runs import JOBS, Maintenance, MaintenanceRun
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.operations import maintenance_ops, policy
from irc_proxy.handling.security.authz import Privilege
from irc_proxy.http import access, parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.ui import budget, health_reads, preview
from irc_proxy.ui.budget import Deadline
from irc_proxy.ui.links import ns_path, segment
from irc_proxy.ui.pages import SECURITY_HEADERS, form_fields, page, render, render_bounded
from irc_proxy.ui.session import UI_PREFIX, check_csrf

RUNS_SHOWN = 10
"""The table's latest runs on its health page."""
CATALOG = f"{UI_PREFIX}/catalogs/{{prefix}}"
TABLE = f"{CATALOG}/namespaces/{{namespace}}/tables/{{table}}"


def _maintenance(request: Request) -> Maintenance:
    return app_state(request).maintenance


def run_url(catalog: str, run_id: str) -> str:
    return f"{UI_PREFIX}/catalogs/{segment(catalog)}/maintenance/runs/{segment(run_id)}"


async def _last_runs(request: Request, ident: TableIdent) -> list[MaintenanceRun] | None:
    """The table's latest runs; None when the caller may not see them (no ``table.write``)."""
    catalog, checks = parsing.catalog(request), access.of(request)
    held = await checks.grants()
    if not held.check(Privilege.TABLE_WRITE, checks.table(ident)).allowed:
        return None  # asked without noting a refusal: the page itself is allowed (loadTable), its record stays so
    runs, _ = await maintenance_ops.list_runs(checks, _maintenance(request), catalog, ident, None, 0, RUNS_SHOWN)
    return runs


@page("table.health")
async def health_page(request: Request) -> Response:
    """A table's health: files, small files, average size, delete files, snapshots, why it needs attention under
    its maintenance policy (the scheduler's judge, ``attention.reasons``), its latest maintenance runs and the
    request form (those two for ``table.write`` only)."""
    catalog, ident = parsing.catalog(request), parsing.table_param(request)
    requested = policy.Requested(namespace=ident.namespace, name=ident.name)
    await policy.authorize(access.of(request), catalog, "loadTable", requested)
    runs = await _last_runs(request, ident)
    budget.deadline(request)
    table = await preview.open_table(request, catalog, ident)
    table_policy = await _maintenance(request).policy_or_own(catalog, ident, table.metadata.properties)

    def build(due: Deadline) -> dict[str, Any]:
        return {"measured": health_reads.measure(table, table_policy, due)}

    values = {"catalog": catalog.name, "ident": ident, "namespace": ident.namespace, "runs": runs, "jobs": JOBS}
    return await render_bounded(request, "health.html", build, **values)


@page("maintenance.request")
async def request_run(request: Request) -> Response:
    """Queue a run of the jobs ticked on the health page (``table.write``), then show the run."""
    catalog, ident = parsing.catalog(request), parsing.table_param(request)
    form = await form_fields(request)
    check_csrf(request, form.get("csrf", ""))
    jobs = [job for job in JOBS if form.get(f"job-{job}") == "yes"]
    checks = access.of(request)
    run = await maintenance_ops.request_run(
        checks, _maintenance(request), catalog, ident, jobs, form.get("dry_run") == "yes"
    )
    return RedirectResponse(run_url(catalog.name, run.id), status_code=303, headers=SECURITY_HEADERS)


@page("maintenance.run")
async def run_page(request: Request) -> Response:
    """One run: status, who asked, when, each job's outcome and counts (``table.write`` on its table)."""
    catalog = parsing.catalog(request)
    run = await maintenance_ops.read_run(access.of(request), _maintenance(request), catalog, request.path_params["run"])
    ident = TableIdent(run.namespace, run.name)
    table_url = f"{UI_PREFIX}/catalogs/{segment(catalog.name)}/namespaces/{ns_path(run.namespace)}"
    table_url += f"/tables/{segment(run.name)}"
    return render(
        request, "maintenance_run.html", catalog=catalog.name, namespace=(), run=run, ident=ident, table_url=table_url
    )


@page("attention")
async def attention_page(request: Request) -> Response:
    """The catalog's tables needing attention, from their current snapshot summaries (``ui.health_reads``)."""
    catalog = parsing.catalog(request)
    budget.deadline(request)  # the wait for the caller's turn counts against the page's budget
    async with budget.turn(request):
        found = await health_reads.survey(request, catalog)
    return render(request, "attention.html", catalog=catalog.name, namespace=(), found=found)


HEALTH_UI_ROUTES: list[BaseRoute] = [
    Route(f"{TABLE}/health", health_page, methods=["GET"]),
    Route(f"{TABLE}/maintenance", request_run, methods=["POST"]),
    Route(f"{CATALOG}/maintenance/runs/{{run}}", run_page, methods=["GET"]),
    Route(f"{CATALOG}/attention", attention_page, methods=["GET"]),
]
