"""Namespace endpoints."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.handling.access import visible_namespaces
from irc_proxy.http import parsing
from irc_proxy.http.bodies import CreateNamespaceRequest, UpdateNamespacePropertiesRequest
from irc_proxy.http.responses import json_response, no_content


async def list_namespaces(request: Request) -> Response:
    catalog = parsing.catalog(request)
    page = await catalog.namespaces.list(parsing.parent_param(request), parsing.page_param(request))
    shown = visible_namespaces(parsing.context(request), catalog.name, page.items)
    return json_response({"namespaces": [list(ns) for ns in shown], "next-page-token": page.next_token})


async def create_namespace(request: Request) -> Response:
    catalog = parsing.catalog(request)
    body = await parsing.body_model(request, CreateNamespaceRequest)
    namespace = tuple(body.namespace)
    parsing.audit_object(request, namespace)
    properties = await catalog.namespaces.create(namespace, body.properties)
    return json_response({"namespace": list(namespace), "properties": properties})


async def load_namespace(request: Request) -> Response:
    namespace = parsing.namespace_param(request)
    properties = await parsing.catalog(request).namespaces.load(namespace)
    return json_response({"namespace": list(namespace), "properties": properties})


async def namespace_exists(request: Request) -> Response:
    await parsing.catalog(request).namespaces.exists(parsing.namespace_param(request))
    return no_content()


async def drop_namespace(request: Request) -> Response:
    await parsing.catalog(request).namespaces.drop(parsing.namespace_param(request))
    return no_content()


async def update_properties(request: Request) -> Response:
    namespace = parsing.namespace_param(request)
    body = await parsing.body_model(request, UpdateNamespacePropertiesRequest)
    result = await parsing.catalog(request).namespaces.update_properties(namespace, body.removals, body.updates)
    return json_response({"updated": result.updated, "removed": result.removed, "missing": result.missing})
