"""Table endpoints: the request's parts -> ``handling.operations.table_loads`` / ``handling.operations.table_ops``
-> the response."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import BadRequest
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.operations import table_loads, table_ops
from irc_proxy.handling.tables.tables import TableCreate
from irc_proxy.http import access, credentials, parsing, responses
from irc_proxy.http.app_state import app_state
from irc_proxy.http.bodies import (
    CommitTableRequest,
    CommitTransactionRequest,
    CreateTableRequest,
    RegisterTableRequest,
    RenameTableRequest,
    ReportMetricsRequest,
)
from irc_proxy.http.responses import (
    etag,
    etag_matches,
    identifier,
    json_response,
    load_table_body,
    load_table_response,
    no_content,
    not_modified,
)


async def list_tables(request: Request) -> Response:
    catalog, context = parsing.catalog(request), parsing.context(request)
    page = await table_ops.list_tables(context, catalog, parsing.namespace_param(request), parsing.page_param(request))
    return json_response({"identifiers": [identifier(t) for t in page.items], "next-page-token": page.next_token})


async def create_table(request: Request) -> Response:
    namespace = parsing.namespace_param(request)
    body = await parsing.body_model(request, CreateTableRequest)
    create = TableCreate(
        name=body.name,
        schema=body.table_schema,
        location=body.location,
        partition_spec=body.partition_spec,
        write_order=body.write_order,
        properties=body.properties,
        stage_create=body.stage_create,
    )
    result = await table_loads.create_table(
        access.of(request), parsing.catalog(request), namespace, create, credentials.asked(request)
    )
    return _render(result)


async def register_table(request: Request) -> Response:
    body = await parsing.body_model(request, RegisterTableRequest)
    ident = TableIdent(parsing.namespace_param(request), body.name)
    catalog, asked = parsing.catalog(request), credentials.asked(request)
    result = await table_loads.register_table(
        access.of(request), catalog, ident, body.metadata_location, body.overwrite, asked, app_state(request).trash
    )
    return _render(result)


async def load_table(request: Request) -> Response:
    catalog = parsing.catalog(request)
    ident = parsing.table_param(request)
    snapshots = (request.query_params.get("snapshots") if request.scope["query_string"] else None) or "all"
    if snapshots not in ("all", "refs"):
        raise BadRequest(f"Invalid snapshots mode: {snapshots!r} (expected all or refs)")
    location = await catalog.tables.current_location(ident)  # one pointer read serves the ETag and the load
    tag = etag(location, snapshots)
    if etag_matches(parsing.if_none_match(request), tag):
        return not_modified(tag)
    # Only a catalog that vends can hand out what the client asked for (pyiceberg asks on every load).
    asked = credentials.asked(request) if catalog.vending is not None else credentials.NOTHING_ASKED
    result = await table_loads.load_table(access.of(request), catalog, ident, location, asked)
    return _render(result, snapshots)


def _render(result: table_loads.TableResult, snapshots: str = "all") -> Response:
    return credentials.with_fields(load_table_response(result.table, snapshots), result.fields)


async def table_exists(request: Request) -> Response:
    await table_ops.table_exists(parsing.catalog(request), parsing.table_param(request))
    return no_content()


async def commit_table(request: Request) -> Response:
    catalog = parsing.catalog(request)
    ident = parsing.table_param(request)
    body = await parsing.body_model(request, CommitTableRequest)  # parsed once (authorization read it too)
    loaded = await table_ops.commit_table(
        catalog, ident, body, parsing.commit_limits(request), parsing.offload(request)
    )
    assert loaded.metadata_location is not None
    await app_state(request).maintenance.mark(catalog.name, [ident])  # one upsert, only for a scheduled catalog
    body_bytes = await responses.commit_table_body(request, loaded)
    return Response(body_bytes, media_type="application/json", headers={"ETag": etag(loaded.metadata_location, "all")})


async def commit_transaction(request: Request) -> Response:
    catalog, context = parsing.catalog(request), parsing.context(request)
    body = await parsing.body_model(request, CommitTransactionRequest)
    changed = await table_ops.commit_transaction(
        context, catalog, body, parsing.commit_limits(request), parsing.offload(request)
    )
    await app_state(request).maintenance.mark(catalog.name, changed)
    return no_content()


async def drop_table(request: Request) -> Response:
    ident, purge = parsing.table_param(request), parsing.bool_param(request, "purgeRequested")
    await table_ops.drop_table(
        parsing.context(request), parsing.catalog(request), ident, purge, app_state(request).trash
    )
    return no_content()


async def rename_table(request: Request) -> Response:
    body = await parsing.body_model(request, RenameTableRequest)
    await table_ops.rename_table(parsing.context(request), parsing.catalog(request), body.source, body.destination)
    return no_content()


async def unregister_table(request: Request) -> Response:
    loaded = await table_ops.unregister_table(parsing.catalog(request), parsing.table_param(request))
    return Response(load_table_body(loaded, with_config=False), media_type="application/json")


async def report_metrics(request: Request) -> Response:
    catalog = parsing.catalog(request)
    ident = parsing.table_param(request)
    await parsing.body_model(request, ReportMetricsRequest)
    await table_ops.report_metrics(catalog, ident)
    return no_content()
