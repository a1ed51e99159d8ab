"""The console's pages: each authorizes like the REST operation it stands for, then renders a template.

A page is refused (403) or missing (404) with an error page, never a stack trace; a listing shows only
what the caller may see (the REST API's filtered listings). Nothing secret is rendered: no credentials,
no tokens, no file contents beyond the metadata a ``loadTable``/``loadView`` caller already receives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from irc_proxy.errors import BadRequest, CatalogError, Forbidden, TokenRequestError
from irc_proxy.handling.catalog import LIST_VIEWS, Catalog
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.operations import namespace_ops, policy
from irc_proxy.http import access, parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.http.errors import classify
from irc_proxy.numbers import is_number
from irc_proxy.ui import audit_sampling, budget, drawing, links, listings, models, preview, search, windows
from irc_proxy.ui.budget import Deadline
from irc_proxy.ui.links import ns_path
from irc_proxy.ui.session import (
    UI_PREFIX,
    check_csrf,
    csrf_token,
    end_session,
    remember_csrf,
    safe_next,
    set_session,
)

PAGE_SIZE = 100
PING_SECONDS = 2.0
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
Page = Callable[[Request], Awaitable[Response]]


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("irc_proxy.ui"), autoescape=select_autoescape(default=True))
    env.globals |= {"ns_path": ns_path, "quote": links.segment, "moment": models.moment}
    env.globals |= {"duration": models.duration, "file_name": models.file_name, "size": models.size_text}
    env.globals |= {"duration_ms": models.duration_ms}
    env.filters["cut"] = windows.cut
    return env


TEMPLATES = Jinja2Templates(env=_environment())


def _common(request: Request, values: dict[str, Any]) -> dict[str, Any]:
    context = parsing.context(request)
    values |= {"principal": context.principal, "csrf": csrf_token(request), "prefix": UI_PREFIX}
    values.setdefault("is_admin", context.grants is not None and context.grants.admin)
    values.setdefault("auth_mode", app_state(request).settings.auth.mode)
    return values


def render(request: Request, template: str, code: int = 200, **values: Any) -> Response:
    """The page, with the security headers and (for pages with forms) the CSRF cookie."""
    values = _common(request, values)
    response = TEMPLATES.TemplateResponse(request, template, values, status_code=code, headers=SECURITY_HEADERS)
    remember_csrf(response, request)
    return response


async def render_bounded(
    request: Request, template: str, build: Callable[[Deadline], Mapping[str, Any]], **values: Any
) -> Response:
    """A page whose values (``build``) and template may be costly: both run in a worker thread within the
    page's time budget (``ui.budget``; past it, PageTooCostly: a 503 error page)."""
    values = _common(request, values)

    def drawn(due: Deadline) -> str:
        html = TEMPLATES.env.get_template(template).render(values | dict(build(due)))
        due.check()
        return html

    response = HTMLResponse(await budget.run(request, drawn), headers=SECURITY_HEADERS)
    remember_csrf(response, request)
    return response


def page(operation: str) -> Callable[[Page], Page]:
    """Audit the page as ``ui.<operation>`` under the catalog and object it shows (reads sampled:
    ``ui.audit_sampling``) and answer a refusal or a missing object with an error page."""

    def wrap(handler: Page) -> Page:
        async def endpoint(request: Request) -> Response:
            links.unmarked(request.path_params)
            parsing.context(request).audit.name(f"ui.{operation}", request.path_params)
            try:
                await access.of(request, catalog="").grants()  # looked up once: the header shows admins their pages
                response = await handler(request)
            except CatalogError as exc:
                status, kind = classify(exc)
                response = render(request, "error.html", status, status=status, kind=kind, message=exc.message)
            audit_sampling.sample(request, response.status_code)
            return response

        endpoint.__name__ = handler.__name__
        return endpoint

    return wrap


async def form_fields(request: Request) -> dict[str, str]:
    """A urlencoded form (the console posts nothing else; the body size is bounded by the middleware)."""
    if not await request.body():
        return {}
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise BadRequest("Expected a form (application/x-www-form-urlencoded)")
    try:
        fields = parse_qs((await request.body()).decode(), keep_blank_values=True)
    except UnicodeDecodeError:
        raise BadRequest("The form is not valid UTF-8") from None
    return {key: values[0] for key, values in fields.items()}


# Signing in ------------------------------------------------------------------------------------------------
async def login_form(request: Request) -> Response:
    parsing.context(request).audit.name("ui.login")
    return _login_page(request, 200, safe_next(request.query_params.get("next", "")), None)


def _login_page(request: Request, code: int, target: str, error: str | None) -> Response:
    """The sign-in form; with ``auth.mode = "oidc"`` it links to the provider named in ``auth.oidc``."""
    oidc = app_state(request).settings.auth.oidc
    return render(request, "login.html", code, next=target, error=error, oidc=oidc)


