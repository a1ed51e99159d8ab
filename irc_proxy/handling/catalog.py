"""One configured catalog (a ``prefix``): its backend plus the services built on it."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import quote, urlencode

from pyiceberg.table.metadata import TableMetadata

from irc_proxy.backends.base import Backend, Capability, engine_views, forwarding
from irc_proxy.errors import (
    CatalogError,
    CommitStateUnknown,
    NoSuchWarehouse,
    ServiceUnavailable,
    Unsupported,
    from_error_body,
)
from irc_proxy.handling.federation.forwarding import Forwarder, UpstreamCall, UpstreamReply
from irc_proxy.handling.federation.remote import ForwardedServing
from irc_proxy.handling.federation.remote_reads import LOAD_TABLE, LOAD_VIEW, KeptLocations, RemoteReads
from irc_proxy.handling.federation.serving import Placement, ServedHere, Serving
from irc_proxy.handling.loaded import OpenedTable, Owns, Read, TableLoad, ViewLoad
from irc_proxy.handling.namespaces import Namespaces
from irc_proxy.handling.naming import Namespace, NamespaceCodec, TableIdent
from irc_proxy.handling.paging import Page, PageBinding, PageRequest
from irc_proxy.handling.security.access import visible_namespaces, visible_objects
from irc_proxy.handling.security.authz import SecurableType
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.handling.storage.locations import StorageLocations
from irc_proxy.handling.storage.occupancy import Occupancy
from irc_proxy.handling.storage.storage import CatalogStorage, files_exist
from irc_proxy.handling.storage.storage_reads import BoundedReader, ReadLimits, TableFiles
from irc_proxy.handling.tables.metadata import MetadataCache, MetadataFiles
from irc_proxy.handling.tables.tables import TableChange, Tables
from irc_proxy.handling.vending.vending import Vending
from irc_proxy.handling.views.views import CatalogViewIndex, Views
from irc_proxy.handling.views_index import NoViews, ViewIndex
from irc_proxy.stores.locations import LocationStore
from irc_proxy.stores.views import ViewStore
from irc_proxy.threads import ThreadRunner

LIST_NAMESPACES = "GET /v1/{prefix}/namespaces"
LIST_TABLES = "GET /v1/{prefix}/namespaces/{namespace}/tables"
LIST_VIEWS = "GET /v1/{prefix}/namespaces/{namespace}/views"
COMMIT_TABLE = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"


@dataclass(frozen=True)
class Catalog:
    """One catalog. Callers ask it, never where it runs: what it serves at all (``serves``: the endpoints it
    advertises), the remote catalog's answer to pass back unchanged (``pass_through``), and the tables, views
    and listings the proxy itself reads (the console, the scan planner), answered alike from either side."""

    name: str
    backend: Backend
    codec: NamespaceCodec
    namespaces: Namespaces
    tables: Tables
    views: Views | None
    serving: Serving
    """Where each operation runs (here, or forwarded to a remote catalog) and what ``/v1/config`` says."""
    vending: Vending | None = None
    """Storage access delegation (vended credentials, remote signing); None when not configured."""
    forwarder: Forwarder | None = None
    """Sends operations placed ``FORWARDED`` to the remote catalog (None when nothing is forwarded)."""
    scan_planning: str = "offered"
    """``off``, ``offered`` or ``preferred``: whether clients plan scans here (settings ``scan_planning``)."""
    remote: RemoteReads | None = None
    """What the proxy itself reads from the remote catalog (None when nothing is forwarded)."""

    @classmethod
    def build(
        cls,
        name: str,
        backend: Backend,
        separator: str,
        threads: ThreadRunner,
        view_store: ViewStore | None = None,
        vending: Vending | None = None,
        metadata_cache: MetadataCache | None = None,
        location_store: LocationStore | None = None,
        *,
        allowed_locations: Sequence[str],
        read_limits: ReadLimits,
        allow_overlap: bool = False,
        scan_planning: str = "offered",
        kept_locations: Sequence[str] = (),
    ) -> Catalog:
        """Wire one catalog; without a view store it serves no views. Catalogs may share one metadata cache.

        Every location a client names must lie in ``allowed_locations`` (as settings normalised them: a catalog's
        own, else its warehouse); without a location store, live tables' storage is not kept apart.
        ``kept_locations``: where the proxy keeps its own files, never read for a remote catalog's table
        (``remote_reads.KeptLocations``).
        """
        codec = NamespaceCodec(separator)
        remote = forwarding(backend)
        if remote is not None:  # a remote REST catalog: tables are forwarded to it
            remote.use_separator(separator)
        index: ViewIndex = CatalogViewIndex(view_store, name, engine_views(backend)) if view_store else NoViews()
        locations = StorageLocations(name, allowed_locations)
        occupancy = Occupancy(name, location_store, allow_overlap)

        async def exists(location: str) -> bool:
            if location.startswith("file:"):  # one stat: cheaper than a thread hop
                return files_exist(backend, location)
            return await threads.run(files_exist, backend, location)

        async def namespace_at(levels: Sequence[str]) -> bool:
            try:
                return await backend.namespace_exists(codec.to_flat(levels))
            except CatalogError:  # a name the backend cannot hold is no namespace
                return False

        storage = CatalogStorage(locations, occupancy, exists, backend.warehouse, namespace_at)
        namespaces = Namespaces(backend, codec, index, storage.confine)
        files = MetadataFiles(backend, threads, metadata_cache, locations=locations, limits=read_limits)
        tables = Tables(backend, codec, namespaces, index, files, storage, threads)
        occupancy.live["table"] = tables.live_paths
        views = None
        if view_store is not None:
            views = Views(name, backend, codec, namespaces, view_store, threads, tables)
            occupancy.live["view"] = views.live_paths
        if remote is None:
            served = ServedHere(views is not None, vending is not None, scan_planning, locations.java_file_io())
            return cls(name, backend, codec, namespaces, tables, views, served, vending, None, scan_planning)
        serving = ForwardedServing(remote.upstream, views is not None, scan_planning)
        forwarder = Forwarder(name, remote.upstream, codec)
        reads = RemoteReads(name, forwarder, threads, read_limits, KeptLocations(kept_locations))
        return cls(name, backend, codec, namespaces, tables, views, serving, vending, forwarder, scan_planning, reads)

    async def discover(self, context: RequestContext) -> None:
        """Learn what the catalog serves (a remote catalog reads its upstream's ``/v1/config`` once)."""
        await self.serving.discover(context)

    def serves(self, endpoint: str) -> bool:
        """Whether the catalog serves ``endpoint`` (``"<VERB> <template>"``) at all, here or forwarded (after
        ``discover``); what it does not serve it does not advertise either."""
        return self.serving.placement(endpoint) is not None

    def client_config(self, endpoints: list[str], idempotency_lifetime: str | None) -> dict[str, Any]:
        """The ``/v1/config`` body (after ``discover``): this prefix, the ``endpoints`` it serves, and what
        the catalog adds (a remote catalog: the upstream's defaults, overrides and idempotency lifetime)."""
        return self.serving.client_config(self.name, endpoints, idempotency_lifetime)

    async def pass_through(
        self, context: RequestContext, endpoint: str, make_call: Callable[[], Awaitable[UpstreamCall]]
    ) -> UpstreamReply | None:
        """The remote catalog's reply to the caller's request for ``endpoint`` (``make_call`` builds it, only
        when it is sent), or None when the catalog answers the operation itself (after ``discover``).

        Raises:
            CommitStateUnknown, ServiceUnavailable, BadRequest: as ``forwarding.Forwarder.send``.
        """
        if self.forwarder is None or self.serving.placement(endpoint) is not Placement.FORWARDED:
            return None
        return await self.forwarder.send(context, await make_call())

    async def _remote_for(self, context: RequestContext, endpoint: str) -> RemoteReads | None:
        """The remote catalog's reads when it answers ``endpoint``, else None (answered here)."""
        if self.remote is None:
            return None
        await self.serving.discover(context)
        return self.remote if self.serving.placement(endpoint) is Placement.FORWARDED else None

    # What the proxy itself reads (the console, the scan planner) ------------------------------------------
    async def current_location(self, context: RequestContext, ident: TableIdent) -> str | None:
        """The table's current metadata location when known cheaply (no file read, no remote call), else None.
        Raises NoSuchTable."""
        if await self._remote_for(context, LOAD_TABLE) is not None:
            return None
        return await self.tables.current_location(ident)

    async def load_table(self, context: RequestContext, ident: TableIdent) -> TableLoad:
        """The table's metadata location and (v3-aware) metadata. Raises NoSuchTable and the remote's errors."""
        remote = await self._remote_for(context, LOAD_TABLE)
        if remote is not None:
            return await remote.load_table(context, ident)
        loaded = await self.tables.load(ident)
        return TableLoad(loaded.metadata_location or "", loaded.metadata)

    async def load_view(self, context: RequestContext, ident: TableIdent) -> ViewLoad:
        """The view's metadata location and metadata. Raises NoSuchView, Unsupported and the remote's errors."""
        remote = await self._remote_for(context, LOAD_VIEW)
        if remote is not None:
            return await remote.load_view(context, ident)
        view = await self.require_views().load(ident)
        return ViewLoad(view.metadata_location, view.metadata, stored_here=True)

    async def open_table(self, context: RequestContext, ident: TableIdent) -> OpenedTable:
        """The table at its current metadata, opened for reading the files it names (scan planning): a remote
        catalog's table is read with the storage access its upstream vends to the proxy."""
        remote = await self._remote_for(context, LOAD_TABLE)
        if remote is not None:
            return await remote.open_table(context, ident)
        tables = self.tables
        loaded = await tables.load(ident)
        assert loaded.metadata_location is not None
        reader = tables.files.reader

        def files(metadata: TableMetadata, max_bytes: int | None = None) -> tuple[Read, Owns]:
            owned = TableFiles(metadata, tables.storage.locations)
            bounded = reader
            if max_bytes is not None:
                limits = ReadLimits(max_bytes, reader.limits.timeout)
                bounded = BoundedReader(self.backend, limits, tables.storage.locations)
            return partial(bounded.read, roots=owned.real_roots), owned.owns

        load = TableLoad(loaded.metadata_location, loaded.metadata)
        storage = await tables.file_io_properties(loaded.metadata.location, loaded.metadata.properties)
        return OpenedTable(load, self.name, tables.files.read, files, storage)

    async def commit_table(self, context: RequestContext, change: TableChange) -> None:
        """Commit ``change`` through the catalog's normal commit path: here (``Tables.commit``, honouring
        ``base_location``), or upstream through the same forwarding a client's commit takes, as ``context``'s
        principal (the proxy itself: its own credentials). Raises CommitFailed when a requirement no longer
        holds, and the other commit errors (CommitStateUnknown, ServiceUnavailable, ...)."""
        if await self._remote_for(context, COMMIT_TABLE) is None:
            await self.tables.commit(change)
            return
        assert self.forwarder is not None
        body = {
            "identifier": {"namespace": list(change.ident.namespace), "name": change.ident.name},
            "requirements": [r.model_dump(by_alias=True, mode="json") for r in change.requirements],
            "updates": [u.model_dump(by_alias=True, mode="json", exclude_none=True) for u in change.updates],
        }
        call = UpstreamCall(
            COMMIT_TABLE,
            change.ident.namespace,
            {"table": quote(change.ident.name, safe="")},
            headers=(("content-type", "application/json"),),
            body=json.dumps(body).encode(),
        )
        reply = await self.forwarder.send(context, call)
        if reply.status >= 400:
            if reply.bare_error is not None:
                raise (CommitStateUnknown if reply.commit_state_unknown else ServiceUnavailable)(reply.bare_error)
            raise from_error_body(reply.status, reply.body)

    async def list_namespaces(
        self, context: RequestContext, parent: Namespace, token: str | None, limit: int, pages: PageBinding
    ) -> Page[Namespace]:
        """One page of ``parent``'s children the caller may see. ``token`` as the caller holds it (sealed with
        ``pages``; an unfiltered forwarded listing's is the upstream's own)."""
        remote = await self._remote_for(context, LIST_NAMESPACES)
        if remote is not None:
            pairs = _page_query(token, limit) + ([("parent", "\x1f".join(parent))] if parent else [])
            listing = await remote.listing(context, LIST_NAMESPACES, None, _query(pairs), pages)
            found = [tuple(levels) for levels in listing.get("namespaces") or ()]
            return Page(found, listing.get("next-page-token") or None)
        listed = await self.namespaces.list(parent, _page_request(token, limit, pages))
        return Page(visible_namespaces(context, self.name, listed.items), listed.next_token)

    async def list_tables(
        self, context: RequestContext, namespace: Namespace, token: str | None, limit: int, pages: PageBinding
    ) -> Page[TableIdent]:
        """One page of the tables in ``namespace`` the caller may see (``token`` as in ``list_namespaces``)."""
        remote = await self._remote_for(context, LIST_TABLES)
        if remote is not None:
            return await _listed_objects(remote, context, LIST_TABLES, namespace, token, limit, pages)
        listed = await self.tables.list(namespace, _page_request(token, limit, pages))
        return Page(visible_objects(context, self.name, listed.items, SecurableType.TABLE), listed.next_token)

    async def list_views(
        self, context: RequestContext, namespace: Namespace, token: str | None, limit: int, pages: PageBinding
    ) -> Page[TableIdent]:
        """One page of the views in ``namespace`` the caller may see (``token`` as in ``list_namespaces``)."""
        remote = await self._remote_for(context, LIST_VIEWS)
        if remote is not None:
            return await _listed_objects(remote, context, LIST_VIEWS, namespace, token, limit, pages)
        listed = await self.require_views().list(namespace, _page_request(token, limit, pages))
        return Page(visible_objects(context, self.name, listed.items, SecurableType.VIEW), listed.next_token)

    def require_views(self) -> Views:
        if self.views is None:
            raise Unsupported(f"Catalog {self.name} does not serve views")
        return self.views

    def supports(self, capability: Capability) -> bool:
        return capability in self.backend.capabilities


def _page_request(token: str | None, limit: int, pages: PageBinding) -> PageRequest:
    return PageRequest(pages.open(token) if token else None, limit, pages)


def _page_query(token: str | None, limit: int) -> list[tuple[str, str]]:
    return [("pageSize", str(limit))] + ([("pageToken", token)] if token else [])


def _query(pairs: list[tuple[str, str]]) -> bytes:
    return urlencode(pairs, quote_via=quote).encode()


async def _listed_objects(
    remote: RemoteReads,
    context: RequestContext,
    endpoint: str,
    namespace: Namespace,
    token: str | None,
    limit: int,
    pages: PageBinding,
) -> Page[TableIdent]:
    listing = await remote.listing(context, endpoint, namespace, _query(_page_query(token, limit)), pages)
    idents = [TableIdent(tuple(i["namespace"]), str(i["name"])) for i in listing.get("identifiers") or ()]
    return Page(idents, listing.get("next-page-token") or None)


class Catalogs:
    """All catalogs of this process, by name, with the default one for un-prefixed routes."""

    def __init__(self, catalogs: dict[str, Catalog], default: str) -> None:
        self._catalogs = catalogs
        self.default = default

    def get(self, name: str | None) -> Catalog:
        """The catalog named ``name`` (the default when None). Raises NoSuchWarehouse."""
        catalog = self._catalogs.get(self.default if name is None else name)
        if catalog is None:
            raise NoSuchWarehouse(f"Warehouse does not exist: {name}")
        return catalog

    def has(self, name: str) -> bool:
        """Whether a catalog is named ``name``."""
        return name in self._catalogs

    def all(self) -> list[Catalog]:
        return list(self._catalogs.values())

    async def close(self) -> None:
        for catalog in self._catalogs.values():
            await catalog.backend.close()
