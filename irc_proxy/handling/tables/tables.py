"""Table operations over a backend's pointers: create, load, commit (with server-side retry), drop..."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.table.update import TableRequirement, TableUpdate

from irc_proxy.backends.base import Backend, Capability, DroppedTable, PointerSwap, TableCommits, table_commits
from irc_proxy.errors import (
    AlreadyExists,
    BadRequest,
    CommitFailed,
    NoSuchTable,
    NotAnIcebergTable,
    NotFound,
    Unsupported,
)
from irc_proxy.handling.input_errors import INPUT_ERRORS, explain
from irc_proxy.handling.namespaces import Namespaces, no_such_namespace
from irc_proxy.handling.naming import Namespace, NamespaceCodec, TableIdent, validate_name
from irc_proxy.handling.paging import Page, PageRequest, collect
from irc_proxy.handling.storage.locations import placement
from irc_proxy.handling.storage.storage import CatalogStorage, path_part, table_owner
from irc_proxy.handling.tables import commits
from irc_proxy.handling.tables.format_v3 import as_served, with_defaults
from irc_proxy.handling.tables.metadata import MetadataFiles, metadata_version, new_metadata_location
from irc_proxy.handling.tables.rebase import AppendRebase
from irc_proxy.handling.tables.retry import MAX_COMMIT_ATTEMPTS, KeyedLocks, backoff
from irc_proxy.handling.views_index import ViewIndex
from irc_proxy.metrics import COMMIT_CONFLICTS, COMMIT_RETRIES
from irc_proxy.stores.locations import Owner
from irc_proxy.threads import ThreadRunner


@dataclass(frozen=True)
class LoadedTable:
    """A table's metadata and where it lives (``metadata_location`` is None for a staged create)."""

    metadata_location: str | None
    metadata: TableMetadata
    config: dict[str, str] = field(default_factory=dict)
    metadata_json: bytes | None = None
    """``metadata`` already serialised (from the metadata cache), when at hand."""


@dataclass(frozen=True)
class TableCreate:
    name: str
    schema: Schema
    location: str | None = None
    partition_spec: PartitionSpec | None = None
    write_order: SortOrder | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    stage_create: bool = False


@dataclass(frozen=True)
class TableChange:
    ident: TableIdent
    requirements: Sequence[TableRequirement]
    updates: Sequence[TableUpdate]
    base_location: str | None = None
    """Commit only on this metadata file, with no rebase onto a newer one (a CommitFailed otherwise): the
    whole-metadata compare-and-swap of Java's ``TableOperations.commit(base, new)``, which table maintenance
    uses so that no concurrent change (a new tag, a new snapshot) is undone by a change planned without it."""


NEW_TABLE_DEFAULTS = {"write.parquet.compression-codec": "zstd"}
"""Properties a new table gets unless the request sets them, as Iceberg Java's catalogs persist them
(``TableMetadata.newTableMetadata``); engines that rely on the property read it from the table."""


def no_such_table(ident: TableIdent) -> NoSuchTable:
    return NoSuchTable(f"Table does not exist: {ident}")


