"""The local SparkSession every Spark user here starts: Iceberg 1.10.2 runtime, small and quiet."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def local_builder(app_name: str, scratch: Path, jars: list[Path]) -> Any:
    """A ``SparkSession.Builder`` for ``local[2]`` with the Iceberg runtime ``jars`` and SQL extensions, its
    scratch files under ``scratch``; callers add their catalogs and call ``getOrCreate()``."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.local.dir", str(scratch))
        .config("spark.sql.warehouse.dir", str(scratch / "spark-warehouse"))
        .config("spark.jars", ",".join(str(j) for j in jars))
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={scratch}")
    )


def started(builder: Any) -> Any:
    """The session ``builder`` makes, with Spark's log at ERROR."""
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
