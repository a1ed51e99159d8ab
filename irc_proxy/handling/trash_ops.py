"""The trash operations of the management API, with their authorization.

Admins may do anything. Anyone else is held to the privileges the drop and the restore stand for:

* listing shows the entries whose object the caller could have dropped (``table.drop`` or
  ``view.drop`` on the original identifier; a caller with no grant in the catalog is refused);
* restoring needs that drop privilege at the source and the create privilege at the destination
  (``table.create`` or ``view.create`` on its namespace; ``namespace.create`` on the parent when a
  missing namespace is to be created);
* expunging needs the drop privilege at the source (a purge then does what the drop asked for).
"""

from __future__ import annotations

from irc_proxy.handling.access import Access
from irc_proxy.handling.authz import Privilege, SecurableType
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.trash import Restore, Restored, Trash, TrashEntry, TrashFilter, original

_DROP = {"table": Privilege.TABLE_DROP, "view": Privilege.VIEW_DROP}
_CREATE = {"table": Privilege.TABLE_CREATE, "view": Privilege.VIEW_CREATE}


def _kind(entry: TrashEntry) -> SecurableType:
    return SecurableType.VIEW if entry.kind == "view" else SecurableType.TABLE


async def _require_dropper(access: Access, entry: TrashEntry) -> None:
    await access.require(_DROP[entry.kind], access.of_kind(_kind(entry), original(entry)))


async def list_entries(
    access: Access, trash: Trash, catalog: Catalog, which: TrashFilter, offset: int, limit: int
) -> tuple[list[TrashEntry], int | None]:
    """One page of the entries the caller may see, and the offset of the next page (None: the last).

    A filtered page may hold fewer than ``limit`` entries (the filter runs on each page read).
    """
    held = await access.grants()
    if not held.admin:
        await access.uses_catalog()
    found = await trash.entries(catalog, which, offset, limit + 1)
    page = found[:limit]
    if not held.admin:
        page = [e for e in page if held.check(_DROP[e.kind], access.of_kind(_kind(e), original(e))).allowed]
    return page, (offset + limit if len(found) > limit else None)


async def restore_entry(access: Access, trash: Trash, catalog: Catalog, entry_id: str, restore: Restore) -> Restored:
    """Restore an entry under its own or a new identifier (see the module for the privileges)."""
    entry = await trash.entry(catalog, entry_id)
    await _require_dropper(access, entry)
    target = restore.target or original(entry)
    if restore.create_namespace:
        await access.require(Privilege.NAMESPACE_CREATE, access.namespace(target.namespace[:-1]))
    await access.require(_CREATE[entry.kind], access.namespace(target.namespace))
    return await trash.restore(catalog, entry, restore)


async def expunge_entry(access: Access, trash: Trash, catalog: Catalog, entry_id: str) -> None:
    """Forget an entry now (purging its files if its drop asked for it)."""
    entry = await trash.entry(catalog, entry_id)
    await _require_dropper(access, entry)
    await trash.expunge(catalog, entry)
