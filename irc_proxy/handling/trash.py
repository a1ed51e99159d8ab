"""Dropped tables and views kept for a retention period, restorable until then ("nothing lost by a mistaken DROP").

A drop on a catalog with a retention (``drop_retention``, default ``P7D``) moves the table's pointer to
the trash (``stores.trash``): the name is free at once, the metadata file and its files stay. A purge
asked for with the drop (``purgeRequested``) happens when the retention ends, so it can be undone too.

* :meth:`Trash.restore` registers the kept metadata file again, under the original or a new name
  (the checks of registerTable: confinement, occupied names 409, missing namespaces 404).
* Registering a kept metadata file by hand (how tables are moved) takes it out of the trash.
* :meth:`Trash.expire_once` expunges expired entries; several replicas share the work through claims
  in the state database, and an entry is re-checked (still claimed) just before anything is deleted;
  a purge holds the table's storage in the occupancy index while it deletes, so a register racing it
  is refused (or, having landed first, makes the purge delete nothing).

Views are kept the same way with their whole version history: their rows stay in the state database
(``ViewStore.move_to_trash``) and a restore moves them back. A Glue table's entry attributes
(parameters, description, owner) are kept with its entry and given back when it is restored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from irc_proxy import metrics
from irc_proxy.audit import AuditRecord, now
from irc_proxy.backends.base import Capability
from irc_proxy.errors import AlreadyExists, CatalogError, NoSuchNamespace, NotFound
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.occupancy import LocationOverlap
from irc_proxy.stores.locations import Owner
from irc_proxy.stores.trash import TrashEntry, TrashFilter, TrashStore, new_entry
from irc_proxy.stores.views import StoredView

__all__ = ["NoSuchTrashEntry", "Restore", "Restored", "Trash", "TrashEntry", "TrashFilter"]
log = logging.getLogger("irc_proxy.trash")
SYSTEM_PRINCIPAL = "irc-proxy"
"""Who expiry is done by, in the audit trail."""
EXPUNGE_LEASE = timedelta(minutes=10)
"""A claim this old belongs to a replica that stopped mid-expunge: another may take it over."""


class NoSuchTrashEntry(NotFound):
    """No kept entry with that id in the catalog."""


@dataclass(frozen=True)
class Restore:
    """Where a trash entry goes back to (None: where it was) and whether a missing namespace is created."""

    target: TableIdent | None = None
    create_namespace: bool = False


@dataclass(frozen=True)
class Restored:
    """Where a trash entry went back to."""

    ident: TableIdent
    kind: str
    metadata_location: str


def original(entry: TrashEntry) -> TableIdent:
    """The identifier the entry's object had when it was dropped."""
    return TableIdent(entry.namespace, entry.name)


