"""One configured catalog (a ``prefix``): its backend plus the services built on it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from irc_proxy.backends.base import Backend, Capability, engine_views, forwarding
from irc_proxy.errors import CatalogError, NoSuchWarehouse, Unsupported
from irc_proxy.handling.federation.forwarding import Forwarder, UpstreamCall, UpstreamReply
from irc_proxy.handling.federation.remote import ForwardedServing
from irc_proxy.handling.federation.serving import Placement, ServedHere, Serving
from irc_proxy.handling.namespaces import Namespaces
from irc_proxy.handling.naming import NamespaceCodec
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.handling.storage.locations import StorageLocations
from irc_proxy.handling.storage.occupancy import Occupancy
from irc_proxy.handling.storage.storage import CatalogStorage, files_exist
from irc_proxy.handling.storage.storage_reads import ReadLimits
from irc_proxy.handling.tables.metadata import MetadataCache, MetadataFiles
from irc_proxy.handling.tables.tables import Tables
from irc_proxy.handling.vending.vending import Vending
from irc_proxy.handling.views.views import CatalogViewIndex, Views
from irc_proxy.handling.views_index import NoViews, ViewIndex
from irc_proxy.stores.locations import LocationStore
from irc_proxy.stores.views import ViewStore
from irc_proxy.threads import ThreadRunner


@dataclass(frozen=True)
class Catalog:
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
    ) -> Catalog:
        """Wire one catalog; without a view store it serves no views. Catalogs may share one metadata cache.

        Every location a client names must lie in ``allowed_locations`` (as settings normalised them: a catalog's
        own, else its warehouse); without a location store, live tables' storage is not kept apart.
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
            served = ServedHere(views is not None, vending is not None, scan_planning)
            return cls(name, backend, codec, namespaces, tables, views, served, vending, None, scan_planning)
        serving = ForwardedServing(remote.upstream, views is not None, scan_planning)
        forwarder = Forwarder(name, remote.upstream, codec)
        return cls(name, backend, codec, namespaces, tables, views, serving, vending, forwarder, scan_planning)

    async def discover(self, context: RequestContext) -> None:
        """Learn what the catalog serves (a remote catalog reads its upstream's ``/v1/config`` once)."""
        await self.serving.discover(context)

    def placement(self, endpoint: str) -> Placement | None:
        """Where ``endpoint`` (``"<VERB> <template>"``) runs; None: not served here nor forwarded."""
        return self.serving.placement(endpoint)

    def client_config(self, endpoints: list[str], idempotency_lifetime: str | None) -> dict[str, Any]:
        """The ``/v1/config`` body (after ``discover``): this prefix, the ``endpoints`` it serves, and what
        the catalog adds (a remote catalog: the upstream's defaults, overrides and idempotency lifetime)."""
        return self.serving.client_config(self.name, endpoints, idempotency_lifetime)

    async def forward(self, context: RequestContext, call: UpstreamCall) -> UpstreamReply:
        """Send an operation placed ``FORWARDED`` to the remote catalog (``forwarding.Forwarder.send``)."""
        if self.forwarder is None:
            raise Unsupported(f"Catalog {self.name} forwards nothing")
        return await self.forwarder.send(context, call)

    def require_views(self) -> Views:
        if self.views is None:
            raise Unsupported(f"Catalog {self.name} does not serve views")
        return self.views

    def supports(self, capability: Capability) -> bool:
        return capability in self.backend.capabilities


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

    def all(self) -> list[Catalog]:
        return list(self._catalogs.values())

    async def close(self) -> None:
        for catalog in self._catalogs.values():
            await catalog.backend.close()
