"""Record the storage of tables and views that existed before the occupancy index (once per catalog).

Runs in the background after start-up on catalogs whose index was never filled, so that a catalog
upgraded from an older irc-proxy gets the overlap check for its existing tables too. Replicas may run it
at the same time: recording is idempotent. Objects created meanwhile are recorded by their own requests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from irc_proxy.backends.base import Listing
from irc_proxy.errors import CatalogError
from irc_proxy.handling.catalog import Catalog
from irc_proxy.stores.locations import Owner

log = logging.getLogger(__name__)
BATCH = 500
CONCURRENCY = 4


async def _pages(fetch: Callable[[str | None, int], Awaitable[Listing]]) -> AsyncIterator[str]:
    token: str | None = None
    while True:
        listing = await fetch(token, BATCH)
        for name in listing.names:
            yield name
        if not listing.next_token:
            return
        token = listing.next_token


class Backfill:
    """Walks one catalog's namespaces, tables and views and records each object's storage roots."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._occupancy = catalog.tables.storage.occupancy

    async def run(self) -> int:
        """Record every object once; returns how many were recorded (0 when the catalog was indexed already)."""
        if await self._occupancy.indexed():
            return 0
        backend, views = self._catalog.backend, self._catalog.views
        owners: list[Owner] = []
        async for namespace in _pages(lambda token, limit: backend.list_namespaces("", token, limit)):
            try:
                async for name in _pages(self._tables_of(namespace)):
                    owners.append(Owner("table", namespace, name))
                if views is not None:
                    owners += [Owner("view", namespace, name) for name in await views.stored_names(namespace, BATCH)]
            except CatalogError as exc:  # dropped meanwhile, or unreadable: the others still count
                log.warning("storage index backfill of %s: namespace skipped (%s)", self._catalog.name, exc)
        limit = asyncio.Semaphore(CONCURRENCY)
        recorded = sum(await asyncio.gather(*(self._record(owner, limit) for owner in owners)))
        await self._occupancy.mark_indexed()
        log.info("storage index of catalog %s: %d existing tables and views recorded", self._catalog.name, recorded)
        return recorded

    def _tables_of(self, namespace: str) -> Callable[[str | None, int], Awaitable[Listing]]:
        def fetch(token: str | None, limit: int) -> Awaitable[Listing]:
            return self._catalog.backend.list_tables(namespace, token, limit)

        return fetch

    async def _record(self, owner: Owner, limit: asyncio.Semaphore) -> int:
        async with limit:
            ask = self._occupancy.live.get(owner.kind)
            try:
                paths = await ask(owner) if ask is not None else None
                if paths:
                    await self._occupancy.record(owner, paths)
                    return 1
            except CatalogError as exc:
                log.warning(
                    "storage index backfill of %s: %s %s skipped (%s)", self._catalog.name, owner.kind, owner.name, exc
                )
            return 0
