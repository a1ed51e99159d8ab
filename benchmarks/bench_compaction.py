"""A full pyiceberg scan of a table of many small files, before vs after the proxy's ``rewrite-data-files``.

Workload: one proxy process (local catalog); a table (partitioned by ``region``) whose 2,000 data files of 50 rows
each are written with pyarrow and added in one commit (``add_files``); then one ``rewrite-data-files`` run through
the management API (the local executor: pyarrow, bin-pack to the default 512 MiB target: one file per
partition). The rewritten files stay until ``expire-snapshots``, so both sides read the same table through the
proxy: ``scan(snapshot_id=<before>)`` (2,000 files) and ``scan()`` (3 files), ``to_arrow()`` of every row,
alternating, 1 warm-up round, 5 samples (quick: 200 files, 3 samples). Goal: after / before p50 <= 0.5. The
compaction's own time is an informational row.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform

from benchmarks.support import SCHEMA, alternate, latency_rows, row, rows, served_proxy

CONFIG = """
[server.maintenance]
poll_seconds = 0.1
[catalogs.local]
kind = "local"
"""
ROWS_PER_FILE = 50


RUNS = "/management/v1/catalogs/local/maintenance/runs"


def small_files(rest: RestCatalog, name: str, files: int) -> Table:
    """Table ``bench.<name>``, partitioned by ``region``, of ``files`` data files of ``ROWS_PER_FILE`` rows each,
    written with pyarrow and added in one commit."""
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
    table = rest.create_table(("bench", name), schema=SCHEMA, partition_spec=spec)
    data = Path(urlparse(table.location()).path) / "data"
    data.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(files):
        region = ("eu", "us", "apac")[i % 3]
        chunk = rows(ROWS_PER_FILE * 3, i * ROWS_PER_FILE * 3).filter(pc.field("region") == region)
        path = data / f"small-{i:05d}-{region}.parquet"
        pq.write_table(chunk, path)
        paths.append(path.as_uri())
    table.add_files(paths)
    return table


def local_compaction(http: httpx.Client, name: str) -> dict[str, Any]:
    """The result of one ``rewrite-data-files`` run of ``bench.<name>`` requested through the management API."""
    body = {"table": {"namespace": ["bench"], "name": name}, "jobs": ["rewrite-data-files"]}
    run_id = http.post(RUNS, json=body).json()["id"]
    while (found := http.get(f"{RUNS}/{run_id}").json())["status"] in ("queued", "running"):
        time.sleep(0.05)
    result: dict[str, Any] = found["results"]["rewrite-data-files"]
    if result.get("status") != "succeeded":
        raise RuntimeError(f"the local compaction did not succeed: {found}")
    return result


def run(quick: bool = False) -> list[dict[str, object]]:
    files, samples = (200, 3) if quick else (2000, 5)
    with served_proxy(CONFIG) as proxy, httpx.Client(base_url=proxy.url, timeout=600) as http:
        rest = RestCatalog("proxy", uri=proxy.url, warehouse="local")
        rest.create_namespace("bench")
        before = small_files(rest, "small", files).metadata.current_snapshot_id
        started = time.perf_counter()
        result = local_compaction(http, "small")
        compaction_s = time.perf_counter() - started
        if result.get("data-files-rewritten") != files:
            raise RuntimeError(f"compaction did not rewrite the table: {result}")
        table = rest.load_table(("bench", "small"))
        times = alternate(
            {
                "after compaction": lambda: table.scan().to_arrow(),
                "before compaction": lambda: table.scan(snapshot_id=before).to_arrow(),
            },
            warmup=1,
            samples=samples,
        )
    workload = (
        f"full pyiceberg scan, {files} files of {ROWS_PER_FILE} rows vs {result['data-files-added']} after "
        f"rewrite-data-files; 1 warm-up, {samples} samples, alternating"
    )
    rows_out = latency_rows("compaction_scan", workload, times, "after compaction", "before compaction", 0.5)
    job = f"rewrite-data-files of {files} files (local executor)"
    rows_out.append(row("compaction_scan", job, "run s", compaction_s, None, None))
    return rows_out
