"""What the console's maintenance pages read, bounded: one table's current manifests (its health panel) and the
current snapshot summaries of many tables (the catalog's "tables needing attention").

One table: the manifests of its current snapshot are read through the same confined, cached source as scan
planning and the preview (``ui.preview.open_table``: only files under the table's and the catalog's allowed
locations), in a console worker slot within the page's budget, at most ``MAX_ENTRIES`` live entries; past that
the numbers are lower bounds and the page says so. The numbers are ``handling.maintenance.health``'s.

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
from irc_proxy.handling.maintenance.health import SummaryHealth, TableHealth, attention, summary_health, table_health
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
    """One table's health panel: the numbers, why it needs attention, and what stopped the count early."""

    health: TableHealth
    reasons: list[str]
    notes: list[str] = field(default_factory=list)


def measure(table: OpenedTable, due: Deadline) -> Measured:
    """Count the live files of the table's current snapshot (blocking: a console worker slot calls it). The
    entries are counted as they are read, manifest by manifest, never all held at once."""
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

    counted = table_health(metadata, files(), now_ms())
    health = replace(counted, manifests=read["manifests"], complete=not notes)
    return Measured(health, attention(health), notes)


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


async def _may_load(request: Request, catalog: Catalog, ident: TableIdent) -> bool:
    try:
        requested = policy.Requested(namespace=ident.namespace, name=ident.name)
        await policy.authorize(access.of(request), catalog, "loadTable", requested)
    except Forbidden:
        return False
    return True


async def survey(request: Request, catalog: Catalog) -> Survey:
    """The tables of ``catalog`` the caller may see and load that need attention (see the module)."""
    found, cap = Survey(), app_state(request).settings.server.ui_search_max_entries
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
                        await _check(catalog, context, item, found)
                token = listed.next_token
                if not token:
                    break
    found.flagged.sort(key=lambda f: (-len(f.reasons), str(f.ident)))
    return found


async def _check(catalog: Catalog, context: RequestContext, ident: TableIdent, found: Survey) -> None:
    found.loaded += 1
    try:
        loaded = await catalog.load_table(context, ident)
    except CatalogError as exc:  # dropped meanwhile, unreadable metadata: counted, the survey goes on
        found.failed, found.failure = found.failed + 1, exc.message
        return
    health = summary_health(loaded.metadata, now_ms())
    reasons = attention(health)
    if reasons:
        found.flagged.append(Flagged(ident, health, reasons))
