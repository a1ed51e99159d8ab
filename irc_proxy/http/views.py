"""View endpoints: the request's parts -> ``handling.operations.view_ops`` -> the response."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.handling.operations import view_ops
from irc_proxy.handling.views.views import LoadedView, ViewCreate
from irc_proxy.http import access, parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.http.bodies import CommitViewRequest, CreateViewRequest, RegisterViewRequest, RenameTableRequest
from irc_proxy.http.responses import identifier, json_response, no_content


def load_view_response(view: LoadedView) -> Response:
    head = json.dumps({"metadata-location": view.metadata_location, "config": view.config})
    body = f'{head[:-1]},"metadata":{view.metadata.model_dump_json()}}}'
    return Response(body, media_type="application/json")


async def list_views(request: Request) -> Response:
    catalog, context = parsing.catalog(request), parsing.context(request)
    page = await view_ops.list_views(context, catalog, parsing.namespace_param(request), parsing.page_param(request))
    return json_response({"identifiers": [identifier(v) for v in page.items], "next-page-token": page.next_token})


async def create_view(request: Request) -> Response:
    namespace = parsing.namespace_param(request)
    body = await parsing.body_model(request, CreateViewRequest)
    create = ViewCreate(body.name, body.view_schema, body.view_version, body.properties, body.location)
    view = await view_ops.create_view(parsing.context(request), parsing.catalog(request), namespace, create)
    return load_view_response(view)


async def load_view(request: Request) -> Response:
    return load_view_response(await view_ops.load_view(parsing.catalog(request), parsing.table_param(request, "view")))


async def view_exists(request: Request) -> Response:
    await view_ops.view_exists(parsing.catalog(request), parsing.table_param(request, "view"))
    return no_content()


async def replace_view(request: Request) -> Response:
    ident = parsing.table_param(request, "view")
    body = await parsing.body_model(request, CommitViewRequest)
    catalog, context, limits = parsing.catalog(request), parsing.context(request), parsing.commit_limits(request)
    return load_view_response(
        await view_ops.replace_view(context, catalog, ident, body, limits, parsing.offload(request))
    )


async def drop_view(request: Request) -> Response:
    ident = parsing.table_param(request, "view")
    await view_ops.drop_view(parsing.context(request), parsing.catalog(request), ident, app_state(request).trash)
    return no_content()


async def rename_view(request: Request) -> Response:
    body = await parsing.body_model(request, RenameTableRequest)
    await view_ops.rename_view(parsing.context(request), parsing.catalog(request), body.source, body.destination)
    return no_content()


async def register_view(request: Request) -> Response:
    body = await parsing.body_model(request, RegisterViewRequest)
    namespace = parsing.namespace_param(request)
    catalog = parsing.catalog(request)
    view = await view_ops.register_view(
        access.of(request), catalog, namespace, body.name, body.metadata_location, app_state(request).trash
    )
    return load_view_response(view)
