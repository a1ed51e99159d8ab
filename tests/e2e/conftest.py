"""End-to-end fixtures: real clients (PySpark, pyiceberg, DuckDB) against the served proxy."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.spark_jars import ensure_spark_jars
from tests.support.server import ProxyProcess

SPARK_CATALOG = "irc"


@pytest.fixture(scope="session")
def spark(proxy: ProxyProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local SparkSession (Iceberg 1.10.2 runtime) whose catalog ``irc`` is the proxy over REST."""
    from pyspark.sql import SparkSession

    jars = ensure_spark_jars()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    scratch = tmp_path_factory.mktemp("spark")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("irc-proxy-e2e")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.local.dir", str(scratch))
        .config("spark.sql.warehouse.dir", str(scratch / "spark-warehouse"))
        .config("spark.jars", ",".join(str(j) for j in jars))
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(f"spark.sql.catalog.{SPARK_CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{SPARK_CATALOG}.type", "rest")
        .config(f"spark.sql.catalog.{SPARK_CATALOG}.uri", proxy.url)
        .config(f"spark.sql.catalog.{SPARK_CATALOG}.warehouse", "local")
        .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={scratch}")
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
