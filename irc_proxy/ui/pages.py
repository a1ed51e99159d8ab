"""The console's pages: each authorizes like the REST operation it stands for, then renders a template.

A page is refused (403) or missing (404) with an error page, never a stack trace; a listing shows only
what the caller may see (the REST API's filtered listings). Nothing secret is rendered: no credentials,
no tokens, no file contents beyond the metadata a ``loadTable``/``loadView`` caller already receives.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, quote

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from irc_proxy.errors import BadRequest, CatalogError, Forbidden, TokenRequestError
from irc_proxy.handling import namespace_ops, policy, table_ops, view_ops
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.paging import PageRequest
from irc_proxy.http import access, parsing
from irc_proxy.http.errors import classify
from irc_proxy.ui import charts, loading, models
from irc_proxy.ui.session import (
    UI_PREFIX,
    check_csrf,
    csrf_token,
    remember_csrf,
    end_session,
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
DRAWN_ENTRIES = 32
_DRAWN: OrderedDict[str, dict[str, Any]] = OrderedDict()
"""The charts and schema tables of recently shown metadata files, by location: metadata files never change,
so a table page shown again is drawn once (a bounded cache; each replica has its own)."""


def ns_path(namespace: Namespace) -> str:
    """A namespace as one path segment: levels percent-encoded, joined by ``%1F`` (as the REST API)."""
    return "%1F".join(quote(level, safe="") for level in namespace)


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("irc_proxy.ui"), autoescape=select_autoescape(default=True))
    env.globals |= {"ns_path": ns_path, "quote": lambda text: quote(text, safe=""), "moment": models.moment}
    return env


TEMPLATES = Jinja2Templates(env=_environment())


def render(request: Request, template: str, code: int = 200, **values: Any) -> Response:
    """The page, with the security headers and (for pages with forms) the CSRF cookie."""
    context = parsing.context(request)
    values |= {"principal": context.principal, "csrf": csrf_token(request), "prefix": UI_PREFIX}
    values.setdefault("is_admin", context.grants is not None and context.grants.admin)
    values.setdefault("auth_mode", request.state.settings.auth.mode)
    response = TEMPLATES.TemplateResponse(request, template, values, status_code=code, headers=SECURITY_HEADERS)
    remember_csrf(response, request)
    return response


def page(operation: str) -> Callable[[Page], Page]:
    """Audit the page as ``ui.<operation>`` and answer a refusal or a missing object with an error page."""

    def wrap(handler: Page) -> Page:
        async def endpoint(request: Request) -> Response:
            parsing.context(request).audit.name(f"ui.{operation}")
            try:
                await access.of(request, catalog="").grants()  # looked up once: the header shows admins their pages
                return await handler(request)
            except CatalogError as exc:
                status, kind = classify(exc)
                return render(request, "error.html", status, status=status, kind=kind, message=exc.message)

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


def _page_request(request: Request, key: str) -> PageRequest:
    token = request.query_params.get(key)
    binding = parsing.page_binding(request)
    return PageRequest(token=binding.open(token) if token else None, limit=PAGE_SIZE, binding=binding)


# Signing in ------------------------------------------------------------------------------------------------
async def login_form(request: Request) -> Response:
    parsing.context(request).audit.name("ui.login")
    return render(request, "login.html", next=safe_next(request.query_params.get("next", "")), error=None)


async def login(request: Request) -> Response:
    """``oauth2``: the client-credentials grant; the token becomes the session cookie."""
    parsing.context(request).audit.name("ui.login")
    form = await form_fields(request)
    target = safe_next(form.get("next", ""))
    try:
        check_csrf(request, str(form.get("csrf", "")))
        service = request.state.token_service
        if service is None:
            raise BadRequest('Signing in with a client id and secret needs auth.mode = "oauth2"')
        client_id = str(form.get("client_id", ""))
        address = request.client.host if request.client else ""
        issued = await service.issue("client_credentials", client_id, str(form.get("client_secret", "")), "", address)
    except TokenRequestError as exc:
        parsing.context(request).audit.note("denied", f"{exc.error}: {exc.description}")
        return render(request, "login.html", 401, next=target, error="Unknown client id or wrong secret")
    except CatalogError as exc:
        status, _ = classify(exc)
        return render(request, "login.html", status, next=target, error=exc.message)
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
    settings = request.state.settings
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
    """One page of a listing the caller may see (filtered), or None when refused."""
    context = parsing.context(request)
    context.list_filtered = False
    try:
        await policy.authorize(access.of(request), catalog, operation, policy.Requested(namespace=namespace))
    except Forbidden:
        return None
    token = request.query_params.get(key)
    forwarded = await loading.forwarded_listing(request, catalog, operation, namespace, token, PAGE_SIZE)
    if forwarded is not None:
        return forwarded
    page_request = _page_request(request, key)
    if operation == "listNamespaces":
        return await namespace_ops.list_namespaces(context, catalog, namespace, page_request)
    if operation == "listTables":
        return await table_ops.list_tables(context, catalog, namespace, page_request)
    return await view_ops.list_views(context, catalog, namespace, page_request)


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
    if namespace and catalog.views is not None:
        views = await _listed(request, catalog, "listViews", namespace, "views")
    if properties is None and children is None and tables is None and views is None:
        who = parsing.context(request).principal
        raise Forbidden(f"Principal {who} may not see {'.'.join(namespace) or 'catalog ' + catalog.name}")
    values = {"properties": properties, "children": children, "tables": tables, "views": views}
    return render(request, "namespace.html", catalog=catalog.name, namespace=namespace, **values)


@page("table")
async def table_page(request: Request) -> Response:
    """A table: schema and its history, partitioning, sort orders, refs, metadata log and charts."""
    catalog, ident = parsing.catalog(request), parsing.table_param(request)
    await _authorize(request, catalog, "loadTable", ident)
    metadata_location, metadata = await loading.load_table(request, catalog, ident)
    snapshots = sorted(metadata.snapshots, key=lambda s: s.timestamp_ms)

    def drawn() -> dict[str, Any]:  # thousands of snapshots or schemas: off the event loop
        return {
            "schema_rows": models.field_rows(metadata.schema()),
            "history": models.schema_history(metadata.schemas),
            "timeline": charts.snapshot_timeline(snapshots),
            "sizes": charts.size_over_time(snapshots),
        }

    key = metadata_location
    values = _DRAWN.get(key) if key else None
    if values is None:
        values = await request.state.threads.run(drawn)
        if key:
            _DRAWN[key] = values
            while len(_DRAWN) > DRAWN_ENTRIES:
                _DRAWN.popitem(last=False)
    else:
        _DRAWN.move_to_end(key)
    return render(
        request,
        "table.html",
        catalog=catalog.name,
        ident=ident,
        location=metadata_location,
        metadata=metadata,
        snapshots=list(reversed(snapshots))[:PAGE_SIZE],
        **values,
    )


@page("view")
async def view_page(request: Request) -> Response:
    """A view: the current SQL per dialect, its versions (who, when) and the diff of two of them."""
    catalog, ident = parsing.catalog(request), parsing.table_param(request, "view")
    await _authorize(request, catalog, "loadView", ident)
    location, metadata, stored_here = await loading.load_view(request, catalog, ident)
    versions = sorted(metadata.versions, key=lambda v: v.version_id)
    ids = [v.version_id for v in versions]
    old, new = _version_pair(request, ids, metadata.current_version_id)
    current = next(v for v in versions if v.version_id == metadata.current_version_id)
    authors = await catalog.require_views().version_authors(ident) if stored_here else {}
    diff = {}
    if old is not None and new is not None:
        diff = await request.state.threads.run(models.version_diff, metadata, old, new)
    return render(
        request,
        "view.html",
        catalog=catalog.name,
        ident=ident,
        location=location,
        metadata=metadata,
        current=current,
        current_sql=models.sql_of(current),
        versions=list(reversed(versions)),
        authors=authors,
        old=old,
        new=new,
        diff=diff,
    )


def _version_pair(request: Request, ids: list[int], current: int) -> tuple[int | None, int | None]:
    """The versions to compare: ``?from=&to=``, else the current one against the one before it."""
    query = request.query_params
    if "from" in query or "to" in query:
        try:
            old, new = int(query.get("from", "")), int(query.get("to", ""))
        except ValueError:
            raise BadRequest("Compare two versions: from and to must be version ids") from None
        if old not in ids or new not in ids:
            raise BadRequest(f"No such view version to compare; the versions are {ids[:20]}")
        return old, new
    before = [i for i in ids if i < current]
    return (before[-1], current) if before else (None, None)


async def _authorize(request: Request, catalog: Catalog, operation: str, ident: TableIdent) -> None:
    requested = policy.Requested(namespace=ident.namespace, name=ident.name)
    await policy.authorize(access.of(request), catalog, operation, requested)


async def root(request: Request) -> Response:
    return RedirectResponse(f"{UI_PREFIX}/catalogs", status_code=303, headers=SECURITY_HEADERS)
