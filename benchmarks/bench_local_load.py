"""loadTable on the local backend with pyiceberg as the client: the proxy vs a bare app serving the same bytes,
and the proxy vs pyiceberg's SqlCatalog in-process.

Workload: one table of 3 columns with 10 append snapshots (metadata file ~10 KB), in a real
``irc-proxy serve`` process (SQLite catalog, file:// warehouse). Every side returns a pyiceberg ``Table``:

* ``RestCatalog.load_table`` through the proxy (warm);
* ``RestCatalog.load_table`` against ``tools/bare_app.py`` (hypercorn + Starlette, 1 worker) answering with
  the proxy's own response bytes: the limit of this HTTP stack, so the goal is proxy / bare <= 1.2;
* ``SqlCatalog.load_table`` on the same catalog.db and metadata files (SQL + file read + parse; no HTTP
  server can match it, so that row is informational).

Alternating order each round; warm-up 50 rounds, 300 timed rounds (quick: 2 snapshots, 20 + 100).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog

from benchmarks.bench_throughput import start_bare
from benchmarks.support import SCHEMA, alternate, free_port, latency_rows, rows, served_proxy

SNAPSHOTS = 10
PROXY, BARE, DIRECT = "proxy", "bare hypercorn+Starlette", "pyiceberg SqlCatalog"


def run(quick: bool = False) -> list[dict[str, object]]:
    warmup, samples = (20, 100) if quick else (50, 300)
    with served_proxy() as proxy, tempfile.TemporaryDirectory(prefix="irc-bench-") as tmp:
        rest = RestCatalog("proxy", uri=proxy.url, warehouse="local")
        rest.create_namespace("bench")
        table = rest.create_table(("bench", "orders"), schema=SCHEMA)
        snapshots = 2 if quick else SNAPSHOTS
        for i in range(snapshots):
            table.append(rows(100, i * 100))
        body_file = Path(tmp) / "body.json"
        body_file.write_bytes(httpx.get(f"{proxy.url}/v1/local/namespaces/bench/tables/orders").content)
        port = free_port()
        bare_process = start_bare(body_file, port)
        data = proxy.workdir / "data"
        direct = SqlCatalog(
            "local", uri=f"sqlite:///{data / 'catalog.db'}", warehouse=(data / "warehouse" / "local").as_uri()
        )
        try:
            bare = RestCatalog("bare", uri=f"http://127.0.0.1:{port}", warehouse="local")
            ident = ("bench", "orders")
            times = alternate(
                {
                    PROXY: lambda: rest.load_table(ident),
                    BARE: lambda: bare.load_table(ident),
                    DIRECT: lambda: direct.load_table(ident),
                },
                warmup,
                samples,
            )
        finally:
            direct.engine.dispose()
            bare_process.terminate()
            bare_process.wait(timeout=15)
    shape = f"load_table of a {snapshots}-snapshot table, pyiceberg RestCatalog; warm-up {warmup}, {samples} samples"
    bare_rows = latency_rows("local loadTable vs bare app", shape, times, PROXY, BARE, 1.2)
    direct_rows = latency_rows(
        "local loadTable vs SqlCatalog", f"{shape}; SqlCatalog in-process", times, PROXY, DIRECT, None
    )
    return bare_rows + direct_rows[:1]
