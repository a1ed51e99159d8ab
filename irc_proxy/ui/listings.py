"""One page of a listing as the console shows it to the caller: authorized like the REST listing (a refusal is
None, not an error page), filtered to what the caller may see, answered by the catalog whether it lists here or
asks its remote catalog. The namespace pages and the search both list through it, so the search finds exactly
what clicking would."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from irc_proxy.errors import Forbidden
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import Namespace
from irc_proxy.handling.operations import policy
from irc_proxy.handling.paging import Page
from irc_proxy.http import access, parsing


async def visible_page(
    request: Request, catalog: Catalog, operation: str, namespace: Namespace, token: str | None, limit: int
) -> Page[Any] | None:
    """``operation`` (``listNamespaces``, ``listTables`` or ``listViews``) of ``namespace`` from ``token`` (as the
    caller holds it), at most ``limit`` entries; None when the caller may not list there."""
    context = parsing.context(request)
    context.list_filtered = False
    try:
        await policy.authorize(access.of(request), catalog, operation, policy.Requested(namespace=namespace))
    except Forbidden:
        return None
    pages = parsing.page_binding(request)
    if operation == "listNamespaces":
        return await catalog.list_namespaces(context, namespace, token, limit, pages)
    if operation == "listTables":
        return await catalog.list_tables(context, namespace, token, limit, pages)
    return await catalog.list_views(context, namespace, token, limit, pages)
