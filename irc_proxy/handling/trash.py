"""Dropped tables kept for a retention period, restorable until then (issue: "nothing lost by a mistaken DROP").

A drop on a catalog with a retention (``drop_retention``, default ``P7D``) moves the table's pointer to
the trash (``stores.trash``): the name is free at once, the metadata file and its files stay. A purge
asked for with the drop (``purgeRequested``) happens when the retention ends, so it can be undone too.

* :meth:`Trash.restore` registers the kept metadata file again, under the original or a new name
  (the checks of registerTable: confinement, occupied names 409, missing namespaces 404).
* Registering a kept metadata file by hand (how tables are moved) takes it out of the trash.
* :meth:`Trash.expire_once` expunges expired entries; several replicas share the work through claims
  in the state database, and an entry is re-checked (still claimed, its storage held by no live
  table) just before anything is deleted.

This increment keeps tables of local and Glue catalogs; views are still dropped at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta

from irc_proxy import metrics
from irc_proxy.backends.base import Capability
from irc_proxy.errors import AlreadyExists, CatalogError, NoSuchNamespace, NotFound
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.tables import LoadedTable
from irc_proxy.stores.trash import TrashEntry, TrashFilter, TrashStore

__all__ = ["NoSuchTrashEntry", "Restore", "Trash", "TrashFilter"]
log = logging.getLogger("irc_proxy.trash")
EXPUNGE_LEASE = timedelta(minutes=10)
"""A claim this old belongs to a replica that stopped mid-expunge: another may take it over."""


class NoSuchTrashEntry(NotFound):
    """No kept entry with that id in the catalog."""


@dataclass(frozen=True)
class Restore:
    """Where a trash entry goes back to (None: where it was) and whether a missing namespace is created."""

    target: TableIdent | None = None
    create_namespace: bool = False


class Trash:
    """The trash of every catalog of a process (each catalog has its own retention)."""

    def __init__(self, store: TrashStore, retention: dict[str, timedelta]) -> None:
        self.store = store
        self._retention = retention
        self._owner = uuid.uuid4().hex

    def keeps(self, catalog: Catalog) -> bool:
        """Whether drops in ``catalog`` go to the trash (a retention above zero, and tables held by the proxy)."""
        return self._retention.get(catalog.name, timedelta(0)) > timedelta(0) and catalog.supports(
            Capability.TABLE_COMMITS
        )

    async def drop_table(self, catalog: Catalog, ident: TableIdent, purge: bool, principal: str) -> None:
        """Drop the table into the trash: recorded first, so a lost database never loses the table."""
        location = await catalog.tables.current_location(ident)
        entry = await self.store.add(
            catalog.name,
            "table",
            tuple(ident.namespace),
            ident.name,
            location,
            principal,
            purge,
            self._retention[catalog.name],
        )
        try:
            dropped = await catalog.tables.drop(ident, purge=False)
        except BaseException:
            await self.store.remove(catalog.name, entry.entry_id)
            raise
        if dropped != location:  # a commit landed between the read and the drop
            await self.store.relocate(entry.entry_id, dropped)
        metrics.TRASH_EVENTS.labels(event="kept").inc()

    async def entries(self, catalog: Catalog, which: TrashFilter, offset: int, limit: int) -> list[TrashEntry]:
        return await self.store.page(catalog.name, which, offset, limit)

    async def entry(self, catalog: Catalog, entry_id: str) -> TrashEntry:
        found = await self.store.get(catalog.name, entry_id) if len(entry_id) <= 64 else None
        if found is None:
            raise NoSuchTrashEntry(f"No such trash entry in catalog {catalog.name}: {entry_id[:64]}")
        return found

    async def restore(self, catalog: Catalog, entry_id: str, restore: Restore) -> tuple[TableIdent, LoadedTable]:
        """Register the kept table again. Raises AlreadyExists (409), NoSuchNamespace (404), NoSuchTrashEntry."""
        entry = await self.entry(catalog, entry_id)
        target = restore.target or TableIdent(entry.namespace, entry.name)
        if restore.create_namespace:
            with contextlib.suppress(AlreadyExists):  # the usual case: it exists
                await catalog.namespaces.create(target.namespace, {})
        try:
            loaded = await catalog.tables.register(target.namespace, target.name, entry.metadata_location, False)
        except NoSuchNamespace:
            raise NoSuchNamespace(f"Namespace does not exist: {'.'.join(target.namespace)}") from None
        await self.store.remove_location(catalog.name, entry.metadata_location)
        metrics.TRASH_EVENTS.labels(event="restored").inc()
        return target, loaded

    async def registered(self, catalog: Catalog, metadata_location: str) -> None:
        """A live table now uses ``metadata_location``: its trash entries are claimed (never purged)."""
        if await self.store.remove_location(catalog.name, metadata_location):
            metrics.TRASH_EVENTS.labels(event="claimed-by-register").inc()

    async def expunge(self, catalog: Catalog, entry_id: str) -> None:
        """Forget the entry now, purging its files when its drop asked for a purge."""
        entry = await self.entry(catalog, entry_id)
        if not await self.store.remove(catalog.name, entry_id):
            raise NoSuchTrashEntry(f"No such trash entry in catalog {catalog.name}: {entry_id}")
        await self._purge(catalog, entry)
        metrics.TRASH_EVENTS.labels(event="expunged").inc()

    async def expire_once(self, catalogs: dict[str, Catalog]) -> int:
        """Expunge every expired entry this replica can claim; returns how many."""
        done = 0
        # Only this replica's catalogs: an entry of a catalog it is not configured with waits for one that is.
        mine = [name for name, catalog in catalogs.items() if catalog.supports(Capability.TABLE_COMMITS)]
        while mine and (entry := await self.store.claim_expired(mine, self._owner, EXPUNGE_LEASE)) is not None:
            catalog = catalogs[entry.catalog]
            if await self.store.still_claimed(entry.entry_id, self._owner):
                await self._purge(catalog, entry)
            await self.store.finish(entry.entry_id, self._owner)
            metrics.TRASH_EVENTS.labels(event="expired").inc()
            log.info(
                "trash entry %s (%s %s) expired", entry.entry_id, entry.kind, ".".join((*entry.namespace, entry.name))
            )
            done += 1
        return done

    async def run_expiry(self, catalogs: dict[str, Catalog], interval: float) -> None:
        """Expire entries every ``interval`` seconds until cancelled."""
        while True:
            try:
                await self.expire_once(catalogs)
            except CatalogError as exc:  # the state database is away: next round
                log.warning("trash expiry: %s", exc)
            await asyncio.sleep(interval)

    async def _purge(self, catalog: Catalog, entry: TrashEntry) -> None:
        if not entry.purge_requested:
            return
        tables = catalog.tables
        try:
            metadata = await tables.files.read(entry.metadata_location)
        except CatalogError:
            metadata = None
        if metadata is not None and await tables.storage.occupancy.taken(metadata.location):
            log.warning("trash entry %s: its storage is used by a live table again; nothing purged", entry.entry_id)
            return
        await tables.files.purge_dropped(entry.metadata_location, table=".".join((*entry.namespace, entry.name)))