class Trash:
    """The trash of every catalog of a process (each catalog has its own retention)."""

    def __init__(
        self,
        store: TrashStore,
        retention: dict[str, timedelta],
        audit: Callable[[AuditRecord], None] | None = None,
    ) -> None:
        self.store = store
        self._retention = retention
        self._owner = uuid.uuid4().hex
        self._audit = audit

    def audit(self, operation: str, entry: TrashEntry, principal: str, reason: str, started: float) -> None:
        """Record what happened to an entry outside a request (expiry, the command line) in the audit trail."""
        if self._audit is None:
            return
        self._audit(
            AuditRecord(
                time=now(),
                principal=principal,
                operation=operation,
                catalog=entry.catalog,
                object=str(original(entry)),
                status=200,
                request_id=f"trash-{entry.entry_id}",
                latency_ms=round((time.monotonic() - started) * 1000, 3),
                reason=reason,
            )
        )

    def keeps(self, catalog: Catalog) -> bool:
        """Whether drops in ``catalog`` go to the trash (a retention above zero, and tables held by the proxy)."""
        return self.retention(catalog) > timedelta(0) and catalog.supports(Capability.TABLE_COMMITS)

    async def drop_table(self, catalog: Catalog, ident: TableIdent, purge: bool, principal: str) -> None:
        """Drop the table into the trash: recorded first, so a lost database never loses the table."""
        location = await catalog.tables.current_location(ident)
        ns = tuple(ident.namespace)
        entry = new_entry(catalog.name, "table", ns, ident.name, location, principal, purge, self.retention(catalog))
        await self.store.add(entry)
        try:
            dropped = await catalog.tables.drop(ident, purge=False)
        except BaseException:
            await self.store.remove(catalog.name, entry.entry_id)
            raise
        if dropped.metadata_location != location or dropped.entry is not None:  # a commit may have landed
            kept = None if dropped.entry is None else json.loads(json.dumps(dropped.entry, default=str))
            await self.store.relocate(entry.entry_id, dropped.metadata_location, kept)
        metrics.TRASH_EVENTS.labels(event="kept").inc()

    async def drop_view(self, catalog: Catalog, ident: TableIdent, principal: str) -> None:
        """Drop the view into the trash: its rows and the entry move in one transaction."""
        retention, ns = self.retention(catalog), tuple(ident.namespace)

        def entry_for(stored: StoredView) -> TrashEntry:
            return new_entry(
                catalog.name, "view", ns, ident.name, stored.metadata_location, principal, False, retention
            )

        await catalog.require_views().drop_to_trash(ident, entry_for)
        metrics.TRASH_EVENTS.labels(event="kept").inc()

    def retention(self, catalog: Catalog) -> timedelta:
        return self._retention.get(catalog.name, timedelta(0))

    async def entries(self, catalog: Catalog, which: TrashFilter, offset: int, limit: int) -> list[TrashEntry]:
        return await self.store.page(catalog.name, which, offset, limit)

    async def entry(self, catalog: Catalog, entry_id: str) -> TrashEntry:
        found = await self.store.get(catalog.name, entry_id) if len(entry_id) <= 64 else None
        if found is None:
            raise NoSuchTrashEntry(f"No such trash entry in catalog {catalog.name}: {entry_id[:64]}")
        return found

    async def restore(self, catalog: Catalog, entry: TrashEntry, restore: Restore) -> Restored:
        """Bring the entry back. Raises AlreadyExists (409), NoSuchNamespace (404), NoSuchTrashEntry."""
        target = restore.target or original(entry)
        if restore.create_namespace:
            with contextlib.suppress(AlreadyExists):  # the usual case: it exists
                await catalog.namespaces.create(target.namespace, {})
        try:
            if entry.kind == "view":
                view = await catalog.require_views().restore(entry.entry_id, target)
                if view is None:  # restored, expunged or expired meanwhile
                    raise NoSuchTrashEntry(f"No such trash entry in catalog {catalog.name}: {entry.entry_id}")
                location = view.metadata_location
            else:
                table = await catalog.tables.register(
                    target.namespace, target.name, entry.metadata_location, False, entry.backend_entry
                )
                location = table.metadata_location or entry.metadata_location
                await self.store.remove_location(catalog.name, entry.metadata_location)
        except NoSuchNamespace:
            raise NoSuchNamespace(f"Namespace does not exist: {'.'.join(target.namespace)}") from None
        metrics.TRASH_EVENTS.labels(event="restored").inc()
        return Restored(target, entry.kind, location)

    async def registered(self, catalog: Catalog, metadata_location: str) -> None:
        """A live table or view now uses ``metadata_location``: its trash entries are claimed (never purged)."""
        for entry in await self.store.remove_location(catalog.name, metadata_location):
            if entry.kind == "view":
                await catalog.require_views().forget_trashed(entry.entry_id)
            metrics.TRASH_EVENTS.labels(event="claimed-by-register").inc()

    async def expunge(self, catalog: Catalog, entry: TrashEntry) -> None:
        """Forget the entry now, purging its files when its drop asked for a purge."""
        if not await self.store.remove(catalog.name, entry.entry_id):
            raise NoSuchTrashEntry(f"No such trash entry in catalog {catalog.name}: {entry.entry_id}")
        await self._let_go(catalog, entry)
        metrics.TRASH_EVENTS.labels(event="expunged").inc()

    async def expire_once(self, catalogs: dict[str, Catalog]) -> int:
        """Expunge every expired entry this replica can claim; returns how many."""
        done = 0
        # Only this replica's catalogs: an entry of a catalog it is not configured with waits for one that is.
        mine = [name for name, catalog in catalogs.items() if catalog.supports(Capability.TABLE_COMMITS)]
        while mine and (entry := await self.store.claim_expired(mine, self._owner, EXPUNGE_LEASE)) is not None:
            started = time.monotonic()
            catalog = catalogs[entry.catalog]
            if await self.store.still_claimed(entry.entry_id, self._owner):
                await self._let_go(catalog, entry)
            await self.store.finish(entry.entry_id, self._owner)
            metrics.TRASH_EVENTS.labels(event="expired").inc()
            log.info("trash entry %s (%s %s) expired", entry.entry_id, entry.kind, original(entry))
            reason = "retention ended" + ("; files purged as the drop asked" if entry.purge_requested else "")
            self.audit("trash.expire", entry, SYSTEM_PRINCIPAL, reason, started)
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

    async def _let_go(self, catalog: Catalog, entry: TrashEntry) -> None:
        """What ends an entry: a view's kept rows are deleted, a table's files purged if its drop asked for it."""
        if entry.kind == "view":
            await catalog.require_views().forget_trashed(entry.entry_id)
        elif entry.purge_requested:
            await self._purge(catalog, entry)

    async def _purge(self, catalog: Catalog, entry: TrashEntry) -> None:
        tables = catalog.tables
        try:
            metadata = await tables.files.read(entry.metadata_location)
        except CatalogError:
            metadata = None
        occupancy, purging = tables.storage.occupancy, Owner("purge", "", entry.entry_id)
        if metadata is not None:
            # The purge holds the table's storage while it deletes: a register of the same files racing it is
            # refused (it sees the purge's claim), and one that landed first makes the purge refuse.
            try:
                await occupancy.claim(purging, tables.storage.held_roots(metadata.location, metadata.properties))
            except LocationOverlap:
                log.warning(
                    "trash entry %s: its storage is used by a live object again; nothing purged", entry.entry_id
                )
                return
        try:
            await tables.files.purge_dropped(entry.metadata_location, table=str(original(entry)))
        finally:
            await occupancy.release(purging)
