"""View operations for one catalog, on the proxy's view store, with view metadata files written
to the catalog's warehouse on every change (so register-view and direct readers work).

A backend with ``Capability.ENGINE_VIEWS`` also holds views other engines wrote (Glue VIRTUAL_VIEWs
of Trino or Spark): they are listed after the stored views, load and exist like them, hold their
names against creates and renames (409), and refuse changes (403): they are read-only here.
"""

from __future__ import annotations

import builtins
import contextlib
import gzip
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyiceberg.schema import Schema
from pyiceberg.view.metadata import ViewMetadata, ViewVersion

from irc_proxy.backends.base import Backend, EngineView, EngineViewSource, engine_views
from irc_proxy.errors import AlreadyExists, BadRequest, CommitFailed, Forbidden, NoSuchView
from irc_proxy.handling.namespaces import Namespaces
from irc_proxy.handling.naming import Namespace, NamespaceCodec, TableIdent, validate_name
from irc_proxy.handling.paging import Fetch, Page, PageRequest, collect
from irc_proxy.handling.storage.locations import METADATA_PATH, placement
from irc_proxy.handling.storage.storage import view_owner
from irc_proxy.handling.storage.storage_reads import parse_metadata
from irc_proxy.handling.tables.metadata import METADATA_CODEC, metadata_version
from irc_proxy.handling.tables.retry import MAX_COMMIT_ATTEMPTS, KeyedLocks, backoff
from irc_proxy.handling.tables.tables import Tables
from irc_proxy.handling.views import view_commits as vc
from irc_proxy.stores.locations import Owner
from irc_proxy.stores.trash import TrashEntry
from irc_proxy.stores.views import TRASH_NAMESPACE, StoredView, ViewStore
from irc_proxy.threads import ThreadRunner


def _check_registered(metadata: ViewMetadata) -> None:
    """A registered file must be a view every reader can show: its current version is one of its versions,
    version ids are unique, each version's schema is one of its schemas, the current one has valid SQL."""
    versions = {version.version_id: version for version in metadata.versions}
    if len(versions) != len(metadata.versions):
        raise BadRequest("Invalid view metadata file: two versions have the same version-id")
    current = versions.get(metadata.current_version_id)
    if current is None:
        raise BadRequest(
            f"Invalid view metadata file: current-version-id {metadata.current_version_id} names no version"
        )
    schemas = {schema.schema_id for schema in metadata.schemas}
    if any(version.schema_id not in schemas for version in metadata.versions):
        raise BadRequest("Invalid view metadata file: a version's schema-id names no schema")
    vc.validate_version(current)


@dataclass(frozen=True)
class LoadedView:
    metadata_location: str
    metadata: ViewMetadata
    config: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ViewCreate:
    name: str
    schema: Schema
    view_version: ViewVersion
    properties: Mapping[str, str]
    location: str | None = None


def no_such_view(ident: TableIdent) -> NoSuchView:
    return NoSuchView(f"View does not exist: {ident}")


def read_only(ident: TableIdent, view: EngineView) -> Forbidden:
    dialects = ", ".join(r.root.dialect for v in view.metadata.versions for r in v.representations)
    return Forbidden(
        f"View {ident} is owned by another engine ({dialects}) in {view.origin} and is read-only through irc-proxy"
    )


async def engine_view_exists(engines: EngineViewSource | None, namespace: str, name: str) -> bool:
    if engines is None:
        return False
    try:
        return await engines.load_engine_view(namespace, name) is not None
    except BadRequest:  # there, but unreadable: the name is still taken
        return True


class CatalogViewIndex:
    """The ViewIndex that tables and namespaces of one catalog consult (stored and engine views)."""

    def __init__(self, store: ViewStore, catalog: str, engines: EngineViewSource | None = None) -> None:
        self._store = store
        self._catalog = catalog
        self._engines = engines

    async def view_exists(self, namespace: str, name: str) -> bool:
        if await self._store.exists(self._catalog, namespace, name):
            return True
        return await engine_view_exists(self._engines, namespace, name)

    async def namespace_has_views(self, namespace: str) -> bool:
        return await self._store.any_in_namespace(self._catalog, namespace)

    async def count_views(self, namespace: str, cap: int) -> int:
        names, _ = await self._store.list_names(self._catalog, namespace, None, cap)
        if self._engines is not None and len(names) < cap:
            engine_views = await collect(self._engine_fetch(namespace), PageRequest(limit=cap - len(names)))
            return len(names) + len(engine_views.items)
        return len(names)

    def _engine_fetch(self, namespace: str) -> Fetch:
        engines = self._engines
        assert engines is not None

        async def fetch(token: str | None, limit: int) -> tuple[list[str], str | None]:
            listing = await engines.list_engine_views(namespace, token, limit)
            return listing.names, listing.next_token

        return fetch


