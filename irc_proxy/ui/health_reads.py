"""What the console's maintenance pages read, bounded: one table's current manifests (its health panel) and the
current snapshot summaries of many tables (the catalog's "tables needing attention").

One table: the manifests of its current snapshot are read through the same confined, cached source as scan
planning and the preview (``ui.preview.open_table``: only files under the table's and the catalog's allowed
locations), in a console worker slot within the page's budget, at most ``MAX_ENTRIES`` live entries; past that
the numbers are lower bounds and the page says so. The numbers are ``handling.maintenance.health``'s.

Both judge the tables as the scheduler and the management API do: ``attention.reasons`` under each table's resolved
maintenance policy (``Maintenance.policy_or_own``: its catalog's settings, its namespaces' and its own properties).
The survey reads each namespace's properties once (``policy.OncePerNamespace``), so resolving the policies of its
tables adds at most one state-database read per namespace level it reaches, never one per table.

Many tables: no manifest is read. The catalog's namespaces are walked breadth first through the caller's own
listings (``ui.listings``, as the search does), and each listed table the caller may load (``loadTable``) is
loaded once for its current snapshot's summary; at most ``server.ui_search_max_entries`` listing entries and
``MAX_TABLES_LOADED`` tables, within the page's budget, one such page per principal at a time (``budget.turn``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from pyiceberg.manifest import DataFile
from starlette.requests import Request

from irc_proxy.errors import CatalogError, Forbidden
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.maintenance.attention import reasons
from irc_proxy.handling.maintenance.health import SummaryHealth, TableHealth, summary_health, table_health
from irc_proxy.handling.maintenance.policy import OncePerNamespace, Policy
from irc_proxy.handling.maintenance.runs import Maintenance
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.operations import policy
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.http import access, parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.ui import budget, listings
from irc_proxy.ui.budget import Deadline
from irc_proxy.ui.preview import OpenedTable

MAX_ENTRIES = 200_000
"""Live manifest entries one health panel counts at most."""
MAX_TABLES_LOADED = 500
"""Tables one "needing attention" page loads at most."""
LISTING_PAGE = 1000


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Measured:
    """One table's health panel: the numbers, the policy they were judged by, why the table needs attention, and
    what stopped the count early."""

    health: TableHealth
    policy: Policy
    reasons: list[str]
    notes: list[str] = field(default_factory=list)


def measure(table: OpenedTable, policy: Policy, due: Deadline) -> Measured:
    """Count the live files of the table's current snapshot and judge them under ``policy`` (blocking: a console
    worker slot calls it). The entries are counted as they are read, manifest by manifest, never all held at
    once."""
    metadata, notes = table.metadata, []
    snapshot = metadata.current_snapshot()
    read = {"manifests": 0, "files": 0}

    def files() -> Iterator[DataFile]:
        if snapshot is None or not snapshot.manifest_list:
            return
        try:
            for manifest in table.manifests.manifest_list(snapshot.manifest_list):
                due.check()
                entries = table.manifests.entries(manifest)
                if read["files"] + len(entries) > MAX_ENTRIES:
                    notes.append(f"Counted {read['files']:,} files only ({MAX_ENTRIES:,} at most): lower bounds.")
                    return
                read["manifests"] += 1
                read["files"] += len(entries)
                yield from (entry.data_file for entry in entries)
        except CatalogError as exc:  # outside the table's locations, missing, unreadable: said, not guessed
            notes.append(f"The count stopped: {exc.message}")

    when = now_ms()
    counted = table_health(metadata, files(), when, policy)
    health = replace(counted, manifests=read["manifests"], complete=not notes)
    return Measured(health, policy, reasons(metadata, policy, when, health), notes)


@dataclass(frozen=True)
class Flagged:
    """A table needing attention, with its cheap numbers and the reasons."""

    ident: TableIdent
    health: SummaryHealth
    reasons: list[str]


@dataclass
class Survey:
    flagged: list[Flagged] = field(default_factory=list)
    looked_at: int = 0
    """Listing entries looked at."""
    loaded: int = 0
    stopped: str = ""
    failed: int = 0
    failure: str = ""
    namespaces_read: int = 0
    """Namespaces whose properties were read for the tables' policies (each once)."""


async def _may_load(request: Request, catalog: Catalog, ident: TableIdent) -> bool:
    try:
        requested = policy.Requested(namespace=ident.namespace, name=ident.name)
        await policy.authorize(access.of(request), catalog, "loadTable", requested)
    except Forbidden:
        return False
    return True


async def survey(request: Request, catalog: Catalog) -> Survey:
    """The tables of ``catalog`` the caller may see and load that need attention (see the module)."""
    state = app_state(request)
    found, cap = Survey(), state.settings.server.ui_search_max_entries
    judge = Judge(state.maintenance, catalog, OncePerNamespace(catalog.namespaces.load))
    due, context = budget.deadline(request), parsing.context(request)
    queue: deque[Namespace] = deque([()])

    def stop() -> bool:
        if found.looked_at >= cap:
            found.stopped = f"it looked at {cap:,} entries (server.ui_search_max_entries)"
        elif found.loaded >= MAX_TABLES_LOADED:
            found.stopped = f"it loaded {MAX_TABLES_LOADED:,} tables"
        elif due.left() <= 0:
            found.stopped = f"it took {due.seconds:g} s (server.ui_page_budget_seconds)"
        return bool(found.stopped)

    while queue and not found.stopped:
        namespace = queue.popleft()
        for operation in ("listNamespaces", "listTables") if namespace else ("listNamespaces",):
            token: str | None = None
            while not stop():
                limit = min(LISTING_PAGE, cap - found.looked_at)
                try:
                    listed = await listings.visible_page(request, catalog, operation, namespace, token, limit)
                except CatalogError as exc:  # dropped meanwhile, or a remote catalog failing: go on
                    found.failed, found.failure, found.looked_at = found.failed + 1, exc.message, found.looked_at + 1
                    break
                if listed is None:
                    if not namespace:
                        raise Forbidden(f"Principal {context.principal} may not list {catalog.name}")
                    break
                found.looked_at += max(1, len(listed.items[:limit]))
                for item in listed.items[:limit]:
                    if operation == "listNamespaces":
                        queue.append(item)
                    elif not stop() and await _may_load(request, catalog, item):
                        await judge.check(context, item, found)
                token = listed.next_token
                if not token:
                    break
    found.flagged.sort(key=lambda f: (-len(f.reasons), str(f.ident)))
    found.namespaces_read = judge.namespaces.reads
    return found


@dataclass(frozen=True)
class Judge:
    """Judges the survey's tables, each under its own policy, the namespaces' properties read once."""

    maintenance: Maintenance
    catalog: Catalog
    namespaces: OncePerNamespace

    async def check(self, context: RequestContext, ident: TableIdent, found: Survey) -> None:
        found.loaded += 1
        try:
            metadata = (await self.catalog.load_table(context, ident)).metadata
        except CatalogError as exc:  # dropped meanwhile, unreadable metadata: counted, the survey goes on
            found.failed, found.failure = found.failed + 1, exc.message
            return
        policy = await self.maintenance.policy_or_own(self.catalog, ident, metadata.properties, self.namespaces)
        when = now_ms()
        why = reasons(metadata, policy, when)
        if why:
            found.flagged.append(Flagged(ident, summary_health(metadata, when, policy), why))
