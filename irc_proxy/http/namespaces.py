"""Namespace endpoints: the request's parts -> ``handling.operations.namespace_ops`` -> the response."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.handling.operations import namespace_ops
from irc_proxy.http import parsing
from irc_proxy.http.bodies import CreateNamespaceRequest, UpdateNamespacePropertiesRequest
from irc_proxy.http.responses import json_response, no_content


async def list_namespaces(request: Request) -> Response:
    catalog, context = parsing.catalog(request), parsing.context(request)
    page = await namespace_ops.list_namespaces(
        context, catalog, parsing.parent_param(request), parsing.page_param(request)
    )
    return json_response({"namespaces": [list(ns) for ns in page.items], "next-page-token": page.next_token})


async def create_namespace(request: Request) -> Response:
    body = await parsing.body_model(request, CreateNamespaceRequest)
    namespace = tuple(body.namespace)
    catalog, context = parsing.catalog(request), parsing.context(request)
    properties = await namespace_ops.create_namespace(context, catalog, namespace, body.properties)
    return json_response({"namespace": list(namespace), "properties": properties})


async def load_namespace(request: Request) -> Response:
    namespace = parsing.namespace_param(request)
    properties = await namespace_ops.load_namespace(parsing.catalog(request), namespace)
    return json_response({"namespace": list(namespace), "properties": properties})


async def namespace_exists(request: Request) -> Response:
    await namespace_ops.namespace_exists(parsing.catalog(request), parsing.namespace_param(request))
    return no_content()


async def drop_namespace(request: Request) -> Response:
    await namespace_ops.drop_namespace(parsing.catalog(request), parsing.namespace_param(request))
    return no_content()


async def update_properties(request: Request) -> Response:
    namespace = parsing.namespace_param(request)
    body = await parsing.body_model(request, UpdateNamespacePropertiesRequest)
    result = await namespace_ops.update_properties(parsing.catalog(request), namespace, body.removals, body.updates)
    return json_response({"updated": result.updated, "removed": result.removed, "missing": result.missing})
