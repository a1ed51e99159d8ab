"""Table endpoints."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import BadRequest
from irc_proxy.handling import commits
from irc_proxy.handling.naming import TableIdent, validate_namespace
from irc_proxy.handling.tables import TableChange, TableCreate
from irc_proxy.http import parsing
from irc_proxy.http.bodies import (
    CommitTableRequest,
    CommitTransactionRequest,
    CreateTableRequest,
    RegisterTableRequest,
    RenameTableRequest,
    ReportMetricsRequest,
    TableIdentifier,
)
from irc_proxy.http.responses import (
    etag,
    etag_matches,
    identifier,
    json_response,
    load_table_body,
    load_table_response,
    no_content,
)


def body_ident(body: TableIdentifier) -> TableIdent:
    """A TableIdentifier from a request body, validated."""
    namespace = tuple(body.namespace)
    validate_namespace(namespace)
    return TableIdent(namespace, body.name)


async def list_tables(request: Request) -> Response:
    catalog = parsing.catalog(request)
    page = await catalog.tables.list(parsing.namespace_param(request), parsing.page_param(request))
    return json_response({"identifiers": [identifier(t) for t in page.items], "next-page-token": page.next_token})


async def create_table(request: Request) -> Response:
    catalog = parsing.catalog(request)
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
    return load_table_response(await catalog.tables.create(namespace, create))


async def register_table(request: Request) -> Response:
    catalog = parsing.catalog(request)
    body = await parsing.body_model(request, RegisterTableRequest)
    loaded = await catalog.tables.register(
        parsing.namespace_param(request), body.name, body.metadata_location, body.overwrite
    )
    return load_table_response(loaded)


async def load_table(request: Request) -> Response:
    catalog = parsing.catalog(request)
    ident = parsing.table_param(request)
    snapshots = request.query_params.get("snapshots") or "all"
    if snapshots not in ("all", "refs"):
        raise BadRequest(f"Invalid snapshots mode: {snapshots!r} (expected all or refs)")
    if_none_match = request.headers.get("if-none-match")
    if if_none_match:
        location = await catalog.tables.current_location(ident)
        tag = etag(location, snapshots)
        if etag_matches(if_none_match, tag):
            return Response(status_code=304, headers={"ETag": tag})
    return load_table_response(await catalog.tables.load(ident), snapshots)


async def table_exists(request: Request) -> Response:
    await parsing.catalog(request).tables.exists(parsing.table_param(request))
    return no_content()


def _change(ident: TableIdent, body: CommitTableRequest) -> TableChange:
    return TableChange(ident, commits.parse_requirements(body.requirements), commits.parse_updates(body.updates))


async def commit_table(request: Request) -> Response:
    catalog = parsing.catalog(request)
    ident = parsing.table_param(request)
    body = await parsing.body_model(request, CommitTableRequest)
    if body.identifier is not None and body_ident(body.identifier) != ident:
        raise BadRequest(f"Commit identifier {body_ident(body.identifier)} does not match the path ({ident})")
    loaded = await catalog.tables.commit(_change(ident, body))
    assert loaded.metadata_location is not None
    body_bytes = load_table_body(loaded, with_config=False)
    return Response(body_bytes, media_type="application/json", headers={"ETag": etag(loaded.metadata_location, "all")})


async def commit_transaction(request: Request) -> Response:
    catalog = parsing.catalog(request)
    body = await parsing.body_model(request, CommitTransactionRequest)
    changes = []
    for change in body.table_changes:
        if change.identifier is None:
            raise BadRequest("Invalid table change: identifier is required in a transaction")
        changes.append(_change(body_ident(change.identifier), change))
    await catalog.tables.commit_transaction(changes)
    return no_content()


async def drop_table(request: Request) -> Response:
    catalog = parsing.catalog(request)
    await catalog.tables.drop(parsing.table_param(request), parsing.bool_param(request, "purgeRequested"))
    return no_content()


async def rename_table(request: Request) -> Response:
    body = await parsing.body_model(request, RenameTableRequest)
    await parsing.catalog(request).tables.rename(body_ident(body.source), body_ident(body.destination))
    return no_content()


async def unregister_table(request: Request) -> Response:
    loaded = await parsing.catalog(request).tables.unregister(parsing.table_param(request))
    return Response(load_table_body(loaded, with_config=False), media_type="application/json")


async def report_metrics(request: Request) -> Response:
    catalog = parsing.catalog(request)
    ident = parsing.table_param(request)
    await parsing.body_model(request, ReportMetricsRequest)
    await catalog.tables.exists(ident)
    return no_content()
