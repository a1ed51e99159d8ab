"""Scheduled maintenance: every ``interval``, one replica sweeps each catalog whose policy is ``enabled``.

A sweep evaluates the tables commits marked since the last one, then walks on through the catalog's tables
(``sweep_max_tables`` at a time, resuming from a cursor in the state database) to find tables that writers
bypassing the proxy changed. Evaluating a table reads its metadata only (``attention.reasons``); a table that
needs attention, whose policy is ``enabled``, and that has no run queued or running and no scheduled run within
``min_run_interval`` gets a queued run of the policy's jobs, requested by ``irc-proxy``. Any replica's worker then
claims it as it claims a run requested through the API.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from irc_proxy.errors import CatalogError, NoSuchTable
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.maintenance.attention import reasons
from irc_proxy.handling.maintenance.runs import Maintenance
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.paging import PageRequest
from irc_proxy.handling.security.context import SYSTEM_PRINCIPAL
from irc_proxy.stores.maintenance import new_run
from irc_proxy.stores.maintenance_schedule import ScheduleStore

log = logging.getLogger("irc_proxy.maintenance")
ACTIVE = ("queued", "running")
Cursor = tuple[Namespace, str]


@dataclass(frozen=True)
class SweepOutcome:
    evaluated: int
    queued: int


class Scheduler:
    """Sweeps of every scheduled catalog, from one replica at a time (the sweep lease)."""

    def __init__(self, maintenance: Maintenance, store: ScheduleStore, poll_seconds: float, lease: timedelta) -> None:
        self.maintenance, self.store, self.poll_seconds, self.lease = maintenance, store, poll_seconds, lease

    async def run(self, catalogs: Mapping[str, Catalog]) -> None:
        """Sweep each scheduled catalog when it is due, until cancelled."""
        while True:
            for catalog in catalogs.values():
                if not self.maintenance.scheduled(catalog.name):
                    continue
                try:
                    await self.sweep(catalog)
                except CatalogError as exc:  # the state database is away: the next round tries again
                    log.warning("maintenance sweep of %s: %s", catalog.name, exc)
                except Exception:  # a bug: logged; the schedule of every catalog goes on
                    log.exception("maintenance sweep of %s failed", catalog.name)
            await asyncio.sleep(self.poll_seconds)

    async def sweep(self, catalog: Catalog) -> SweepOutcome | None:
        """Sweep ``catalog`` if it is due and no other replica sweeps it (None: not now)."""
        own = self.maintenance.policy_settings(catalog.name)
        holder = self.maintenance.holder
        cursor = await self.store.take_sweep(catalog.name, holder, own.interval, max(self.lease, own.interval))
        if cursor is None:
            return None
        evaluated = queued = 0
        for mark in await self.store.marks(catalog.name, own.sweep_max_tables):
            queued += await self._evaluate_one(catalog, TableIdent(mark.namespace, mark.name))
            evaluated += 1
            await self.store.unmark(catalog.name, mark)
        walked, after = await self._walk(catalog, cursor if cursor[1] else None, own.sweep_max_tables)
        for ident in walked:
            queued += await self._evaluate_one(catalog, ident)
            evaluated += 1
        await self.store.finish_sweep(catalog.name, holder, after)
        if evaluated:
            log.info("maintenance sweep of %s: %d tables evaluated, %d runs queued", catalog.name, evaluated, queued)
        return SweepOutcome(evaluated, queued)

    async def _evaluate_one(self, catalog: Catalog, ident: TableIdent) -> bool:
        """``evaluate``, with a table that cannot be read (damaged metadata, its storage away) passed over: one
        table never holds up the sweep of the others. Any other error is passed over too (logged as the bug it
        is): a table's writer controls its metadata and properties, and a sweep dying on it would die on it
        again next time (its mark stays the oldest, the walk's cursor never moves), stopping the schedule of
        every table of the catalog."""
        try:
            return await self.evaluate(catalog, ident)
        except CatalogError as exc:
            log.warning("maintenance sweep of %s: %s passed over: %s", catalog.name, ident, exc)
            return False
        except Exception:
            log.exception("maintenance sweep of %s: %s passed over", catalog.name, ident)
            return False

    async def evaluate(self, catalog: Catalog, ident: TableIdent) -> bool:
        """Queue a run of the table if it needs one (see the module); True when one was queued."""
        latest = await self.maintenance.store.page(catalog.name, ident.namespace, ident.name, 0, 1)
        if latest and latest[0].status in ACTIVE:
            return False
        try:
            loaded = await catalog.tables.load(ident)
        except NoSuchTable:
            return False
        policy = await self.maintenance.policy(catalog, ident, loaded.metadata.properties)
        own = policy.settings
        if not own.enabled:
            return False
        recent = datetime.now(UTC) - own.min_run_interval
        if latest and latest[0].requested_by == SYSTEM_PRINCIPAL and latest[0].created_at > recent:
            return False
        why = reasons(loaded.metadata, policy, int(time.time() * 1000))
        if not why:
            return False
        run = new_run(catalog.name, ident.namespace, ident.name, own.jobs, False, SYSTEM_PRINCIPAL)
        await self.maintenance.store.add(run)
        log.info("maintenance run %s of %s queued by the schedule: %s", run.id, ident, "; ".join(why))
        return True

    async def _walk(
        self, catalog: Catalog, cursor: Cursor | None, limit: int
    ) -> tuple[list[TableIdent], Cursor | None]:
        """Up to ``limit`` tables after ``cursor`` in (namespace, name) order, and where the next walk goes on
        (None: the walk reached the end; the next one starts over)."""
        found: list[TableIdent] = []
        for namespace in sorted(await self._namespaces(catalog)):
            if cursor is not None and namespace < cursor[0]:
                continue
            names = sorted(t.name for t in (await catalog.tables.list(namespace, PageRequest())).items)
            for name in names:
                if cursor is not None and (namespace, name) <= cursor:
                    continue
                found.append(TableIdent(namespace, name))
                if len(found) >= limit:
                    return found, (namespace, name)
        return found, None

    async def _namespaces(self, catalog: Catalog) -> list[Namespace]:
        """Every namespace of the catalog, nested ones included."""
        found: list[Namespace] = []
        waiting: list[Namespace] = [()]
        while waiting:
            parent = waiting.pop()
            try:
                children = (await catalog.namespaces.list(parent, PageRequest())).items
            except CatalogError:  # dropped meanwhile
                continue
            found += children
            waiting += children
        return found
