"""End-to-end fixtures: real clients (PySpark, pyiceberg, DuckDB) against the served proxy."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.spark_jars import ensure_s3a_jars, ensure_spark_jars
from tests.support.server import ProxyProcess

SPARK_CATALOG = "irc"


@pytest.fixture(scope="session")
def s3a_jars() -> list[Path] | str:
    """hadoop-aws + the AWS SDK v1 bundle (S3A) for the one SparkSession, or why they are missing.

    Outside CI a failed download only skips the ``s3://`` Spark tests; in CI it is an error.
    """
    try:
        return ensure_s3a_jars()
    except RuntimeError as exc:
        if os.environ.get("CI"):
            raise
        return f"S3A jars unavailable: {exc}"


@pytest.fixture(scope="session")
def spark(proxy: ProxyProcess, s3a_jars: list[Path] | str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local SparkSession (Iceberg 1.10.2 runtime) whose catalog ``irc`` is the proxy over REST.

    S3A is on the class path too (when available); catalogs opt in with their own ``hadoop.*`` options.
    More catalogs can be added to this one session at run time with ``spark.conf.set``.
    """
    from pyspark.sql import SparkSession

    jars = ensure_spark_jars() + (s3a_jars if isinstance(s3a_jars, list) else [])
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
