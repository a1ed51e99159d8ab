"""The trash operations of the management API, with their authorization.

Admins may do anything. Anyone else is held to the privileges the drop and the restore stand for:

* listing shows the entries whose object the caller could have dropped (``table.drop`` or
  ``view.drop`` on the original identifier; a caller with no grant in the catalog is refused);
* restoring needs that drop privilege at the source and the create privilege at the destination
  (``table.create`` or ``view.create`` on its namespace; ``namespace.create`` on the parent when a
  missing namespace is to be created); restoring under another identifier also needs ``table.read`` or
  ``view.read`` on the original (else a drop privilege would become read and ownership of the object);
* registering a kept object's metadata file (``register``, ``register-view``) *is* a restore to the
  register's identifier: the same privileges, checked here for the register paths (``claimable``);
* expunging needs the drop privilege at the source (a purge then does what the drop asked for).

A restore is audited under both identifiers: the request's record names the original, a second record
(same request id) the destination when it differs; each says what was restored as what.
"""

from __future__ import annotations

import time

from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.operations.trash import Restore, Restored, Trash, TrashEntry, TrashFilter, original
from irc_proxy.handling.security.access import Access
from irc_proxy.handling.security.authz import Privilege, SecurableType
from irc_proxy.handling.storage.occupancy import trash_owner
from irc_proxy.stores.locations import Owner

_DROP = {"table": Privilege.TABLE_DROP, "view": Privilege.VIEW_DROP}
_CREATE = {"table": Privilege.TABLE_CREATE, "view": Privilege.VIEW_CREATE}
_READ = {"table": Privilege.TABLE_READ, "view": Privilege.VIEW_READ}


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


async def _require_restorer(access: Access, entry: TrashEntry, target: TableIdent, create_namespace: bool) -> None:
    """Drop at the source; ``namespace.create`` on the parent if asked; create at the destination; and read
    on the source when the destination is another identifier."""
    await _require_dropper(access, entry)
    if create_namespace:
        await access.require(Privilege.NAMESPACE_CREATE, access.namespace(target.namespace[:-1]))
    await access.require(_CREATE[entry.kind], access.namespace(target.namespace))
    if target != original(entry):
        await access.require(_READ[entry.kind], access.of_kind(_kind(entry), original(entry)))


def _audit_restore(access: Access, trash: Trash, entry: TrashEntry, target: TableIdent, how: str) -> None:
    """Name the original in the request's record and the destination in a second one (see the module)."""
    source, note = original(entry), access.context.audit
    what = f"{how} {entry.kind} {source} as {target} (trash entry {entry.entry_id}, dropped by {entry.dropped_by})"
    checks = list(dict.fromkeys((note.reason or "").split("; ")))  # one drop and one create check: "admin; admin"
    note.reason = "; ".join([*filter(None, checks), what])
    if how == "restored":
        note.object = str(source)
    if target != source or how != "restored":  # the request's own record names one of them
        other = target if how == "restored" else source
        operation, context = note.operation or "trash.restore", access.context
        trash.audit(operation, entry, context.principal, note.reason, time.monotonic(), other, context.request_id)


async def restore_entry(access: Access, trash: Trash, catalog: Catalog, entry_id: str, restore: Restore) -> Restored:
    """Restore an entry under its own or a new identifier (see the module for the privileges)."""
    entry = await trash.entry(catalog, entry_id)
    target = restore.target or original(entry)
    access.context.audit.object = str(original(entry))
    await _require_restorer(access, entry, target, restore.create_namespace)
    restored = await trash.restore(catalog, entry, restore)
    _audit_restore(access, trash, entry, restored.ident, "restored")
    return restored


async def claimable(
    access: Access, trash: Trash, catalog: Catalog, kind: str, metadata_location: str, target: TableIdent
) -> list[TrashEntry]:
    """The kept entries of ``kind`` a register of ``metadata_location`` as ``target`` takes out of the trash,
    once the caller is found to hold the restore privileges for each (Forbidden otherwise). Entries of the
    other kind are not taken: their storage claim refuses the register (400)."""
    entries = [entry for entry in await trash.kept_at(catalog, metadata_location) if entry.kind == kind]
    for entry in entries:
        await _require_restorer(access, entry, target, create_namespace=False)
    return entries


def adopted(entries: list[TrashEntry]) -> list[Owner]:
    """The storage claims of ``entries`` (a register passes them as ``adopting``)."""
    return [trash_owner(entry.entry_id) for entry in entries]


def registered(access: Access, trash: Trash, entries: list[TrashEntry], target: TableIdent) -> None:
    """Audit a register that took ``entries`` out of the trash under their original identifiers too."""
    for entry in entries:
        _audit_restore(access, trash, entry, target, "registered")


async def expunge_entry(access: Access, trash: Trash, catalog: Catalog, entry_id: str) -> None:
    """Forget an entry now (purging its files if its drop asked for it)."""
    entry = await trash.entry(catalog, entry_id)
    await _require_dropper(access, entry)
    await trash.expunge(catalog, entry)
