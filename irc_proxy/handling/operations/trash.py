"""Dropped tables and views kept for a retention period, restorable until then ("nothing lost by a mistaken DROP").

A drop on a catalog with a retention (``drop_retention``, default ``P7D``) moves the table's pointer to
the trash (``stores.trash``): the name is free at once, the metadata file and its files stay. A purge
asked for with the drop (``purgeRequested``) happens when the retention ends, so it can be undone too.

* :meth:`Trash.restore` registers the kept metadata file again, under the original or a new name
  (the checks of registerTable: confinement, occupied names 409, missing namespaces 404).
* A kept object's storage stays held in the occupancy index under a ``trash`` owner (``occupancy.trash_owner``)
  until it is restored, expunged or expires: no other table or view can take it, so a restore cannot be
  blocked (nor credentials vended over the kept files); a table's earlier locations
  (``occupancy.earlier_owner``) are held with it. A restore adopts that claim (what the table does not hold
  now becomes its earlier locations again). Entries kept by an older irc-proxy get their claim when the
  expiry loop starts (``hold_unclaimed``).
* Registering a kept metadata file by hand (how tables are moved) takes it out of the trash; who may
  do so is decided by ``trash_ops.claimable`` (the restore privileges).
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import partial

from irc_proxy import metrics
from irc_proxy.audit import AuditRecord, now
from irc_proxy.backends.base import Capability
from irc_proxy.errors import AlreadyExists, CatalogError, NoSuchNamespace, NotFound
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.namespaces import no_such_namespace
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.security.context import SYSTEM_PRINCIPAL
from irc_proxy.handling.storage.occupancy import TRASH, LocationOverlap, trash_owner
from irc_proxy.handling.storage.storage import table_owner
from irc_proxy.stores.locations import Owner
from irc_proxy.stores.trash import TrashEntry, TrashFilter, TrashStore, new_entry
from irc_proxy.stores.views import TRASH_NAMESPACE, StoredView

__all__ = ["NoSuchTrashEntry", "Restore", "Restored", "Trash", "TrashEntry", "TrashFilter"]
log = logging.getLogger("irc_proxy.trash")
EXPUNGE_LEASE = timedelta(minutes=10)
"""A claim this old belongs to a replica that stopped mid-expunge: another may take it over."""
BATCH = 500
"""Entries read per page when older entries get their storage claim."""


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

    def audit(
        self,
        operation: str,
        entry: TrashEntry,
        principal: str,
        reason: str,
        started: float,
        subject: TableIdent | None = None,
        request_id: str | None = None,
    ) -> None:
        """Record what happened to an entry in the audit trail: outside a request (expiry, the command line),
        or a second record of a request naming another object (``subject``: a restore's destination)."""
        if self._audit is None:
            return
        self._audit(
            AuditRecord(
                time=now(),
                principal=principal,
                operation=operation,
                catalog=entry.catalog,
                object=str(subject or original(entry)),
                status=200,
                request_id=request_id or f"trash-{entry.entry_id}",
                latency_ms=round((time.monotonic() - started) * 1000, 3),
                reason=reason,
            )
        )

    def audit_restore(
        self,
        operation: str,
        entry: TrashEntry,
        target: TableIdent,
        principal: str,
        reason: str,
        started: float,
        request_id: str | None = None,
    ) -> None:
        """A restore, under the original identifier and (when it went elsewhere) the destination."""
        for subject in dict.fromkeys([original(entry), target]):
            self.audit(operation, entry, principal, reason, started, subject, request_id)

    def keeps(self, catalog: Catalog) -> bool:
        """Whether drops in ``catalog`` go to the trash (a retention above zero, and tables held by the proxy)."""
        return self.retention(catalog) > timedelta(0) and catalog.supports(Capability.TABLE_COMMITS)

    def attach(self, catalog: Catalog) -> None:
        """Let the catalog's occupancy index ask whether a trash claim's entry still exists (a claim whose
        entry is gone, e.g. after a crash, is forgotten instead of blocking its storage forever)."""
        live = catalog.tables.storage.occupancy.live
        if TRASH not in live:
            live[TRASH] = partial(self._alive, catalog.name)

    async def _alive(self, catalog_name: str, owner: Owner) -> Sequence[str] | None:
        # [] = "held, roots as recorded"; None = gone (the index forgets the rows, after PENDING_CLAIM)
        return [] if await self.store.exists(catalog_name, owner.name) else None

    async def _table_roots(self, catalog: Catalog, metadata_location: str) -> list[str]:
        """The storage roots of a kept table's metadata file ([] when it cannot be read: nothing to hold)."""
        try:
            metadata = await catalog.tables.files.read(metadata_location)
        except CatalogError as exc:
            log.warning("trash: storage of %s not held: %s", metadata_location, exc)
            return []
        return catalog.tables.storage.held_roots(metadata.location, metadata.properties)

    async def _roots(self, catalog: Catalog, entry: TrashEntry) -> Sequence[str]:
        if entry.kind == "view":
            kept = await catalog.require_views().live_paths(Owner("view", TRASH_NAMESPACE, entry.entry_id))
            return kept or []
        return await self._table_roots(catalog, entry.metadata_location)

    async def drop_table(self, catalog: Catalog, ident: TableIdent, purge: bool, principal: str) -> None:
        """Drop the table into the trash: recorded first, so a lost database never loses the table; its storage
        is held for the entry before the table lets go of it, so nothing can take it in between."""
        self.attach(catalog)
        location = await catalog.tables.current_location(ident)
        ns = tuple(ident.namespace)
        entry = new_entry(catalog.name, "table", ns, ident.name, location, principal, purge, self.retention(catalog))
        occupancy, holder = catalog.tables.storage.occupancy, trash_owner(entry.entry_id)
        earlier = await occupancy.earlier(table_owner(catalog.codec.to_flat(ident.namespace), ident.name))
        await self.store.add(entry)
        try:
            await occupancy.record(holder, [*await self._table_roots(catalog, location), *earlier])
            dropped = await catalog.tables.drop(ident, purge=False)
        except BaseException:
            await self.store.remove(catalog.name, entry.entry_id)
            await occupancy.forget(holder)
            raise
        if dropped.metadata_location != location or dropped.entry is not None:  # a commit may have landed
            kept = None if dropped.entry is None else json.loads(json.dumps(dropped.entry, default=str))
            await self.store.relocate(entry.entry_id, dropped.metadata_location, kept)
            if dropped.metadata_location != location:
                roots = await self._table_roots(catalog, dropped.metadata_location)
                await occupancy.record(holder, [*roots, *earlier])
        metrics.TRASH_EVENTS.labels(event="kept").inc()

    async def drop_view(self, catalog: Catalog, ident: TableIdent, principal: str) -> None:
        """Drop the view into the trash: its rows and the entry move in one transaction; its storage is held
        for the entry first (under the entry's id, chosen here) and corrected to what the drop took."""
        self.attach(catalog)
        views, storage = catalog.require_views(), catalog.tables.storage
        retention, ns = self.retention(catalog), tuple(ident.namespace)
        entry_id = uuid.uuid4().hex
        holder, kept_roots = trash_owner(entry_id), list[str]()
        before = await views.live_paths(Owner("view", catalog.codec.to_flat(ident.namespace), ident.name))
        await storage.occupancy.record(holder, before or [])

        def entry_for(stored: StoredView) -> TrashEntry:
            kept_roots.extend(storage.held_roots(stored.metadata.location, stored.metadata.properties))
            entry = new_entry(
                catalog.name, "view", ns, ident.name, stored.metadata_location, principal, False, retention
            )
            return replace(entry, entry_id=entry_id)

        try:
            await views.drop_to_trash(ident, entry_for)
        except BaseException:
            await storage.occupancy.forget(holder)
            raise
        if kept_roots != list(before or []):  # changed meanwhile: hold what was really dropped
            await storage.occupancy.record(holder, kept_roots)
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

    async def find(self, entry_id: str) -> TrashEntry:
        """The kept entry ``entry_id`` in whichever catalog holds it (ids are unique across catalogs)."""
        found = await self.store.get(None, entry_id) if len(entry_id) <= 64 else None
        if found is None:
            raise NoSuchTrashEntry(f"No such trash entry: {entry_id[:64]}")
        return found

    async def kept_at(self, catalog: Catalog, metadata_location: str) -> list[TrashEntry]:
        """The kept entries whose metadata file is ``metadata_location`` (a register of it takes them)."""
        return await self.store.kept_at(catalog.name, metadata_location)

    async def restore(self, catalog: Catalog, entry: TrashEntry, restore: Restore) -> Restored:
        """Bring the entry back (its storage claim becomes the object's). Raises AlreadyExists (409),
        NoSuchNamespace (404), NoSuchTrashEntry, LocationOverlap (400: only for entries whose storage was
        taken before it was held)."""
        self.attach(catalog)
        target = restore.target or original(entry)
        holder = trash_owner(entry.entry_id)
        if restore.create_namespace:
            with contextlib.suppress(AlreadyExists):  # the usual case: it exists
                await catalog.namespaces.create(target.namespace, {})
        try:
            if entry.kind == "view":
                view = await catalog.require_views().restore(entry.entry_id, target, [holder])
                if view is None:  # restored, expunged or expired meanwhile
                    raise NoSuchTrashEntry(f"No such trash entry in catalog {catalog.name}: {entry.entry_id}")
                location = view.metadata_location
            else:
                table = await catalog.tables.register(
                    target.namespace, target.name, entry.metadata_location, False, entry.backend_entry, [holder]
                )
                location = table.metadata_location or entry.metadata_location
                owner = table_owner(catalog.codec.to_flat(target.namespace), target.name)
                await catalog.tables.storage.occupancy.inherit(holder, owner)
                await self._claimed(catalog, await self.store.remove_location(catalog.name, entry.metadata_location))
        except NoSuchNamespace:
            raise no_such_namespace(target.namespace, catalog.codec.separator) from None
        await catalog.tables.storage.occupancy.forget(holder)
        metrics.TRASH_EVENTS.labels(event="restored").inc()
        return Restored(target, entry.kind, location)

    async def registered(self, catalog: Catalog, metadata_location: str) -> None:
        """A live table or view now uses ``metadata_location``: its trash entries are claimed (never purged)."""
        for entry in await self._claimed(catalog, await self.store.remove_location(catalog.name, metadata_location)):
            if entry.kind == "view":
                await catalog.require_views().forget_trashed(entry.entry_id)
            metrics.TRASH_EVENTS.labels(event="claimed-by-register").inc()

    @staticmethod
    async def _claimed(catalog: Catalog, entries: list[TrashEntry]) -> list[TrashEntry]:
        """Entries taken out of the trash by a live object: their storage claims are its now (released)."""
        for entry in entries:
            await catalog.tables.storage.occupancy.forget(trash_owner(entry.entry_id))
        return entries

    async def expunge(self, catalog: Catalog, entry: TrashEntry) -> None:
        """Forget the entry now, purging its files when its drop asked for a purge."""
        if not await self.store.remove(catalog.name, entry.entry_id):
            raise NoSuchTrashEntry(f"No such trash entry in catalog {catalog.name}: {entry.entry_id}")
        await self._let_go(catalog, entry)
        await catalog.tables.storage.occupancy.forget(trash_owner(entry.entry_id))
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
            await catalog.tables.storage.occupancy.forget(trash_owner(entry.entry_id))
            metrics.TRASH_EVENTS.labels(event="expired").inc()
            log.info("trash entry %s (%s %s) expired", entry.entry_id, entry.kind, original(entry))
            reason = "retention ended" + ("; files purged as the drop asked" if entry.purge_requested else "")
            self.audit("trash.expire", entry, SYSTEM_PRINCIPAL, reason, started)
            done += 1
        return done

    async def hold_unclaimed(self, catalog: Catalog) -> int:
        """Claim the storage of entries kept before it was held (by an older irc-proxy); returns how many.

        Idempotent (replicas may run it together); an entry whose storage a live object took meanwhile stays
        unclaimed (logged): its restore answers 400 as before, and the live object keeps its files.
        """
        occupancy, done, offset = catalog.tables.storage.occupancy, 0, 0
        while True:
            page = await self.store.page(catalog.name, TrashFilter(), offset, BATCH)
            for entry in page:
                holder = trash_owner(entry.entry_id)
                if await occupancy.holds(holder) or not (roots := await self._roots(catalog, entry)):
                    continue
                try:
                    await occupancy.claim(holder, roots, what="Kept storage")
                    done += 1
                except LocationOverlap:
                    log.warning("trash entry %s: its storage is used by a live object; not held", entry.entry_id)
            if len(page) < BATCH:
                return done
            offset += BATCH

    async def run_expiry(self, catalogs: dict[str, Catalog], interval: float) -> None:
        """Expire entries every ``interval`` seconds until cancelled (first: hold older entries' storage)."""
        kept = [catalog for catalog in catalogs.values() if catalog.supports(Capability.TABLE_COMMITS)]
        for catalog in kept:
            self.attach(catalog)
            try:
                if held := await self.hold_unclaimed(catalog):
                    log.info("trash of catalog %s: storage of %d older entries held", catalog.name, held)
            except CatalogError as exc:  # the state database is away: the next start tries again
                log.warning("trash of catalog %s: older entries' storage not held: %s", catalog.name, exc)
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
            # refused (it sees the purge's claim), and one that landed first makes the purge refuse. The
            # entry's own trash claim is no conflict.
            roots = tables.storage.held_roots(metadata.location, metadata.properties)
            try:
                await occupancy.claim(purging, roots, adopting=[trash_owner(entry.entry_id)])
            except LocationOverlap:
                log.warning(
                    "trash entry %s: its storage is used by a live object again; nothing purged", entry.entry_id
                )
                return
        try:
            await tables.files.purge_dropped(entry.metadata_location, table=str(original(entry)))
        finally:
            await occupancy.release(purging)