class Views:
    """One catalog's views."""

    def __init__(
        self,
        catalog: str,
        backend: Backend,
        codec: NamespaceCodec,
        namespaces: Namespaces,
        store: ViewStore,
        threads: ThreadRunner,
        tables: Tables,
    ) -> None:
        self._catalog = catalog
        self._backend = backend
        self._codec = codec
        self._namespaces = namespaces
        self._store = store
        self._threads = threads
        self._tables = tables
        self._locks = KeyedLocks()
        self._engines = engine_views(backend)

    # Reading ----------------------------------------------------------------------------
    async def list(self, namespace: Namespace, page: PageRequest) -> Page[TableIdent]:
        """Stored views, then engine views (tokens ``s:<store token>`` and ``e:<backend token>`` say where)."""
        flat = await self._namespaces.flat_existing(namespace)

        async def stored(token: str | None, limit: int) -> tuple[list[str], str | None]:
            return await self._store.list_names(self._catalog, flat, token, limit)

        fetch = stored
        if (engines := self._engines) is not None:

            async def both(token: str | None, limit: int) -> tuple[list[str], str | None]:
                source, _, rest = (token or "s:").partition(":")
                if source == "s":
                    names, next_token = await stored(rest or None, limit)
                    return names, f"s:{next_token}" if next_token is not None else "e:"
                if source == "e":
                    listing = await engines.list_engine_views(flat, rest or None, limit)
                    return listing.names, f"e:{listing.next_token}" if listing.next_token is not None else None
                raise BadRequest(f"Invalid pageToken for views: {token!r}")

            fetch = both
        found = await collect(fetch, page)
        return Page([TableIdent(namespace, name) for name in found.items], found.next_token)

    async def _engine_view(self, flat: str, name: str) -> EngineView | None:
        return None if self._engines is None else await self._engines.load_engine_view(flat, name)

    async def _refuse_engine_view(self, flat: str, ident: TableIdent) -> None:
        """Raise Forbidden if another engine owns the view ``ident``: it is read-only here."""
        view = await self._engine_view(flat, ident.name)
        if view is not None:
            raise read_only(ident, view)

    def _loaded_engine_view(self, view: EngineView) -> LoadedView:
        """The engine view with its flat default namespace mapped to levels."""
        versions = [
            v.model_copy(update={"default_namespace": self._codec.from_flat(v.default_namespace[0])})
            if len(v.default_namespace) == 1
            else v
            for v in view.metadata.versions
        ]
        return LoadedView(view.metadata_location, view.metadata.model_copy(update={"versions": versions}))

    async def _stored(self, ident: TableIdent) -> StoredView:
        flat = self._codec.to_flat(ident.namespace)
        stored = await self._store.load(self._catalog, flat, ident.name)
        if stored is None:
            await self._refuse_engine_view(flat, ident)
            raise no_such_view(ident)
        return stored

    async def load(self, ident: TableIdent) -> LoadedView:
        flat = self._codec.to_flat(ident.namespace)
        stored = await self._store.load(self._catalog, flat, ident.name)
        if stored is not None:
            return LoadedView(stored.metadata_location, stored.metadata)
        engine_view = await self._engine_view(flat, ident.name)
        if engine_view is None:
            raise no_such_view(ident)
        return self._loaded_engine_view(engine_view)

    async def version_authors(self, ident: TableIdent) -> dict[int, str]:
        """Who made each version of a stored view (none for another engine's view)."""
        return await self._store.version_authors(self._catalog, self._codec.to_flat(ident.namespace), ident.name)

    async def exists(self, ident: TableIdent) -> None:
        flat = self._codec.to_flat(ident.namespace)
        if not await self._store.exists(self._catalog, flat, ident.name) and not await engine_view_exists(
            self._engines, flat, ident.name
        ):
            raise no_such_view(ident)

    # Writing ----------------------------------------------------------------------------
    async def _check_free(self, flat: str, ident: TableIdent) -> None:
        if await self._store.exists(self._catalog, flat, ident.name) or await engine_view_exists(
            self._engines, flat, ident.name
        ):
            raise AlreadyExists(f"View already exists: {ident}")
        if await self._tables.occupied(flat, ident.name):
            raise AlreadyExists(f"Table with same name already exists: {ident}")

    async def create(self, namespace: Namespace, request: ViewCreate, principal: str) -> LoadedView:
        ident = TableIdent(namespace, validate_name(request.name, "view"))
        flat = await self._namespaces.flat_existing(namespace)
        await self._check_free(flat, ident)
        storage = self._tables.storage
        location = await self._tables.resolve_location(namespace, ident.name, request.location, "View location")
        version = request.view_version.model_copy(
            update={"version_id": 1, "schema_id": vc.LAST_ADDED, "timestamp_ms": int(time.time() * 1000)}
        )
        updates: list[vc.ViewUpdate] = [
            vc.AssignUUID(action="assign-uuid", uuid=str(uuid.uuid4())),
            vc.SetLocation(action="set-location", location=location),
            vc.SetProperties(action="set-properties", updates=dict(request.properties)),
            vc.AddSchema.model_validate({"action": "add-schema", "schema": request.schema}),
            vc.AddViewVersion.model_validate({"action": "add-view-version", "view-version": version}),
            vc.SetCurrentViewVersion.model_validate({"action": "set-current-view-version", "view-version-id": -1}),
        ]
        metadata = vc.apply_view_updates(None, updates)
        owner = view_owner(flat, ident.name)
        roots = storage.confine_paths(metadata.location, metadata.properties)
        await storage.claim(owner, roots, what="View location")
        try:
            metadata_location = await self._write(metadata, None)
            await self._store.create(self._catalog, flat, ident.name, metadata, metadata_location, principal)
        except AlreadyExists:
            await self._tables.storage.occupancy.refresh(owner)
            raise AlreadyExists(f"View already exists: {ident}") from None
        except BaseException:
            await self._tables.storage.occupancy.refresh(owner)
            raise
        return LoadedView(metadata_location, metadata)

    async def stored_names(self, flat: str, batch: int = 500) -> Sequence[str]:
        """Every view this catalog keeps in the flat namespace ``flat`` (not engine views: they are read-only)."""
        names: builtins.list[str] = []  # ``list`` is this class's listing method
        token: str | None = None
        while True:
            found, token = await self._store.list_names(self._catalog, flat, token, batch)
            names += found
            if not token:
                return names

    async def live_paths(self, owner: Owner) -> Sequence[str] | None:
        """The storage roots of a live view, or None when it is gone (for the occupancy index)."""
        stored = await self._store.load(self._catalog, owner.namespace, owner.name)
        if stored is None:
            return None
        return self._tables.storage.held_roots(stored.metadata.location, stored.metadata.properties)

    async def replace(
        self,
        ident: TableIdent,
        requirements: Sequence[vc.AssertViewUUID],
        updates: Sequence[vc.ViewUpdate],
        principal: str,
    ) -> LoadedView:
        """Commit view updates on the latest version (compare-and-swap; re-based while requirements hold)."""
        flat = self._codec.to_flat(ident.namespace)
        async with self._locks(ident):
            for attempt in range(MAX_COMMIT_ATTEMPTS):
                stored = await self._stored(ident)
                vc.check_view_requirements(requirements, stored.metadata)
                metadata = vc.apply_view_updates(stored.metadata, updates)
                if metadata == stored.metadata:
                    return LoadedView(stored.metadata_location, stored.metadata)
                before = stored.metadata
                moved = placement(metadata.location, metadata.properties) != placement(
                    before.location, before.properties
                )
                if moved:  # a view's files may not leave the allowed locations nor enter another object's
                    roots = self._tables.storage.confine_paths(metadata.location, metadata.properties)
                    owner = view_owner(flat, ident.name)
                    await self._tables.storage.check_free(roots, owner, "View location")
                location = await self._write(metadata, stored.metadata_location)
                if await self._store.replace(self._catalog, flat, ident.name, stored, metadata, location, principal):
                    if moved:
                        await self._tables.storage.occupancy.record(owner, roots)
                    return LoadedView(location, metadata)
                await backoff(attempt)
        raise CommitFailed(f"Commit failed: view {ident} is being changed concurrently; retry later")

    async def drop(self, ident: TableIdent) -> None:
        flat = self._codec.to_flat(ident.namespace)
        try:
            await self._store.drop(self._catalog, flat, ident.name)
        except NoSuchView:
            await self._refuse_engine_view(flat, ident)
            raise no_such_view(ident) from None
        await self._tables.storage.occupancy.forget(view_owner(flat, ident.name))

    async def drop_to_trash(self, ident: TableIdent, entry_for: Callable[[StoredView], TrashEntry]) -> TrashEntry:
        """Drop the view into the trash (rows kept with every version, the name free at once)."""
        flat = self._codec.to_flat(ident.namespace)
        try:
            entry = await self._store.move_to_trash(self._catalog, flat, ident.name, entry_for)
        except NoSuchView:
            await self._refuse_engine_view(flat, ident)
            raise no_such_view(ident) from None
        await self._tables.storage.occupancy.forget(view_owner(flat, ident.name))
        return entry

    async def restore(self, entry_id: str, target: TableIdent, adopting: Sequence[Owner] = ()) -> LoadedView | None:
        """Bring a view back from the trash as ``target`` with its whole history; None when the entry is gone.

        Raises AlreadyExists (the name or the view's location is taken) or NoSuchNamespace.
        """
        flat = await self._namespaces.flat_existing(target.namespace)
        validate_name(target.name, "view")
        await self._check_free(flat, target)
        kept = await self._store.load(self._catalog, TRASH_NAMESPACE, entry_id)
        if kept is None:
            return None
        storage = self._tables.storage
        owner = view_owner(flat, target.name)
        roots = storage.confine_paths(kept.metadata.location, kept.metadata.properties)
        await storage.claim(owner, roots, "View location", adopting)
        try:
            restored = await self._store.restore_from_trash(self._catalog, entry_id, flat, target.name)
        except AlreadyExists:
            await storage.occupancy.refresh(owner)
            raise AlreadyExists(f"View already exists: {target}") from None
        except BaseException:
            await storage.occupancy.refresh(owner)
            raise
        if restored is None:
            await storage.occupancy.refresh(owner)
            return None
        return LoadedView(restored.metadata_location, restored.metadata)

    async def forget_trashed(self, entry_id: str) -> None:
        """Delete the rows of a view whose trash entry is gone (expunged, expired, or its file registered)."""
        with contextlib.suppress(NoSuchView):
            await self._store.drop(self._catalog, TRASH_NAMESPACE, entry_id)

    async def rename(self, source: TableIdent, target: TableIdent) -> None:
        validate_name(target.name, "view")
        source_flat = self._codec.to_flat(source.namespace)
        if not await self._store.exists(self._catalog, source_flat, source.name):
            await self._refuse_engine_view(source_flat, source)
            raise no_such_view(source)
        target_flat = await self._namespaces.flat_existing(target.namespace)
        if await self._store.exists(self._catalog, target_flat, target.name) or await engine_view_exists(
            self._engines, target_flat, target.name
        ):
            raise AlreadyExists(f"Cannot rename {source} to {target}. View already exists")
        if await self._tables.occupied(target_flat, target.name):
            raise AlreadyExists(f"Cannot rename {source} to {target}. Table already exists")
        try:
            await self._store.rename(self._catalog, source_flat, source.name, target_flat, target.name)
        except NoSuchView:
            raise no_such_view(source) from None
        except AlreadyExists:
            raise AlreadyExists(f"Cannot rename {source} to {target}. View already exists") from None
        occupancy = self._tables.storage.occupancy
        await occupancy.move(view_owner(source_flat, source.name), view_owner(target_flat, target.name))

    async def register(
        self, namespace: Namespace, name: str, metadata_location: str, principal: str, adopting: Sequence[Owner] = ()
    ) -> LoadedView:
        """Register a view file (``adopting``: the trash claims on its storage this register takes over)."""
        ident = TableIdent(namespace, validate_name(name, "view"))
        flat = await self._namespaces.flat_existing(namespace)
        await self._check_free(flat, ident)
        storage = self._tables.storage
        metadata_location = storage.confine(metadata_location, "Metadata location")  # before any I/O
        await storage.occupancy.check_free([metadata_location], None, "Metadata file", adopting)
        metadata = await self._read(metadata_location)
        _check_registered(metadata)
        owner = view_owner(flat, ident.name)
        roots = storage.confine_paths(metadata.location, metadata.properties)
        await storage.claim(owner, roots, "View location", adopting)
        try:
            await self._store.create(self._catalog, flat, ident.name, metadata, metadata_location, principal)
        except AlreadyExists:
            await self._tables.storage.occupancy.refresh(owner)
            raise AlreadyExists(f"View already exists: {ident}") from None
        except BaseException:
            await self._tables.storage.occupancy.refresh(owner)
            raise
        return LoadedView(metadata_location, metadata)

    # Files ------------------------------------------------------------------------------
    async def _write(self, metadata: ViewMetadata, previous: str | None) -> str:
        """Write the view metadata JSON (gzip unless write.metadata.compression-codec=none)."""
        directory = metadata.properties.get(METADATA_PATH) or f"{metadata.location.rstrip('/')}/metadata"
        gzipped = metadata.properties.get(METADATA_CODEC, "gzip").lower() == "gzip"
        version = metadata_version(previous) + 1 if previous else 0
        suffix = ".gz.metadata.json" if gzipped else ".metadata.json"
        location = f"{directory.rstrip('/')}/{version:05d}-{uuid.uuid4()}{suffix}"
        payload = metadata.model_dump_json().encode()
        await self._tables.files.write_file(
            location, gzip.compress(payload) if gzipped else payload, metadata.properties
        )
        return location

    async def _read(self, location: str) -> ViewMetadata:
        """Read within the limits of ``storage_reads`` (regular file, size, timeout); errors never quote it."""
        what = "View metadata file"
        return parse_metadata(ViewMetadata, await self._tables.files.read_bytes(location, what), location, what)
