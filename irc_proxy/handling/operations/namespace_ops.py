"""The namespace operations: listNamespaces, createNamespace, loadNamespaceMetadata, namespaceExists,
dropNamespace and updateProperties.

Each takes the already-parsed request and runs it on the catalog; a filtered listing shows only
what the caller holds grants on. The caller was authorized by the operation's rule before
(``handling.operations.policy``, run by the dispatcher, which also authorizes forwarded operations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from irc_proxy.backends.base import Properties
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.namespaces import PropertiesUpdate
from irc_proxy.handling.naming import Namespace
from irc_proxy.handling.operations import audit_objects
from irc_proxy.handling.paging import Page, PageRequest
from irc_proxy.handling.security.access import visible_namespaces
from irc_proxy.handling.security.context import RequestContext


async def list_namespaces(
    context: RequestContext, catalog: Catalog, parent: Namespace, page: PageRequest
) -> Page[Namespace]:
    """The children of ``parent`` (the top level when empty) the caller may see, one page."""
    found = await catalog.namespaces.list(parent, page)
    return Page(visible_namespaces(context, catalog.name, found.items), found.next_token)


async def create_namespace(
    context: RequestContext, catalog: Catalog, namespace: Namespace, properties: Mapping[str, str]
) -> Properties:
    """Create ``namespace`` (and missing parents); returns its properties as stored."""
    audit_objects.note(context, namespace)
    return await catalog.namespaces.create(namespace, properties)


async def load_namespace(catalog: Catalog, namespace: Namespace) -> Properties:
    return await catalog.namespaces.load(namespace)


async def namespace_exists(catalog: Catalog, namespace: Namespace) -> None:
    """Raises NoSuchNamespace."""
    await catalog.namespaces.exists(namespace)


async def drop_namespace(catalog: Catalog, namespace: Namespace) -> None:
    await catalog.namespaces.drop(namespace)


async def update_properties(
    catalog: Catalog, namespace: Namespace, removals: Sequence[str], updates: Mapping[str, str]
) -> PropertiesUpdate:
    return await catalog.namespaces.update_properties(namespace, removals, updates)
