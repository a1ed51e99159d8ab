"""How the console loads a table or a view: from the catalog itself, or from its remote catalog when the
catalog forwards ``loadTable``/``loadView`` there (a REST-federated catalog), with the caller's identity as
the REST API would forward it. Either way the caller was authorized by the page first."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil
from pyiceberg.view.metadata import ViewMetadata
from starlette.requests import Request

from irc_proxy.errors import BadRequest, NotFound, from_error_body
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.federation.forwarding import UpstreamCall
from irc_proxy.handling.federation.serving import Placement
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.operations import view_ops
from irc_proxy.handling.paging import Page
from irc_proxy.http import parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.http.routes import NS, TABLE, VIEW


async def _forwarded(
    request: Request,
    catalog: Catalog,
    endpoint: str,
    namespace: Namespace | None,
    names: dict[str, str] | None = None,
    query: bytes = b"",
) -> Any | None:
    """The remote catalog's answer body for ``endpoint`` when the catalog forwards it, else None."""
    context = parsing.context(request)
    await catalog.discover(context)
    if catalog.placement(endpoint) is not Placement.FORWARDED or catalog.forwarder is None:
        return None
    pages = parsing.page_binding(request) if context.list_filtered else None
    call = UpstreamCall(endpoint, namespace, names or {}, query, pages=pages)
    reply = await catalog.forwarder.send(context, call)
    if reply.status != 200:
        raise from_error_body(reply.status, reply.body)
    threads = app_state(request).threads
    try:
        return await threads.run(json.loads, reply.body)
    except ValueError:
        raise BadRequest("The remote catalog answered with a body that is not JSON") from None


async def table_location(request: Request, catalog: Catalog, ident: TableIdent) -> str | None:
    """The table's current metadata location, cheaply (no file is read), or None when the catalog forwards
    ``loadTable`` to its remote catalog. Raises NoSuchTable."""
    await catalog.discover(parsing.context(request))
    if catalog.placement(f"GET {TABLE}") is Placement.FORWARDED and catalog.forwarder is not None:
        return None
    return await catalog.tables.current_location(ident)


async def load_table(request: Request, catalog: Catalog, ident: TableIdent) -> tuple[str, TableMetadata]:
    """The table's metadata location and metadata. Raises NoSuchTable (NotFound) and the remote's errors."""
    names = {"table": quote(ident.name, safe="")}
    body = await _forwarded(request, catalog, f"GET {TABLE}", ident.namespace, names)
    if body is None:
        loaded = await catalog.tables.load(ident)
        return loaded.metadata_location or "", loaded.metadata
    if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
        raise NotFound(f"The remote catalog answered no metadata for table {ident}")
    raw = json.dumps(body["metadata"])
    metadata = await app_state(request).threads.run(TableMetadataUtil.parse_raw, raw)
    return str(body.get("metadata-location") or ""), metadata


async def load_view(request: Request, catalog: Catalog, ident: TableIdent) -> tuple[str, ViewMetadata, bool]:
    """The view's metadata location and metadata, and whether it is stored here (its versions' authors known)."""
    body = await _forwarded(request, catalog, f"GET {VIEW}", ident.namespace, {"view": quote(ident.name, safe="")})
    if body is None:
        view = await view_ops.load_view(catalog, ident)
        return view.metadata_location, view.metadata, True
    if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
        raise NotFound(f"The remote catalog answered no metadata for view {ident}")
    metadata = await app_state(request).threads.run(ViewMetadata.model_validate, body["metadata"])
    return str(body.get("metadata-location") or ""), metadata, False


LISTINGS = {
    "listNamespaces": "GET /v1/{prefix}/namespaces",
    "listTables": f"GET {NS}/tables",
    "listViews": f"GET {NS}/views",
}


async def forwarded_listing(
    request: Request, catalog: Catalog, operation: str, namespace: Namespace, token: str | None, limit: int
) -> Page[Any] | None:
    """One page of a listing the catalog forwards to its remote catalog (filtered for the caller as the REST
    API filters it), or None when the catalog lists it itself."""
    pairs = [("pageSize", str(limit))] + ([("pageToken", token)] if token else [])
    if operation == "listNamespaces":
        pairs += [("parent", "\x1f".join(namespace))] if namespace else []
    where = None if operation == "listNamespaces" else namespace
    query = urlencode(pairs, quote_via=quote).encode()
    body = await _forwarded(request, catalog, LISTINGS[operation], where, query=query)
    if body is None:
        return None
    if not isinstance(body, dict):
        raise BadRequest("The remote catalog answered a listing that is not a JSON object")
    next_token = body.get("next-page-token") or None
    if operation == "listNamespaces":
        return Page([tuple(levels) for levels in body.get("namespaces") or ()], next_token)
    idents = [TableIdent(tuple(i["namespace"]), str(i["name"])) for i in body.get("identifiers") or ()]
    return Page(idents, next_token)
