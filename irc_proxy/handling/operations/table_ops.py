"""The table operations that answer no LoadTableResult: listTables, tableExists, updateTable,
commitTransaction, dropTable, renameTable, unregisterTable and reportMetrics (``table_loads`` has the others).

Each takes the already-parsed request and runs it on the catalog's tables (``handling.tables.tables``);
a filtered listing shows only the tables the caller holds a privilege on. The caller was authorized
by the operation's rule before (``handling.operations.policy``, run by the dispatcher).
"""

from __future__ import annotations

from functools import partial

from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.operations import audit_objects
from irc_proxy.handling.operations.commit_bodies import (
    ChangeBody,
    IdentifierBody,
    Limits,
    Offload,
    TransactionBody,
    body_ident,
    table_change,
    table_changes,
)
from irc_proxy.handling.operations.trash import Trash
from irc_proxy.handling.paging import Page, PageRequest
from irc_proxy.handling.security.access import visible_objects
from irc_proxy.handling.security.authz import SecurableType
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.handling.tables.tables import LoadedTable


async def list_tables(
    context: RequestContext, catalog: Catalog, namespace: Namespace, page: PageRequest
) -> Page[TableIdent]:
    """The tables in ``namespace`` the caller may see, one page."""
    found = await catalog.tables.list(namespace, page)
    return Page(visible_objects(context, catalog.name, found.items, SecurableType.TABLE), found.next_token)


async def table_exists(catalog: Catalog, ident: TableIdent) -> None:
    """Raises NoSuchTable."""
    await catalog.tables.exists(ident)


async def commit_table(
    catalog: Catalog, ident: TableIdent, body: ChangeBody, limits: Limits, offload: Offload
) -> LoadedTable:
    """Apply an updateTable body (parsed where ``offload`` runs it, after its entries are counted)."""
    change = await offload(partial(table_change, ident, body, limits))
    return await catalog.tables.commit(change)


async def commit_transaction(
    context: RequestContext, catalog: Catalog, body: TransactionBody, limits: Limits, offload: Offload
) -> list[TableIdent]:
    """Apply every table change of a commitTransaction body, or none; returns the tables it changed."""
    changes = await offload(partial(table_changes, body, limits))
    audit_objects.note(context, *(change.ident for change in changes))
    await catalog.tables.commit_transaction(changes)
    return [change.ident for change in changes]


async def drop_table(
    context: RequestContext, catalog: Catalog, ident: TableIdent, purge: bool, trash: Trash | None = None
) -> None:
    """Drop the table; ``purge`` also deletes its files. With a trash that keeps the catalog's drops, the
    table is kept there (restorable) and a purge waits for the end of the retention."""
    if trash is not None and trash.keeps(catalog):
        await trash.drop_table(catalog, ident, purge, context.principal)
        return
    await catalog.tables.drop(ident, purge)


async def rename_table(
    context: RequestContext, catalog: Catalog, source: IdentifierBody, destination: IdentifierBody
) -> None:
    renamed, target = body_ident(source), body_ident(destination)
    audit_objects.note(context, renamed, target)
    await catalog.tables.rename(renamed, target)


async def unregister_table(catalog: Catalog, ident: TableIdent) -> LoadedTable:
    """Forget the table, keeping its files; returns it as it was."""
    return await catalog.tables.unregister(ident)


async def report_metrics(catalog: Catalog, ident: TableIdent) -> None:
    """A metrics report is accepted for an existing table and not kept. Raises NoSuchTable."""
    await catalog.tables.exists(ident)
