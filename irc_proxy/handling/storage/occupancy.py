"""No two live tables or views of a catalog share storage, unless the catalog allows overlap.

A table's storage roots are its location and any ``write.*.path`` outside it (``locations.table_paths``). A
root inside, equal to or containing another live object's root is refused: otherwise purging one object
deletes the other's files, and credentials vended for one reach the other. Roots are recorded in the state
database on create, register, commit, rename and drop (``stores/locations.py``). A recorded root is only
trusted after asking the object itself: rows of objects that are gone (dropped by another engine, a crash
between claim and create) are forgotten on the way, so the index heals instead of blocking names forever;
only a claim made moments ago (``PENDING_CLAIM``) is held without its object, as a create in flight.

A dropped object kept in the trash keeps its storage under a ``trash`` owner (``trash_owner``) until it is
restored, expunged or expires, so nothing else can take it meanwhile; a restore (or a register allowed to
claim the entry) *adopts* that claim: it is passed as ``adopting`` and ignored by that one check.

A table keeps the roots it held before a move (``set-location``, a changed ``write.*.path``) under an
``earlier`` owner (``earlier_owner``) for as long as it lives: its snapshots still read the files there, so no
other object may take them (and be vended credentials over them). They go with the table on rename, into the
trash on a kept drop (and back on restore), and are released when the table is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta

from irc_proxy.errors import BadRequest, CatalogError
from irc_proxy.handling.storage.locations import parse_location, shown
from irc_proxy.stores.locations import Holding, LocationStore, Owner

log = logging.getLogger(__name__)
LivePaths = Callable[[Owner], Awaitable[Sequence[str] | None]]
"""An object's current storage roots; None when it no longer exists, [] when it exists but its roots
cannot be read (its metadata file is gone or damaged)."""


class LocationOverlap(BadRequest):
    """A location inside, equal to or containing another live table's or view's location."""


PENDING_CLAIM = timedelta(seconds=60)
"""A claim younger than this whose object does not exist yet is taken for a create in flight (claims come
before the pointer lands), not for a leftover: it holds its roots. A crash between claim and create
blocks the roots for this long at most."""


TRASH = "trash"
"""The owner kind of a trash entry's storage (``Owner(TRASH, "", entry_id)``)."""


def trash_owner(entry_id: str) -> Owner:
    """Who holds a trash entry's storage while it is kept."""
    return Owner(TRASH, "", entry_id)


EARLIER = "earlier"
"""The owner kind of a live table's earlier roots (``Owner(EARLIER, namespace, name)``)."""
MAX_EARLIER = 1000
"""Earlier roots kept per table (distinct locations it moved away from); more are not recorded (logged)."""


def earlier_owner(owner: Owner) -> Owner | None:
    """Who holds the earlier roots of ``owner`` (tables only: a view's files are its metadata, kept in place)."""
    return Owner(EARLIER, owner.namespace, owner.name) if owner.kind == "table" else None


def _with_earlier(owners: Iterable[Owner]) -> list[Owner]:
    return [found for owner in owners for found in (owner, earlier_owner(owner)) if found is not None]


def _owners(exclude: Owner | None, adopting: Iterable[Owner]) -> frozenset[Owner]:
    return frozenset(_with_earlier([*([] if exclude is None else [exclude]), *adopting]))


def _pending(holding: Holding) -> bool:
    return holding.since is not None and datetime.now(UTC) - holding.since < PENDING_CLAIM


def location_key(location: str) -> str:
    """How a root is recorded: normalised, with the scheme family (``s3a://b/x`` is ``s3://b/x``)."""
    parsed = parse_location(location)
    return f"{parsed.family}://{parsed.authority}{parsed.path}"


