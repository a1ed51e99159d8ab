"""The console's trash page: a catalog's dropped tables and views, and restoring one (``handling.operations.trash_ops``
decides who may see and restore what, exactly as for ``/management/v1/catalogs/{catalog}/trash``)."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from irc_proxy.errors import BadRequest
from irc_proxy.handling.naming import TableIdent, validate_namespace
from irc_proxy.handling.operations import trash_ops
from irc_proxy.handling.operations.trash import Restore, Trash, TrashFilter
from irc_proxy.http import access, parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.numbers import is_number
from irc_proxy.ui.links import ns_path, segment
from irc_proxy.ui.pages import PAGE_SIZE, SECURITY_HEADERS, form_fields, page, render
from irc_proxy.ui.session import UI_PREFIX, check_csrf


def _trash(request: Request) -> Trash:
    return app_state(request).trash


@page("trash")
async def trash_page(request: Request) -> Response:
    """The entries the caller could have dropped, newest first, each with a restore form."""
    catalog = parsing.catalog(request)
    offset_text = request.query_params.get("offset", "0")
    if not is_number(offset_text, 9):
        raise BadRequest("Invalid offset: a page offset this console gave")
    offset = int(offset_text)
    checks = access.of(request)
    entries, next_offset = await trash_ops.list_entries(
        checks, _trash(request), catalog, TrashFilter(), offset, PAGE_SIZE
    )
    retention = _trash(request).retention(catalog)
    return render(
        request,
        "trash.html",
        catalog=catalog.name,
        namespace=(),
        entries=entries,
        next_offset=next_offset,
        keeps=_trash(request).keeps(catalog),
        retention=retention,
    )


@page("trash.restore")
async def restore(request: Request) -> Response:
    """Restore an entry (under its name, or the one the form gives) and go to the restored object's page."""
    catalog = parsing.catalog(request)
    form = await form_fields(request)
    check_csrf(request, form.get("csrf", ""))
    target = None
    if form.get("name", "").strip():
        levels = tuple(level for level in form.get("namespace", "").split(".") if level)
        validate_namespace(levels)
        target = TableIdent(levels, form["name"].strip())
    wanted = Restore(target, form.get("create_namespace") == "yes")
    parsing.context(request).audit.params["prefix"] = quote(catalog.name, safe="")  # the record's catalog
    checks = access.of(request)
    restored = await trash_ops.restore_entry(checks, _trash(request), catalog, request.path_params["entry"], wanted)
    kind = "views" if restored.kind == "view" else "tables"
    where = f"{UI_PREFIX}/catalogs/{segment(catalog.name)}/namespaces/{ns_path(restored.ident.namespace)}"
    target_url = f"{where}/{kind}/{segment(restored.ident.name)}"
    return RedirectResponse(target_url, status_code=303, headers=SECURITY_HEADERS)


TRASH_UI_ROUTES: list[BaseRoute] = [
    Route(f"{UI_PREFIX}/catalogs/{{prefix}}/trash", trash_page, methods=["GET"]),
    Route(f"{UI_PREFIX}/catalogs/{{prefix}}/trash/{{entry}}/restore", restore, methods=["POST"]),
]
