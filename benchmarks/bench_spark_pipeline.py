"""A fixed PySpark job through the proxy vs Spark's built-in ``hadoop`` catalog on the same warehouse.

One local SparkSession (local[2], Iceberg 1.10.2 runtime, offline jars from tests/e2e/spark_jars.py)
with two catalogs on one ``file://`` warehouse directory: ``irc`` (REST, the proxy's local catalog)
and ``hcat`` (``type=hadoop``). The job, on a fresh table each time: CREATE TABLE; 5 INSERTs of
1,000 rows; MERGE of 1,000 rows (half matched); ``CALL system.rewrite_data_files``; read back
(count and sum). Warm-up: one job per catalog (JVM warm-up); then 5 jobs per catalog, alternating
(quick: skipped, it needs a JVM). Goal: wall-time ratio (median proxy / median hadoop) <= 1.10.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.support import row
from tests.support.server import ProxyProcess

INSERTS = 5
BATCH = 1000
SAMPLES = 5
"""Timed jobs per catalog (3 left single runs 1.095-1.117 apart on a quiet machine)."""


def job(spark: Any, catalog: str, namespace: str, table: str) -> None:
    name = f"{catalog}.{namespace}.{table}"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, region STRING, amount DOUBLE) USING iceberg")
    for i in range(INSERTS):
        spark.sql(
            f"INSERT INTO {name} SELECT id, CASE WHEN id % 2 = 0 THEN 'eu' ELSE 'us' END, id * 1.5 "
            f"FROM range({i * BATCH}, {(i + 1) * BATCH})"
        )
    start = INSERTS * BATCH - BATCH // 2
    spark.sql(
        f"MERGE INTO {name} t USING (SELECT id, 'merged' AS region, id * 2.0 AS amount "
        f"FROM range({start}, {start + BATCH})) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql(f"CALL {catalog}.system.rewrite_data_files(table => '{namespace}.{table}')").collect()
    ((count, _total),) = spark.sql(f"SELECT count(*), sum(amount) FROM {name}").collect()
    if count != INSERTS * BATCH + BATCH // 2:
        raise RuntimeError(f"{catalog}: read back {count} rows")


def session(proxy_url: str, warehouse: str, scratch: Path) -> Any:
    from tests.e2e.spark_jars import ensure_spark_jars
    from tests.support.spark_session import local_builder, started

    builder = (
        local_builder("irc-proxy-bench", scratch, ensure_spark_jars())
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.catalog.irc", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.irc.type", "rest")
        .config("spark.sql.catalog.irc.uri", proxy_url)
        .config("spark.sql.catalog.irc.warehouse", "local")
        .config("spark.sql.catalog.hcat", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.hcat.type", "hadoop")
        .config("spark.sql.catalog.hcat.warehouse", warehouse)
    )
    return started(builder)


def run(quick: bool = False) -> list[dict[str, object]]:
    workload = (
        f"PySpark local[2]: CREATE, {INSERTS} INSERTs x {BATCH} rows, MERGE, rewrite_data_files, read back; "
        f"REST via proxy vs hadoop catalog, same file:// warehouse; warm-up 1 job each, {SAMPLES} jobs each"
    )
    if quick:
        return [row("Spark pipeline", "skipped with --quick (starts a JVM)", "wall s", 0.0, None, None)]
    samples = SAMPLES
    with tempfile.TemporaryDirectory(prefix="irc-bench-spark-") as tmp:
        root = Path(tmp)
        warehouse = (root / "warehouse").as_uri()
        proxy = ProxyProcess(root, f'[catalogs.local]\nkind = "local"\nwarehouse = "{warehouse}"\n').start()
        spark = None
        try:
            spark = session(proxy.url, warehouse, root / "spark")
            spark.sql("CREATE NAMESPACE irc.bench_rest")
            spark.sql("CREATE NAMESPACE hcat.bench_hadoop")
            sides = {"proxy (REST)": ("irc", "bench_rest"), "hadoop catalog": ("hcat", "bench_hadoop")}
            times: dict[str, list[float]] = {side: [] for side in sides}
            for number in range(samples + 1):
                order = list(sides) if number % 2 == 0 else list(reversed(sides))
                for side in order:
                    catalog, namespace = sides[side]
                    started = time.perf_counter()
                    job(spark, catalog, namespace, f"job{number}")
                    if number > 0:
                        times[side].append(time.perf_counter() - started)
        finally:
            if spark is not None:
                spark.stop()
            proxy.stop()
    proxy_s, hadoop_s = statistics.median(times["proxy (REST)"]), statistics.median(times["hadoop catalog"])
    return [
        row(
            "Spark pipeline",
            workload,
            "median wall s",
            proxy_s,
            hadoop_s,
            1.10,
            samples=times,
        )
    ]
