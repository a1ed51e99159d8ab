"""loadTable on the local backend: the proxy over HTTP (warm) vs pyiceberg's SqlCatalog in-process.

Workload: one table of 3 columns with 10 append snapshots (metadata file ~10 KB), in a real
``irc-proxy serve`` process (SQLite catalog, file:// warehouse). Both sides return a pyiceberg
``Table``: the proxy side is ``RestCatalog.load_table`` (HTTP + JSON parse), the baseline is
``SqlCatalog.load_table`` on the same catalog.db and the same metadata files (SQL + file read +
parse). Alternating order each round; warm-up 50 rounds, 300 timed rounds (quick: 2 snapshots, 5 + 20).
Goal: p50 ratio <= 1.0.
"""

from __future__ import annotations

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog

from benchmarks.support import SCHEMA, alternate, latency_rows, rows, served_proxy

SNAPSHOTS = 10


def run(quick: bool = False) -> list[dict[str, object]]:
    warmup, samples = (5, 20) if quick else (50, 300)
    with served_proxy() as proxy:
        rest = RestCatalog("proxy", uri=proxy.url, warehouse="local")
        rest.create_namespace("bench")
        table = rest.create_table(("bench", "orders"), schema=SCHEMA)
        snapshots = 2 if quick else SNAPSHOTS
        for i in range(snapshots):
            table.append(rows(100, i * 100))
        data = proxy.workdir / "data"
        direct = SqlCatalog(
            "local", uri=f"sqlite:///{data / 'catalog.db'}", warehouse=(data / "warehouse" / "local").as_uri()
        )
        ident = ("bench", "orders")
        times = alternate(
            {"proxy": lambda: rest.load_table(ident), "pyiceberg SqlCatalog": lambda: direct.load_table(ident)},
            warmup,
            samples,
        )
        direct.engine.dispose()
    workload = (
        f"load_table of a {snapshots}-snapshot table, RestCatalog via proxy vs SqlCatalog in-process; "
        f"warm-up {warmup}, {samples} samples"
    )
    return latency_rows("local loadTable", workload, times, "proxy", "pyiceberg SqlCatalog", 1.0)
