"""Compaction by the proxy's local executor vs Spark's ``rewrite_data_files`` run directly, on the same table;
and a full Spark scan before vs after compaction.

Workload: one proxy process (local catalog, file:// warehouse); two identical tables (partitioned by ``region``)
of N small data files (50 rows each) written with pyarrow and added in one commit. Table ``a`` is compacted by
the proxy (``rewrite-data-files`` through the management API; the job's own ``seconds``), table ``b`` by
``CALL irc.system.rewrite_data_files(table => 'bench.b')`` in a warm local[2] SparkSession whose catalog is the
proxy (timed around the call); ``PAIRS`` fresh pairs (quick: 1), the order flipping, medians of each side. Both
bin-pack to the default 512 MiB target (one file per partition). Goal:
local throughput / Spark throughput (= Spark seconds / local seconds) >= 0.8. Then Spark reads ``a`` in full
(``count`` and ``sum``) at its snapshot before vs after compaction, alternating, 1 warm-up, 5 samples; goal:
after / before p50 <= 0.5. N = 1,000 (quick: 150).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from pyiceberg.catalog.rest import RestCatalog

from benchmarks.bench_compaction import ROWS_PER_FILE, local_compaction, small_files
from benchmarks.bench_spark_pipeline import session
from benchmarks.support import alternate, latency_rows, row, served_proxy

PAIRS = 3
"""Fresh table pairs compacted (one by each side): one timed Spark call swung 89-783 files/s between runs."""
CONFIG = """
[server.maintenance]
poll_seconds = 0.1
"""


def run(quick: bool = False) -> list[dict[str, object]]:
    files, pairs = (150, 1) if quick else (1000, PAIRS)
    local_times: list[float] = []
    spark_times: list[float] = []
    with (
        served_proxy(CONFIG) as proxy,
        httpx.Client(base_url=proxy.url, timeout=600) as http,
        tempfile.TemporaryDirectory(prefix="irc-bench-spark-") as scratch,
    ):
        rest = RestCatalog("proxy", uri=proxy.url, warehouse="local")
        rest.create_namespace("bench")
        spark = session(proxy.url, Path(scratch, "hadoop").as_uri(), Path(scratch))
        local_results: list[dict[str, Any]] = []
        try:
            for pair in range(pairs):  # a fresh pair of tables each time, the order flipping
                small_files(rest, f"a{pair}", files)
                small_files(rest, f"b{pair}", files)
                spark.sql(f"SELECT count(*) FROM irc.bench.b{pair}").collect()  # warm: session and catalog
                for side in ("local", "spark") if pair % 2 == 0 else ("spark", "local"):
                    if side == "local":
                        local_results.append(local_compaction(http, f"a{pair}"))
                        local_times.append(float(local_results[-1]["seconds"]))
                    else:
                        started = time.perf_counter()
                        spark.sql(f"CALL irc.system.rewrite_data_files(table => 'bench.b{pair}')").collect()
                        spark_times.append(time.perf_counter() - started)
            a = rest.load_table(("bench", "a0"))
            after = a.metadata.current_snapshot_id
            before = a.metadata.snapshots[0].snapshot_id

            def scan(snapshot: int | None) -> None:
                spark.read.option("snapshot-id", snapshot).table("irc.bench.a0").agg({"amount": "sum"}).collect()

            times = alternate(
                {"after compaction": lambda: scan(after), "before compaction": lambda: scan(before)},
                warmup=1,
                samples=3 if quick else 5,
            )
        finally:
            spark.stop()
    local_seconds, spark_seconds = statistics.median(local_times), statistics.median(spark_times)
    local = local_results[0]
    shape = f"{files} files of {ROWS_PER_FILE} rows in 3 partitions"
    throughput = row(
        "compaction local vs spark",
        f"{shape}: the proxy's rewrite-data-files (local executor) vs Spark's rewrite_data_files (local[2], warm); "
        f"medians of {pairs} fresh table pairs, alternating "
        f"(local {_seconds(local_times)}, Spark {_seconds(spark_times)})",
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


def _seconds(values: list[float]) -> str:
    return "/".join(f"{value:.2f}" for value in values) + " s"
