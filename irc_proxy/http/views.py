"""View endpoints."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import BadRequest
from irc_proxy.handling import view_commits
from irc_proxy.handling.access import visible_objects
from irc_proxy.handling.authz import SecurableType
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.views import LoadedView, ViewCreate
from irc_proxy.http import parsing
from irc_proxy.http.bodies import CommitViewRequest, CreateViewRequest, RegisterViewRequest, RenameTableRequest
from irc_proxy.http.request_limits import CommitLimits
from irc_proxy.http.responses import identifier, json_response, no_content
from irc_proxy.http.tables import body_ident

ViewChange = tuple[list[view_commits.AssertViewUUID], list[view_commits.ViewUpdate]]


def load_view_response(view: LoadedView) -> Response:
    head = json.dumps({"metadata-location": view.metadata_location, "config": view.config})
    body = f'{head[:-1]},"metadata":{view.metadata.model_dump_json()}}}'
    return Response(body, media_type="application/json")


async def list_views(request: Request) -> Response:
    catalog = parsing.catalog(request)
    page = await catalog.require_views().list(parsing.namespace_param(request), parsing.page_param(request))
    shown = visible_objects(parsing.context(request), catalog.name, page.items, SecurableType.VIEW)
    return json_response({"identifiers": [identifier(v) for v in shown], "next-page-token": page.next_token})


async def create_view(request: Request) -> Response:
    views = parsing.catalog(request).require_views()
    namespace = parsing.namespace_param(request)
    body = await parsing.body_model(request, CreateViewRequest)
    parsing.audit_object(request, TableIdent(namespace, body.name))
    view_commits.validate_version(body.view_version)
    create = ViewCreate(body.name, body.view_schema, body.view_version, body.properties, body.location)
    return load_view_response(await views.create(namespace, create, parsing.principal(request)))


async def load_view(request: Request) -> Response:
    views = parsing.catalog(request).require_views()
    return load_view_response(await views.load(parsing.table_param(request, "view")))


async def view_exists(request: Request) -> Response:
    await parsing.catalog(request).require_views().exists(parsing.table_param(request, "view"))
    return no_content()


def _parse_view_commit(ident: TableIdent, limits: CommitLimits, data: Any) -> ViewChange:
    """The body of replaceView: requirements and updates, counted before they are parsed."""
    body = parsing.validate_model(CommitViewRequest, data)
    if body.identifier is not None and body_ident(body.identifier) != ident:
        raise BadRequest(f"Commit identifier {body_ident(body.identifier)} does not match the path ({ident})")
    limits.check(body.updates, len(body.requirements))
    return view_commits.parse_view_requirements(body.requirements), view_commits.parse_view_updates(body.updates)


async def replace_view(request: Request) -> Response:
    views = parsing.catalog(request).require_views()
    ident = parsing.table_param(request, "view")
    parse = partial(_parse_view_commit, ident, CommitLimits.of(request))
    requirements, updates = await parsing.parsed_body(request, parse)
    return load_view_response(await views.replace(ident, requirements, updates, parsing.principal(request)))


async def drop_view(request: Request) -> Response:
    await parsing.catalog(request).require_views().drop(parsing.table_param(request, "view"))
    return no_content()


async def rename_view(request: Request) -> Response:
    views = parsing.catalog(request).require_views()
    body = await parsing.body_model(request, RenameTableRequest)
    parsing.audit_object(request, body_ident(body.source), body_ident(body.destination))
    await views.rename(body_ident(body.source), body_ident(body.destination))
    return no_content()


async def register_view(request: Request) -> Response:
    views = parsing.catalog(request).require_views()
    body = await parsing.body_model(request, RegisterViewRequest)
    loaded = await views.register(
        parsing.namespace_param(request), body.name, body.metadata_location, parsing.principal(request)
    )
    return load_view_response(loaded)