class Tables:
    """One catalog's tables."""

    def __init__(
        self,
        backend: Backend,
        codec: NamespaceCodec,
        namespaces: Namespaces,
        views: ViewIndex,
        files: MetadataFiles,
        storage: CatalogStorage,
        threads: ThreadRunner,
    ) -> None:
        """``storage`` confines every location a client names and keeps live tables' storage apart."""
        self._backend = backend
        self._pointer_moves = table_commits(backend)
        self.storage = storage
        self._threads = threads
        self._codec = codec
        self._namespaces = namespaces
        self._views = views
        self.files = files
        self._locks = KeyedLocks()
        self._rebase = AppendRebase(backend, threads)

    async def file_io_properties(self, location: str, properties: Mapping[str, str]) -> dict[str, str]:
        """The properties of the backend's FileIO for a table at ``location``: what reading its files takes.
        In a worker thread: a process's first FileIO imports pyiceberg's pyarrow FileIO (~0.2-0.3 s), which
        stalled every request when the first scan plan after a start built it on the event loop."""
        io = await self._threads.run(self._backend.file_io, location, properties)
        return dict(io.properties)

    def _commits(self) -> TableCommits:
        """The backend's pointer moves; a catalog whose tables a remote catalog commits has none."""
        if self._pointer_moves is None:
            raise Unsupported("Tables of this catalog are created, committed and dropped by its remote catalog")
        return self._pointer_moves

    def moved_elsewhere(self, ident: TableIdent) -> AbstractContextManager[None]:
        """While inside, another process of this server (a maintenance child) may commit to the table: this
        process answers its pointer from the store, not its cache, and forgets what it cached once outside."""
        if self._pointer_moves is None:  # a remote catalog's table: nothing cached here
            return nullcontext()
        return self._pointer_moves.moved_elsewhere(self._codec.to_flat(ident.namespace), ident.name)

    # Reading ----------------------------------------------------------------------------
    async def list(self, namespace: Namespace, page: PageRequest) -> Page[TableIdent]:
        flat = await self._namespaces.flat_existing(namespace)

        async def fetch(token: str | None, limit: int) -> tuple[list[str], str | None]:
            listing = await self._backend.list_tables(flat, token, limit)
            return listing.names, listing.next_token

        found = await collect(fetch, page)
        return Page([TableIdent(namespace, name) for name in found.items], found.next_token)

    async def _pointer(self, ident: TableIdent) -> tuple[str, str | None]:
        flat = self._codec.to_flat(ident.namespace)
        return flat, await self._backend.load_table_pointer(flat, ident.name)

    async def load(self, ident: TableIdent, location: str | None = None) -> LoadedTable:
        """The table at its current pointer, or at ``location`` when the caller just read the pointer."""
        if location is None:
            location = await self.current_location(ident)
        cached = await self.files.load(location, check_exists=True)
        return LoadedTable(location, cached.metadata, metadata_json=cached.json)

    async def current_location(self, ident: TableIdent) -> str:
        """The current metadata location (cheap: no file is read). Raises NoSuchTable."""
        _, location = await self._pointer(ident)
        if location is None:
            raise no_such_table(ident)
        return location

    async def exists(self, ident: TableIdent) -> None:
        await self.current_location(ident)

    # Creating ---------------------------------------------------------------------------
    async def occupied(self, flat: str, name: str) -> bool:
        """Whether a table of any format holds the name (a Hive table blocks an Iceberg create)."""
        try:
            return await self._backend.load_table_pointer(flat, name) is not None
        except NotAnIcebergTable:
            return True

    async def _check_free(self, flat: str, ident: TableIdent) -> None:
        if await self.occupied(flat, ident.name):
            raise AlreadyExists(f"Table already exists: {ident}")
        if await self._views.view_exists(flat, ident.name):
            raise AlreadyExists(f"View with same name already exists: {ident}")

    async def default_location(self, namespace: Namespace, name: str) -> str:
        """Where a table or view goes when the client names no location: under the namespace's ``location``
        property, else ``<warehouse>/<level>/…/<name>``; a location already in use gets a unique suffix."""
        properties = await self._namespaces.load(namespace)
        if base := properties.get("location"):
            location = f"{base.rstrip('/')}/{path_part(name)}"
        else:
            location = "/".join([self._backend.warehouse, *(path_part(level) for level in namespace), path_part(name)])
        location = self.storage.confine(location, "Default location")
        return await self.storage.free_default(location)

    async def resolve_location(
        self, namespace: Namespace, name: str, requested: str | None, what: str = "Table location"
    ) -> str:
        """The location a new table (or view) gets: the requested one, confined, or a free default."""
        if requested:
            return self.storage.confine(requested, what)
        return await self.default_location(namespace, name)

    async def live_paths(self, owner: Owner) -> Sequence[str] | None:
        """The storage roots of a live table, or None when it is gone (for the occupancy index)."""
        try:
            loaded = await self.load(TableIdent(self._codec.from_flat(owner.namespace), owner.name))
        except NoSuchTable:
            return None
        except (NotFound, BadRequest):  # the name is taken but its metadata is gone or damaged: roots unknown
            return []
        return self.storage.held_roots(loaded.metadata.location, loaded.metadata.properties)

    async def create(self, namespace: Namespace, request: TableCreate) -> LoadedTable:
        ident = TableIdent(namespace, validate_name(request.name))
        flat = await self._namespaces.flat_existing(namespace)
        await self._check_free(flat, ident)
        location = await self.resolve_location(namespace, ident.name, request.location)
        try:
            metadata = new_table_metadata(
                schema=request.schema,
                partition_spec=request.partition_spec or UNPARTITIONED_PARTITION_SPEC,
                sort_order=request.write_order or UNSORTED_SORT_ORDER,
                location=location,
                properties=NEW_TABLE_DEFAULTS | dict(request.properties),
            )
        except NotImplementedError as exc:
            raise Unsupported(f"Cannot create table {ident}: {exc}") from exc
        except INPUT_ERRORS as exc:
            raise BadRequest(f"Cannot create table {ident}: {explain(exc)}") from exc
        metadata = as_served(with_defaults(metadata, request.schema))
        roots = self.storage.confine_paths(metadata.location, metadata.properties)
        if request.stage_create:
            await self.storage.check_free(roots, what="Table location")
            await self.files.make_directory(f"{location}/metadata")
            return LoadedTable(None, metadata)
        owner = table_owner(flat, ident.name)
        await self.storage.claim(owner, roots, what="Table location")
        metadata_location = new_metadata_location(metadata, 0)
        try:
            await self.files.write(metadata, metadata_location)
            created = await self._commits().swap_table_pointers(
                [PointerSwap(flat, ident.name, None, metadata_location, metadata)]
            )
        except BaseException:
            await self.storage.occupancy.refresh(owner)
            raise
        if not created:
            await self.storage.occupancy.refresh(owner)
            raise AlreadyExists(f"Table already exists: {ident}")
        return LoadedTable(metadata_location, metadata)

    async def register(
        self,
        namespace: Namespace,
        name: str,
        metadata_location: str,
        overwrite: bool,
        entry: Mapping[str, Any] | None = None,
        adopting: Sequence[Owner] = (),
    ) -> LoadedTable:
        """Point ``name`` at an existing metadata file (``entry``: a dropped table's backend attributes, restored;
        ``adopting``: the trash claims on its storage this register takes over)."""
        ident = TableIdent(namespace, validate_name(name))
        flat = await self._namespaces.flat_existing(namespace)
        if await self._views.view_exists(flat, ident.name):
            raise AlreadyExists(f"View with same name already exists: {ident}")
        try:
            current = await self._backend.load_table_pointer(flat, ident.name)
        except NotAnIcebergTable:
            raise AlreadyExists(f"Table already exists: {ident} (not an Iceberg table)") from None
        if current is not None and not overwrite:
            raise AlreadyExists(f"Table already exists: {ident}")
        owner = table_owner(flat, ident.name)
        metadata_location = self.storage.confine(metadata_location, "Metadata location")  # before any I/O
        exclude = owner if current is not None else None
        await self.storage.occupancy.check_free([metadata_location], exclude, "Metadata file", adopting)
        metadata = await self.files.read_fresh(metadata_location)
        roots = self.storage.confine_paths(metadata.location, metadata.properties)
        await self.storage.claim(owner, roots, "Table location", adopting)
        try:
            swapped = await self._commits().swap_table_pointers(
                [PointerSwap(flat, ident.name, current, metadata_location, metadata, entry)]
            )
        except BaseException:
            await self.storage.occupancy.refresh(owner)
            raise
        if not swapped:
            await self.storage.occupancy.refresh(owner)
            if current is None:  # the name was free and someone took it meanwhile: retrying cannot succeed
                raise AlreadyExists(f"Table already exists: {ident}")
            raise CommitFailed(f"Table {ident} changed while it was being registered; retry")
        return LoadedTable(metadata_location, metadata)

    # Committing -------------------------------------------------------------------------
    async def _stage(
        self, change: TableChange
    ) -> tuple[PointerSwap, TableMetadata | None, TableMetadata] | LoadedTable:
        """Validate and apply one change against current state; write the new metadata file."""
        ident = change.ident
        flat, current = await self._pointer(ident)
        base: TableMetadata | None = None
        if current is None:
            if not commits.is_create(change.requirements):
                raise no_such_table(ident)
            if not await self._backend.namespace_exists(flat):
                raise no_such_namespace(ident.namespace, self._codec.separator)
            if await self._views.view_exists(flat, ident.name):
                raise AlreadyExists(f"View with same name already exists: {ident}")
        else:
            base = await self.files.read(current)
        if change.base_location is not None and current != change.base_location:
            COMMIT_CONFLICTS.inc()
            raise CommitFailed(f"Commit failed: {ident} changed since the change was planned")
        try:
            commits.check_requirements(change.requirements, base)
            updates = await self._rebase(base, change.requirements, change.updates)  # stale blind appends
        except CommitFailed:
            COMMIT_CONFLICTS.inc()
            raise
        new = await self._threads.run(commits.apply_updates, base, updates, current)  # linear, but not free
        if base is not None and current is not None and new == base:
            return LoadedTable(current, base)
        await self._guard_locations(flat, ident, base, new)
        location = new_metadata_location(new, metadata_version(current) + 1 if current else 0)
        await self.files.write(new, location)
        return PointerSwap(flat, ident.name, current, location, new), base, new

    async def _guard_locations(
        self, flat: str, ident: TableIdent, base: TableMetadata | None, new: TableMetadata
    ) -> None:
        """A commit may not move a table's files (location, ``write.*.path``) outside the allowed locations or
        into another live table's or view's storage, nor point statistics or manifest lists outside: purge
        deletes them and vended credentials are scoped to them."""
        self.storage.confine_new_files(base, new)
        if base is not None and _placement(new) == _placement(base):
            return
        roots = self.storage.confine_paths(new.location, new.properties)
        await self.storage.check_free(roots, table_owner(flat, ident.name), "Table location")

    async def commit(self, change: TableChange) -> LoadedTable:
        """Commit one table's change, re-basing on the latest metadata while requirements hold."""
        async with self._locks(change.ident):
            return await self._commit(change)

    async def _commit(self, change: TableChange) -> LoadedTable:
        for attempt in range(MAX_COMMIT_ATTEMPTS):
            staged = await self._stage(change)
            if isinstance(staged, LoadedTable):
                return staged
            swap, base, new = staged
            if await self._commits().swap_table_pointers([swap]):
                await self._committed(swap, base, new)
                return LoadedTable(swap.new, new)
            COMMIT_RETRIES.inc()
            await backoff(attempt)
        COMMIT_CONFLICTS.inc()
        raise CommitFailed(f"Commit failed: {change.ident} is being changed concurrently; retry later")

    async def commit_transaction(self, changes: Sequence[TableChange]) -> None:
        """Commit changes to several tables all-or-nothing (one change is an ordinary commit)."""
        if len(changes) == 1:
            await self.commit(changes[0])
            return
        if Capability.MULTI_TABLE_COMMIT not in self._backend.capabilities:
            raise Unsupported("This catalog's backend cannot commit several tables atomically")
        idents = [c.ident for c in changes]
        if len(set(idents)) != len(idents):
            raise BadRequest("Invalid transaction: a table appears more than once")
        for attempt in range(MAX_COMMIT_ATTEMPTS):
            staged = [await self._stage(change) for change in changes]
            swaps = [s for s in staged if not isinstance(s, LoadedTable)]
            if not swaps or await self._commits().swap_table_pointers([s[0] for s in swaps]):
                for swap, base, new in swaps:
                    await self._committed(swap, base, new)
                return
            COMMIT_RETRIES.inc()
            await backoff(attempt)
        COMMIT_CONFLICTS.inc()
        raise CommitFailed("Commit failed: tables in the transaction are being changed concurrently; retry later")

    async def _committed(self, swap: PointerSwap, base: TableMetadata | None, new: TableMetadata) -> None:
        """After a swap landed: record moved storage roots, delete replaced metadata files if asked to."""
        if base is None or _placement(new) != _placement(base):
            roots = self.storage.confine_paths(new.location, new.properties)
            await self.storage.occupancy.record(table_owner(swap.namespace, swap.name), roots)
        if base is not None:
            await self.files.delete_replaced(base, new)

    # Removing ---------------------------------------------------------------------------
    async def drop(self, ident: TableIdent, purge: bool) -> DroppedTable:
        """Forget the table (``purge``: and delete its files); returns what its pointer was."""
        flat = self._codec.to_flat(ident.namespace)
        try:
            dropped = await self._commits().drop_table_pointer(flat, ident.name)
        except NoSuchTable:
            raise no_such_table(ident) from None
        await self.storage.occupancy.forget(table_owner(flat, ident.name))
        if purge:
            await self.files.purge_dropped(dropped.metadata_location, table=str(ident))
        return dropped

    async def unregister(self, ident: TableIdent) -> LoadedTable:
        loaded = await self.load(ident)
        await self.drop(ident, purge=False)
        return loaded

    async def rename(self, source: TableIdent, target: TableIdent) -> None:
        validate_name(target.name)
        source_flat, location = await self._pointer(source)
        if location is None:
            raise no_such_table(source)
        target_flat = await self._namespaces.flat_existing(target.namespace)
        if await self.occupied(target_flat, target.name):
            raise AlreadyExists(f"Table already exists: {target}")
        if await self._views.view_exists(target_flat, target.name):
            raise AlreadyExists(f"Cannot rename {source} to {target}. View already exists")
        try:
            await self._commits().rename_table(source_flat, source.name, target_flat, target.name)
        except NoSuchTable:
            raise no_such_table(source) from None
        except AlreadyExists:
            raise AlreadyExists(f"Table already exists: {target}") from None
        await self.storage.occupancy.move(table_owner(source_flat, source.name), table_owner(target_flat, target.name))


def _placement(metadata: TableMetadata) -> tuple[str | None, ...]:
    return placement(metadata.location, metadata.properties)