class Occupancy:
    """One catalog's storage roots. Without a store (no state database) nothing is checked."""

    def __init__(self, catalog: str, store: LocationStore | None, allow_overlap: bool = False) -> None:
        self.catalog = catalog
        self._store = store
        self._allow_overlap = allow_overlap
        self.live: dict[str, LivePaths] = {}
        """Per kind (``table``, ``view``): how to ask an object for its current roots (set by the catalog)."""

    @property
    def allows_overlap(self) -> bool:
        """Whether objects may share storage (``allow_overlapping_locations``): then no check holds them apart."""
        return self._allow_overlap

    async def _conflicts(self, keys: Sequence[str], exclude: frozenset[Owner]) -> list[str]:
        """Keys of live roots of other objects that overlap ``keys``."""
        assert self._store is not None
        return await self._live(await self._store.holders(self.catalog, keys, exclude), keys)

    async def _live(self, holdings: Sequence[Holding], keys: Sequence[str]) -> list[str]:
        """Of ``holdings``, the roots their objects still hold that overlap ``keys`` (stale rows are healed)."""
        assert self._store is not None
        wanted = [parse_location(key) for key in keys]
        found: list[str] = []
        tables_alive: dict[Owner, bool] = {}  # earlier roots: their table asked once per check
        for holding in holdings:
            held = parse_location(holding.location)
            if not any(held.overlaps(w) for w in wanted):
                continue  # the database's LIKE may be case-insensitive
            if holding.owner.kind == EARLIER:  # held while its table lives
                table = Owner("table", holding.owner.namespace, holding.owner.name)
                if table not in tables_alive:
                    ask = self.live.get(table.kind)
                    tables_alive[table] = ask is None or await ask(table) is not None
                    if not tables_alive[table]:
                        await self._store.release(self.catalog, holding.owner)
                if tables_alive[table]:
                    found.append(holding.location)
                continue
            ask = self.live.get(holding.owner.kind)
            current = await ask(holding.owner) if ask is not None else [holding.location]
            if current is None:
                if _pending(holding):  # claimed moments ago: its object may be being created right now
                    found.append(holding.location)
                    continue
                await self._store.release(self.catalog, holding.owner)
                continue
            if not current:  # live, but its roots cannot be read now: trust the record
                found.append(holding.location)
                continue
            current_keys = [location_key(path) for path in current]
            if holding.location not in current_keys:
                await self.record(holding.owner, current_keys)  # moved since: re-record (kept as earlier)
            found += [k for k in current_keys if any(parse_location(k).overlaps(w) for w in wanted)]
        return found

    async def check_free(
        self,
        locations: Sequence[str],
        exclude: Owner | None = None,
        what: str = "Location",
        adopting: Iterable[Owner] = (),
    ) -> None:
        """Raise LocationOverlap if a location overlaps a live object's storage (other than ``exclude`` and
        the trash claims being ``adopting``)."""
        if self._store is None or self._allow_overlap or not locations:
            return
        keys = [location_key(location) for location in locations]
        if await self._conflicts(keys, _owners(exclude, adopting)):
            raise self._overlap(locations, what)

    def _overlap(self, locations: Sequence[str], what: str) -> LocationOverlap:
        shown_locations = ", ".join(shown(location) for location in locations)
        return LocationOverlap(
            f"{what} {shown_locations} overlaps the storage of another table or view in catalog {self.catalog}"
        )

    async def taken(self, location: str) -> bool:
        """Whether a live object's storage overlaps ``location`` (for choosing a free default location)."""
        if self._store is None:
            return False
        return bool(await self._conflicts([location_key(location)], frozenset()))

    async def claim(
        self,
        owner: Owner,
        locations: Sequence[str],
        what: str = "Location",
        adopting: Iterable[Owner] = (),
    ) -> None:
        """Record ``locations`` as ``owner``'s roots, refusing overlap with any other live object (the trash
        claims in ``adopting`` excepted: the caller takes them over and releases them once it landed).

        Recorded first, checked second: two replicas claiming overlapping roots at once both see the other
        and both refuse, never both succeed. On refusal what ``owner`` held before is recorded again.
        """
        if self._store is None:
            return
        keys = [location_key(location) for location in locations]
        previous = await self._store.held(self.catalog, owner)
        await self._store.hold(self.catalog, owner, keys)  # committed before the check (see above)
        if self._allow_overlap:
            return
        try:
            if await self._conflicts(keys, _owners(owner, adopting)):
                raise self._overlap(locations, what)
        except BaseException:
            await self._store.hold(self.catalog, owner, previous)
            raise

    async def record(self, owner: Owner, locations: Sequence[str]) -> None:
        """Record what ``owner`` holds now, refusing nothing (after a change landed, or to restore a record);
        a table's roots it no longer holds are kept as its earlier roots."""
        if self._store is None:
            return
        keys = [location_key(location) for location in locations]
        if (earlier := earlier_owner(owner)) is not None:
            left = [key for key in await self._store.held(self.catalog, owner) if key not in keys]
            if left:
                await self._keep_earlier(earlier, left)
        await self._store.hold(self.catalog, owner, keys)

    async def _keep_earlier(self, earlier: Owner, keys: Sequence[str]) -> None:
        assert self._store is not None
        held = await self._store.held(self.catalog, earlier)
        room = MAX_EARLIER - len(held)
        new = [key for key in dict.fromkeys(keys) if key not in held]
        if len(new) > room:
            log.warning("table %s: more than %d earlier locations, not all held", earlier.name, MAX_EARLIER)
        if new[: max(room, 0)]:
            await self._store.add(self.catalog, earlier, new[: max(room, 0)])

    async def earlier(self, owner: Owner) -> list[str]:
        """The earlier roots recorded for a table (a kept drop takes them into the trash)."""
        found = earlier_owner(owner)
        return [] if self._store is None or found is None else await self._store.held(self.catalog, found)

    async def inherit(self, holder: Owner, owner: Owner) -> None:
        """A table took over ``holder``'s claim (a restore): what it does not hold now becomes its earlier roots."""
        earlier = earlier_owner(owner)
        if self._store is None or earlier is None:
            return
        current = await self._store.held(self.catalog, owner)
        left = [key for key in await self._store.held(self.catalog, holder) if key not in current]
        if left:
            await self._keep_earlier(earlier, left)

    async def refresh(self, owner: Owner) -> None:
        """Record what ``owner`` holds now, asking the object itself (after a claim that did not become it:
        the roots claimed for nothing are dropped, not kept as earlier roots)."""
        ask = self.live.get(owner.kind)
        current = await ask(owner) if ask is not None else None
        if current is None:
            await self.release(owner)
        elif current and self._store is not None:  # [] = live but unreadable: keep what is recorded
            await self._store.hold(self.catalog, owner, [location_key(location) for location in current])

    async def holds(self, owner: Owner) -> bool:
        """Whether anything is recorded for ``owner`` (True without a store: nothing to record then)."""
        return self._store is None or bool(await self._store.held(self.catalog, owner))

    async def indexed(self) -> bool:
        """Whether the objects that predate the index were recorded (``backfill``); True without a store."""
        return self._store is None or await self._store.indexed(self.catalog)

    async def mark_indexed(self) -> None:
        if self._store is not None:
            await self._store.mark_indexed(self.catalog)

    async def release(self, owner: Owner) -> None:
        """Forget what ``owner`` holds (a table's earlier roots too)."""
        if self._store is not None:
            for each in _with_earlier([owner]):
                await self._store.release(self.catalog, each)

    async def forget(self, owner: Owner) -> None:
        """Release after the object is already gone: never raises (a row left behind heals on the next check)."""
        try:
            await self.release(owner)
        except CatalogError as exc:
            log.warning("could not forget the storage of %s %s: %s", owner.kind, owner.name, exc)

    async def move(self, source: Owner, target: Owner) -> None:
        """After a rename landed: the storage goes with the name. Never raises (logged)."""
        if self._store is None:
            return
        try:
            await self._store.move(self.catalog, source, target)
            earlier_source, earlier_target = earlier_owner(source), earlier_owner(target)
            if earlier_source is not None and earlier_target is not None:
                await self._store.move(self.catalog, earlier_source, earlier_target)
        except CatalogError as exc:
            log.warning("could not move the storage record of %s %s: %s", source.kind, source.name, exc)
