"""The view operations: listViews, createView, loadView, viewExists, replaceView, dropView, renameView
and registerView.

Each takes the already-parsed request and runs it on the catalog's views (``handling.views.views``); a
filtered listing shows only the views the caller holds a privilege on. The caller was authorized by
the operation's rule before (``handling.operations.policy``, run by the dispatcher).
"""

from __future__ import annotations

from functools import partial

from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.operations import audit_objects, trash_ops
from irc_proxy.handling.operations.commit_bodies import (
    ChangeBody,
    IdentifierBody,
    Limits,
    Offload,
    body_ident,
    view_change,
)
from irc_proxy.handling.operations.trash import Trash
from irc_proxy.handling.paging import Page, PageRequest
from irc_proxy.handling.security.access import Access, visible_objects
from irc_proxy.handling.security.authz import SecurableType
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.handling.views import view_commits
from irc_proxy.handling.views.views import LoadedView, ViewCreate


async def list_views(
    context: RequestContext, catalog: Catalog, namespace: Namespace, page: PageRequest
) -> Page[TableIdent]:
    """The views in ``namespace`` the caller may see, one page."""
    found = await catalog.require_views().list(namespace, page)
    return Page(visible_objects(context, catalog.name, found.items, SecurableType.VIEW), found.next_token)


async def create_view(
    context: RequestContext, catalog: Catalog, namespace: Namespace, create: ViewCreate
) -> LoadedView:
    """Create a view owned by the caller. Raises BadRequest for a version that is not valid."""
    views = catalog.require_views()
    audit_objects.note(context, TableIdent(namespace, create.name))
    view_commits.validate_version(create.view_version)
    return await views.create(namespace, create, context.principal)


async def load_view(catalog: Catalog, ident: TableIdent) -> LoadedView:
    return await catalog.require_views().load(ident)


async def view_exists(catalog: Catalog, ident: TableIdent) -> None:
    """Raises NoSuchView."""
    await catalog.require_views().exists(ident)


async def replace_view(
    context: RequestContext, catalog: Catalog, ident: TableIdent, body: ChangeBody, limits: Limits, offload: Offload
) -> LoadedView:
    """Apply a replaceView body (parsed where ``offload`` runs it, after its entries are counted)."""
    views = catalog.require_views()
    requirements, updates = await offload(partial(view_change, ident, body, limits))
    return await views.replace(ident, requirements, updates, context.principal)


async def drop_view(context: RequestContext, catalog: Catalog, ident: TableIdent, trash: Trash | None = None) -> None:
    """Drop the view; with a trash that keeps the catalog's drops, it is kept there with its whole history."""
    if trash is not None and trash.keeps(catalog):
        await trash.drop_view(catalog, ident, context.principal)
        return
    await catalog.require_views().drop(ident)


async def rename_view(
    context: RequestContext, catalog: Catalog, source: IdentifierBody, destination: IdentifierBody
) -> None:
    views = catalog.require_views()
    renamed, target = body_ident(source), body_ident(destination)
    audit_objects.note(context, renamed, target)
    await views.rename(renamed, target)


async def register_view(
    access: Access,
    catalog: Catalog,
    namespace: Namespace,
    name: str,
    metadata_location: str,
    trash: Trash | None = None,
) -> LoadedView:
    """Register the view whose current metadata is at ``metadata_location``, owned by the caller. A dropped
    view's file takes it out of the trash, for callers holding the privileges of its restore (``trash_ops``)."""
    views, target = catalog.require_views(), TableIdent(namespace, name)
    kept = [] if trash is None else await trash_ops.claimable(access, trash, catalog, "view", metadata_location, target)
    view = await views.register(namespace, name, metadata_location, access.context.principal, trash_ops.adopted(kept))
    if trash is not None:
        await trash.registered(catalog, view.metadata_location)
        trash_ops.registered(access, trash, kept, target)
    return view