async def login(request: Request) -> Response:
    """``oauth2``: the client-credentials grant; the token becomes the session cookie."""
    parsing.context(request).audit.name("ui.login")
    form = await form_fields(request)
    target = safe_next(form.get("next", ""))
    try:
        check_csrf(request, str(form.get("csrf", "")))
        service = app_state(request).token_service
        if service is None:
            raise BadRequest('Signing in with a client id and secret needs auth.mode = "oauth2"')
        client_id = str(form.get("client_id", ""))
        address = request.client.host if request.client else ""
        issued = await service.issue("client_credentials", client_id, str(form.get("client_secret", "")), "", address)
    except TokenRequestError as exc:
        parsing.context(request).audit.note("denied", f"{exc.error}: {exc.description}")
        return _login_page(request, 401, target, "Unknown client id or wrong secret")
    except CatalogError as exc:
        status, _ = classify(exc)
        return _login_page(request, status, target, exc.message)
    parsing.context(request).principal = issued.principal
    response = RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)
    set_session(response, request, str(issued.body["access_token"]), int(issued.body.get("expires_in", 3600)))
    return response


async def logout(request: Request) -> Response:
    parsing.context(request).audit.name("ui.logout")
    try:
        check_csrf(request, (await form_fields(request)).get("csrf", ""))
    except CatalogError as exc:
        status, kind = classify(exc)
        return render(request, "error.html", status, status=status, kind=kind, message=exc.message)
    response = RedirectResponse(f"{UI_PREFIX}/login", status_code=303, headers=SECURITY_HEADERS)
    await end_session(response, request)  # the token is revoked on every replica, not just forgotten
    return response


# Browsing --------------------------------------------------------------------------------------------------
async def _health(catalog: Catalog) -> str:
    try:
        await asyncio.wait_for(catalog.backend.ping(), PING_SECONDS)
    except (CatalogError, TimeoutError):
        return "unreachable"
    return "ok"


@page("catalogs")
async def catalogs_page(request: Request) -> Response:
    """Every catalog the caller has a grant in: kind, warehouse and whether its backend answers."""
    settings = app_state(request).settings
    shown = []
    for catalog in parsing.catalogs(request).all():
        held = await access.of(request, catalog.name).grants()
        if held.admin or held.uses_catalog(catalog.name):
            shown.append(catalog)
    health = await asyncio.gather(*(_health(catalog) for catalog in shown))
    rows = [
        {"name": c.name, "kind": settings.catalogs[c.name].kind, "warehouse": c.backend.warehouse, "health": h}
        for c, h in zip(shown, health, strict=True)
    ]
    return render(request, "catalogs.html", catalogs=rows)


async def _listed(request: Request, catalog: Catalog, operation: str, namespace: Namespace, key: str) -> Any:
    """One page of a listing the caller may see, from the page token in query parameter ``key``; None when refused."""
    return await listings.visible_page(request, catalog, operation, namespace, request.query_params.get(key), PAGE_SIZE)


@page("namespace")
async def namespace_page(request: Request) -> Response:
    """A catalog's top level or one namespace: its properties, child namespaces, tables and views."""
    catalog = parsing.catalog(request)
    namespace = parsing.namespace_param(request) if "namespace" in request.path_params else ()
    properties = None
    if namespace:
        try:
            requested = policy.Requested(namespace=namespace)
            await policy.authorize(access.of(request), catalog, "loadNamespaceMetadata", requested)
            properties = await namespace_ops.load_namespace(catalog, namespace)
        except Forbidden:
            properties = None
    children = await _listed(request, catalog, "listNamespaces", namespace, "namespaces")
    tables = await _listed(request, catalog, "listTables", namespace, "tables") if namespace else None
    views = None
    await catalog.discover(parsing.context(request))  # a remote catalog: what it serves (once)
    if namespace and catalog.serves(LIST_VIEWS):  # views listed here or by its remote catalog
        views = await _listed(request, catalog, "listViews", namespace, "views")
    if properties is None and children is None and tables is None and views is None:
        who = parsing.context(request).principal
        raise Forbidden(f"Principal {who} may not see {'.'.join(namespace) or 'catalog ' + catalog.name}")
    query = drawing.lists_of(request.query_params, ("properties",))
    values = {"children": children, "tables": tables, "views": views, "catalog": catalog.name, "namespace": namespace}
    if properties is None or len(properties) <= windows.SIZE:
        shown = None if properties is None else windows.of_mapping(properties, query, "properties")
        return render(request, "namespace.html", properties=shown, **values)
    many = properties  # a window of a long map is cut in a worker thread
    return await render_bounded(
        request, "namespace.html", lambda due: {"properties": windows.of_mapping(many, query, "properties")}, **values
    )


