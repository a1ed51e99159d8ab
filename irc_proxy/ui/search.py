"""The console's search over one catalog's namespaces, tables and views: a GET form, answered on the server.

What it looks at is exactly what the listings show the caller: it walks the catalog breadth first through
the same listing operations as the namespace pages (``listNamespaces``, ``listTables``, ``listViews``, each
authorized and filtered for the caller as the REST API's listings are, forwarded to a remote catalog where
the catalog forwards them), so a principal finds nothing it could not have found by clicking. A name
matches when it contains the query, ignoring case (an object's own name: a namespace's last level, a
table's or view's name).

Its cost is bounded: the query is at most ``MAX_QUERY_CHARS`` characters; one search looks at no more than
``server.ui_search_max_entries`` entries and stops at the page's time budget (``ui.budget``), saying it
stopped early; a principal runs one search or heavy page at a time (``budget.turn``); it stops as soon as
it has the window of matches asked for (``?offset=``, 100 at a time, ``ui.windows.SIZE``) and one more.
A GET changes nothing, so a cross-site link to it costs one bounded search.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urlencode

from starlette.requests import Request

from irc_proxy.errors import BadRequest, CatalogError, Forbidden
from irc_proxy.handling.catalog import LIST_VIEWS, Catalog
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.http import parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.ui import budget, listings, windows

MAX_QUERY_CHARS = 200
"""Longest query (characters); a longer one is a 400 page."""
LISTING_PAGE = 1000
"""Entries asked for per listing call while searching."""
_OPERATIONS = ("listNamespaces", "listTables", "listViews")


@dataclass(frozen=True)
class Match:
    """One object found: ``kind`` is ``namespace``, ``table`` or ``view``."""

    kind: str
    namespace: Namespace
    name: str = ""


@dataclass
class Found:
    """A window of matches, from ``offset``; ``more``: there are matches after it; ``stopped``: the search
    stopped early (its entry cap or time budget) and more may exist."""

    query: str
    matches: list[Match] = field(default_factory=list)
    offset: int = 0
    looked_at: int = 0
    more: bool = False
    stopped: str = ""
    failed: int = 0
    """Listings that failed (a namespace dropped meanwhile, a remote catalog failing); the last one's message
    is ``failure``."""
    failure: str = ""
    next_href: str | None = None
    first_href: str | None = None


def query_of(request: Request) -> str:
    """The ``q`` parameter, trimmed; BadRequest when longer than ``MAX_QUERY_CHARS``."""
    text = request.query_params.get("q", "").strip()
    if len(text) > MAX_QUERY_CHARS:
        raise BadRequest(f"A search is at most {MAX_QUERY_CHARS} characters")
    return text


def _match(operation: str, item: object) -> Match:
    if operation == "listNamespaces":
        assert isinstance(item, tuple)
        return Match("namespace", item)
    assert isinstance(item, TableIdent)
    return Match("table" if operation == "listTables" else "view", item.namespace, item.name)


async def search(request: Request, catalog: Catalog, text: str) -> Found:
    """The window of ``text``'s matches that ``?offset=`` asks for (see the module docstring)."""
    query = {k: v for k, v in request.query_params.items() if k in ("q", "offset")}
    offset = windows.offset_of(query, "offset")
    found = Found(text, offset=offset)
    needle, cap, wanted = (
        text.casefold(),
        app_state(request).settings.server.ui_search_max_entries,
        offset + windows.SIZE,
    )
    due = budget.deadline(request)
    matched: list[Match] = []
    queue: deque[Namespace] = deque([()])
    await catalog.discover(parsing.context(request))  # a remote catalog: what it serves (once)
    views = catalog.serves(LIST_VIEWS)
    while queue and len(matched) <= wanted and not found.stopped:
        namespace = queue.popleft()
        for operation in _OPERATIONS if namespace else _OPERATIONS[:1]:
            if operation == "listViews" and not views:
                continue
            token: str | None = None
            while not found.stopped:
                if found.looked_at >= cap:
                    found.stopped = f"it looked at {cap:,} entries (server.ui_search_max_entries)"
                    break
                if due.left() <= 0:
                    found.stopped = f"it took {due.seconds:g} s (server.ui_page_budget_seconds)"
                    break
                try:
                    limit = min(LISTING_PAGE, cap - found.looked_at)  # the cap holds exactly
                    listed = await listings.visible_page(request, catalog, operation, namespace, token, limit)
                except CatalogError as exc:  # dropped meanwhile, or a remote catalog failing: go on with the rest
                    found.failed += 1
                    found.looked_at += 1  # a failed listing costs too
                    found.failure = exc.message
                    break
                if listed is None:
                    if not namespace:
                        raise Forbidden(f"Principal {parsing.context(request).principal} may not list {catalog.name}")
                    break
                found.looked_at += max(1, len(listed.items[:limit]))
                for item in listed.items[:limit]:  # a remote catalog may answer more than asked
                    match = _match(operation, item)
                    if operation == "listNamespaces":
                        queue.append(match.namespace)
                    own = match.name or (match.namespace[-1] if match.namespace else "")
                    if needle in own.casefold():
                        matched.append(match)
                token = listed.next_token
                if not token:
                    break
    found.matches = matched[offset:wanted]
    found.more = len(matched) > wanted
    if found.more:
        found.next_href = "?" + urlencode({"q": text, "offset": str(wanted)})
    if offset:
        found.first_href = "?" + urlencode({"q": text})
    return found
