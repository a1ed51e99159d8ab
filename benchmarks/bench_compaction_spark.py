"""Compaction by the proxy's local executor vs Spark's ``rewrite_data_files`` run directly, on the same table;
and a full Spark scan before vs after compaction.

Workload: one proxy process (local catalog, file:// warehouse); two identical tables (partitioned by ``region``)
of N small data files (50 rows each) written with pyarrow and added in one commit. Table ``a`` is compacted by
the proxy (``rewrite-data-files`` through the management API; the job's own ``seconds``), table ``b`` by
``CALL irc.system.rewrite_data_files(table => 'bench.b')`` in a warm local[2] SparkSession whose catalog is the
proxy (timed around the call). Both bin-pack to the default 512 MiB target (one file per partition). Goal:
local throughput / Spark throughput (= Spark seconds / local seconds) >= 0.8. Then Spark reads ``a`` in full
(``count`` and ``sum``) at its snapshot before vs after compaction, alternating, 1 warm-up, 5 samples; goal:
after / before p50 <= 0.5. N = 1,000 (quick: 150).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import httpx
from pyiceberg.catalog.rest import RestCatalog

from benchmarks.bench_compaction import ROWS_PER_FILE, local_compaction, small_files
from benchmarks.bench_spark_pipeline import session
from benchmarks.support import alternate, latency_rows, row, served_proxy

CONFIG = """
[server.maintenance]
poll_seconds = 0.1
"""


def run(quick: bool = False) -> list[dict[str, object]]:
    files = 150 if quick else 1000
    with (
        served_proxy(CONFIG) as proxy,
        httpx.Client(base_url=proxy.url, timeout=600) as http,
        tempfile.TemporaryDirectory(prefix="irc-bench-spark-") as scratch,
    ):
        rest = RestCatalog("proxy", uri=proxy.url, warehouse="local")
        rest.create_namespace("bench")
        a, _b = small_files(rest, "a", files), small_files(rest, "b", files)
        before = a.metadata.current_snapshot_id
        spark = session(proxy.url, Path(scratch, "hadoop").as_uri(), Path(scratch))
        try:
            spark.sql("SELECT count(*) FROM irc.bench.b").collect()  # warm: the session and the catalog
            local = local_compaction(http, "a")
            started = time.perf_counter()
            spark.sql("CALL irc.system.rewrite_data_files(table => 'bench.b')").collect()
            spark_seconds = time.perf_counter() - started
            after = rest.load_table(("bench", "a")).metadata.current_snapshot_id

            def scan(snapshot: int | None) -> None:
                spark.read.option("snapshot-id", snapshot).table("irc.bench.a").agg({"amount": "sum"}).collect()

            times = alternate(
                {"after compaction": lambda: scan(after), "before compaction": lambda: scan(before)},
                warmup=1,
                samples=3 if quick else 5,
            )
        finally:
            spark.stop()
    local_seconds = float(local["seconds"])
    shape = f"{files} files of {ROWS_PER_FILE} rows in 3 partitions"
    throughput = row(
        "compaction local vs spark",
        f"{shape}: the proxy's rewrite-data-files (local executor) vs Spark's rewrite_data_files (local[2], warm)",
        "files/s",
        files / local_seconds,
        files / spark_seconds,
        0.8,
        higher_is_better=True,
    )
    scans = latency_rows(
        "spark scan after compaction",
        f"Spark full scan (sum) of {shape} vs the {local['data-files-added']} files after; 1 warm-up, alternating",
        times,
        "after compaction",
        "before compaction",
        0.5,
    )
    return [throughput, *scans[:1]]
