"""The sweep's walk over a real local catalog: bounded per sweep, resumed from its cursor, wrapping round at the
end, nested namespaces included; marked tables are evaluated besides the walk and forgotten once evaluated."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from irc_proxy.app import build_catalogs, build_maintenance, open_state, scheduler
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.tables.tables import TableCreate
from irc_proxy.settings import load_settings
from irc_proxy.threads import ThreadRunner

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def test_each_sweep_walks_at_most_sweep_max_tables_and_goes_on_where_the_last_stopped(tmp_path: Path) -> None:
    config = tmp_path / "irc-proxy.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[catalogs.local]\nkind = "local"\n'
        '[catalogs.local.maintenance]\nenabled = true\ninterval = "PT1S"\nsweep_max_tables = 2\n',
        encoding="utf-8",
    )
    settings = load_settings(config, environ={})
    state, threads = open_state(settings), ThreadRunner(4)
    catalogs = build_catalogs(settings, threads, state)
    catalog = catalogs.get("local")
    maintenance = build_maintenance(settings, state, threads)
    sweeps = scheduler(maintenance, settings)

    async def scenario() -> list[tuple[int, int]]:
        for namespace in (("a",), ("a", "inner"), ("b",)):
            await catalog.namespaces.create(namespace, {})
        for namespace, name in ((("a",), "t1"), (("a",), "t2"), (("a", "inner"), "t3"), (("b",), "t4"), (("b",), "t5")):
            await catalog.tables.create(namespace, TableCreate(name, SCHEMA))
        await maintenance.mark("local", [TableIdent(("b",), "t5")])
        outcomes = []
        for _ in range(4):
            outcome = await sweeps.sweep(catalog)
            assert outcome is not None
            outcomes.append((outcome.evaluated, outcome.queued))
            assert await sweeps.sweep(catalog) is None  # not due again before the interval
            time.sleep(1.05)
        assert await maintenance.schedule.marks("local", 10) == []  # type: ignore[union-attr]
        return outcomes

    try:
        # the mark and 2 walked; 2 walked; the last 1 (then the walk starts over); 2 again. No table has
        # snapshots, so none needs attention and nothing is queued.
        assert asyncio.run(scenario()) == [(3, 0), (2, 0), (1, 0), (2, 0)]
    finally:
        asyncio.run(catalogs.close())
        state.dispose()