@page("table")
async def table_page(request: Request) -> Response:
    """A table: schema and its history, partitioning, sort orders, refs, metadata log and charts, each long
    list a window (``ui.windows``), built off the event loop within the page's budget (``ui.budget``)."""
    catalog, ident = parsing.catalog(request), parsing.table_param(request)
    query = drawing.lists_of(request.query_params, drawing.TABLE_LISTS)
    await _authorize(request, catalog, "loadTable", ident)
    budget.deadline(request)  # the budget counts from here: loading is bounded by the REST API's own limits
    context = parsing.context(request)
    location = await catalog.current_location(context, ident)
    key = drawing.table_key(catalog.name, str(ident), location, query) if location else None
    values = {"catalog": catalog.name, "ident": ident, "location": location}
    drawn = drawing.drawn_table(key) if key else None
    if drawn is not None:  # shown before: the metadata file is not read (nor parsed) again
        return await render_bounded(request, "table.html", lambda due: drawn, **values)
    loaded = await catalog.load_table(context, ident)
    values["location"], metadata = loaded.location, loaded.metadata
    if location and values["location"] != location:  # committed meanwhile: cache under what is shown
        key = drawing.table_key(catalog.name, str(ident), str(values["location"]), query)

    def build(due: Deadline) -> dict[str, Any]:
        return drawing.table_values(key if values["location"] else None, metadata, query, due.check)

    return await render_bounded(request, "table.html", build, **values)


@page("view")
async def view_page(request: Request) -> Response:
    """A view: the current SQL per dialect, its versions (who, when) and the diff of two of them (near-linear,
    bounded and cached: ``ui.diffing``), built off the event loop within the page's budget."""
    catalog, ident = parsing.catalog(request), parsing.table_param(request, "view")
    query = drawing.lists_of(request.query_params, drawing.VIEW_LISTS)
    await _authorize(request, catalog, "loadView", ident)
    budget.deadline(request)
    loaded = await catalog.load_view(parsing.context(request), ident)
    location, metadata = loaded.location, loaded.metadata
    ids = {v.version_id for v in metadata.versions}
    old, new = _version_pair(request, ids, metadata.current_version_id)
    authors = await catalog.require_views().version_authors(ident) if loaded.stored_here else {}

    def build(due: Deadline) -> dict[str, Any]:
        return drawing.view_values(metadata, old, new, query, due.check)

    values = {"catalog": catalog.name, "ident": ident, "location": location, "metadata": metadata}
    return await render_bounded(request, "view.html", build, authors=authors, old=old, new=new, **values)


def _version_pair(request: Request, ids: set[int], current: int) -> tuple[int | None, int | None]:
    """The versions to compare: ``?from=&to=``, else the current one against the one before it."""
    query = request.query_params
    if "from" in query or "to" in query:
        old, new = query.get("from", ""), query.get("to", "")
        if not (is_number(old, 9) and is_number(new, 9)):
            raise BadRequest("Compare two versions: from and to must be version ids")
        if int(old) not in ids or int(new) not in ids:
            raise BadRequest(f"No such view version to compare; the newest versions are {sorted(ids)[-20:]}")
        return int(old), int(new)
    before = max((i for i in ids if i < current), default=None)
    return (before, current) if before is not None else (None, None)


@page("search")
async def search_page(request: Request) -> Response:
    """A catalog's namespaces, tables and views whose names contain ``?q=`` (``ui.search``: what the caller's
    listings show, bounded)."""
    catalog = parsing.catalog(request)
    text = search.query_of(request)
    found = None
    if text:
        budget.deadline(request)  # the wait for the caller's turn counts against the page's budget
        async with budget.turn(request):
            found = await search.search(request, catalog, text)
    values: dict[str, Any] = {"catalog": catalog.name, "namespace": (), "q": text, "found": found}
    return render(request, "search.html", search_max_chars=search.MAX_QUERY_CHARS, **values)


@page("table.preview")
async def preview_page(request: Request) -> Response:
    """Up to ``server.ui_preview_rows`` rows of a table's current snapshot (``ui.preview``), for a caller who
    may plan a scan of it (``table.read``); read in a console worker slot within the page's budget."""
    catalog, ident = parsing.catalog(request), parsing.table_param(request)
    await _authorize(request, catalog, "planTableScan", ident)
    server = app_state(request).settings.server
    values: dict[str, Any] = {"catalog": catalog.name, "ident": ident, "rows_asked": server.ui_preview_rows}
    if server.ui_preview_rows == 0:
        return render(
            request,
            "preview.html",
            shown=None,
            why="Table previews are turned off (server.ui_preview_rows = 0).",
            **values,
        )
    budget.deadline(request)
    table = await preview.open_table(request, catalog, ident)

    def build(due: Deadline) -> dict[str, Any]:
        return {"shown": preview.read_rows(table, server.ui_preview_rows, server.ui_preview_max_bytes, due)}

    return await render_bounded(request, "preview.html", build, why="", **values)


async def _authorize(request: Request, catalog: Catalog, operation: str, ident: TableIdent) -> None:
    requested = policy.Requested(namespace=ident.namespace, name=ident.name)
    await policy.authorize(access.of(request), catalog, operation, requested)


async def root(request: Request) -> Response:
    return RedirectResponse(f"{UI_PREFIX}/catalogs", status_code=303, headers=SECURITY_HEADERS)
