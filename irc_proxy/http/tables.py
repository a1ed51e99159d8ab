"""Table endpoints."""

from __future__ import annotations

from functools import partial

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import BadRequest
from irc_proxy.handling import commits, table_loads
from irc_proxy.handling.access import visible_objects
from irc_proxy.handling.authz import SecurableType
from irc_proxy.handling.naming import TableIdent, validate_namespace
from irc_proxy.handling.tables import TableChange, TableCreate
from irc_proxy.http import access, credentials, parsing, responses
from irc_proxy.http.bodies import (
    CommitTableRequest,
    CommitTransactionRequest,
    CreateTableRequest,
    RegisterTableRequest,
    RenameTableRequest,
    ReportMetricsRequest,
    TableIdentifier,
)
from irc_proxy.http.request_limits import CommitLimits
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
    shown = visible_objects(parsing.context(request), catalog.name, page.items, SecurableType.TABLE)
    return json_response({"identifiers": [identifier(t) for t in shown], "next-page-token": page.next_token})


async def create_table(request: Request) -> Response:
    namespace = parsing.namespace_param(request)
    body = await parsing.body_model(request, CreateTableRequest)
    parsing.audit_object(request, TableIdent(namespace, body.name))
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
    parsing.audit_object(request, ident)
    catalog, asked = parsing.catalog(request), credentials.asked(request)
    result = await table_loads.register_table(
        access.of(request), catalog, ident, body.metadata_location, body.overwrite, asked
    )
    return _render(result)


async def load_table(request: Request) -> Response:
    catalog = parsing.catalog(request)
    ident = parsing.table_param(request)
    snapshots = request.query_params.get("snapshots") or "all"
    if snapshots not in ("all", "refs"):
        raise BadRequest(f"Invalid snapshots mode: {snapshots!r} (expected all or refs)")
    location = await catalog.tables.current_location(ident)  # one pointer read serves the ETag and the load
    tag = etag(location, snapshots)
    if etag_matches(request.headers.get("if-none-match"), tag):
        return Response(status_code=304, headers={"ETag": tag})
    result = await table_loads.load_table(access.of(request), catalog, ident, location, credentials.asked(request))
    return _render(result, snapshots)


def _render(result: table_loads.TableResult, snapshots: str = "all") -> Response:
    return credentials.with_fields(load_table_response(result.table, snapshots), result.fields)


async def table_exists(request: Request) -> Response:
    await parsing.catalog(request).tables.exists(parsing.table_param(request))
    return no_content()


def _change(ident: TableIdent, body: CommitTableRequest) -> TableChange:
    return TableChange(ident, commits.parse_requirements(body.requirements), commits.parse_updates(body.updates))


def _parse_commit(ident: TableIdent, limits: CommitLimits, body: CommitTableRequest) -> TableChange:
    """The body of updateTable as one change (counted before its entries are parsed)."""
    if body.identifier is not None and body_ident(body.identifier) != ident:
        raise BadRequest(f"Commit identifier {body_ident(body.identifier)} does not match the path ({ident})")
    limits.check(body.updates, len(body.requirements))
    return _change(ident, body)


def _parse_transaction(limits: CommitLimits, body: CommitTransactionRequest) -> list[TableChange]:
    """The body of commitTransaction; the limits apply to all its table changes together."""
    changes = body.table_changes
    limits.check([update for c in changes for update in c.updates], sum(len(c.requirements) for c in changes))
    parsed = []
    for change in changes:
        if change.identifier is None:
            raise BadRequest("Invalid table change: identifier is required in a transaction")
        parsed.append(_change(body_ident(change.identifier), change))
    return parsed


async def commit_table(request: Request) -> Response:
    catalog = parsing.catalog(request)
    ident = parsing.table_param(request)
    body = await parsing.body_model(request, CommitTableRequest)  # parsed once (authorization read it too)
    change = await parsing.off_loop(request, partial(_parse_commit, ident, CommitLimits.of(request), body))
    loaded = await catalog.tables.commit(change)
    assert loaded.metadata_location is not None
    body_bytes = await responses.commit_table_body(request, loaded)
    return Response(body_bytes, media_type="application/json", headers={"ETag": etag(loaded.metadata_location, "all")})


async def commit_transaction(request: Request) -> Response:
    catalog = parsing.catalog(request)
    body = await parsing.body_model(request, CommitTransactionRequest)
    changes = await parsing.off_loop(request, partial(_parse_transaction, CommitLimits.of(request), body))
    parsing.audit_object(request, *(change.ident for change in changes))
    await catalog.tables.commit_transaction(changes)
    return no_content()


async def drop_table(request: Request) -> Response:
    catalog = parsing.catalog(request)
    await catalog.tables.drop(parsing.table_param(request), parsing.bool_param(request, "purgeRequested"))
    return no_content()


async def rename_table(request: Request) -> Response:
    body = await parsing.body_model(request, RenameTableRequest)
    parsing.audit_object(request, body_ident(body.source), body_ident(body.destination))
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
