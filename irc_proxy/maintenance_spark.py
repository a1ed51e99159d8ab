"""The Spark driver of the ``spark`` maintenance executor: ``python -m irc_proxy.maintenance_spark`` (or this file
under ``spark-submit``), run as a child of the proxy, never inside it.

It reads one request as JSON on standard input (the run credential travels there, never on the command line),
starts a Spark session whose Iceberg catalog is the proxy over REST, runs Iceberg's own procedures on the one
table, and prints one line ``IRC-PROXY-RESULT <json>`` with each job's counts under the issue's names. Everything
else Spark prints goes to standard error. It imports nothing of the proxy but the standard library and pyspark,
so a cluster's ``spark-submit`` can run this file alone.

Request: ``{"uri", "warehouse", "token", "namespace": [...], "name", "jobs": [...], "dry_run", "master",
"connect_url", "jars": [...], "conf": {...}, "rewrite_options": {...}}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

RESULT_MARKER = "IRC-PROXY-RESULT "
CATALOG = "irc_proxy_maintenance"
"""The Spark catalog name of the proxy inside the child (a fixed name: nothing of the caller's goes into SQL
unquoted)."""

RENAMED = {
    "rewritten_data_files_count": "data-files-rewritten",
    "added_data_files_count": "data-files-added",
    "rewritten_bytes_count": "bytes-rewritten",
    "failed_data_files_count": "data-files-failed",
    "removed_delete_files_count": "delete-files-removed",
    "rewritten_delete_files_count": "delete-files-rewritten",
    "added_delete_files_count": "delete-files-added",
    "added_bytes_count": "bytes-added",
    "rewritten_manifests_count": "manifests-rewritten",
    "added_manifests_count": "manifests-added",
}
"""Iceberg's procedure output columns → the issue's count names (others: snake_case to kebab-case)."""


def quoted(name: str) -> str:
    """A Spark SQL identifier part in backticks."""
    return "`" + name.replace("`", "``") + "`"


def literal(text: str) -> str:
    """A Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def counts(row: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in row.asDict().items():
        found[RENAMED.get(key, key.replace("_", "-"))] = value
    return found


class Driver:
    """One table's procedures in one Spark session."""

    def __init__(self, spark: Any, request: dict[str, Any]) -> None:
        self.spark, self.request = spark, request
        parts = [*request["namespace"], request["name"]]
        self.table = ".".join(quoted(part) for part in parts)  # the procedures' `table` argument
        self.full = f"{CATALOG}.{self.table}"

    def scalar(self, statement: str) -> Any:
        return self.spark.sql(statement).collect()[0][0]

    def count(self, metadata_table: str) -> int:
        """Rows of one of the table's metadata tables (``snapshots``, ``manifests``)."""
        return int(self.scalar(f"SELECT count(*) FROM {self.full}.{metadata_table}"))  # noqa: S608 (quoted names)

    def call(self, procedure: str, extra: str = "") -> dict[str, Any]:
        rows = self.spark.sql(f"CALL {CATALOG}.system.{procedure}(table => {literal(self.table)}{extra})").collect()
        return counts(rows[0]) if rows else {}

    def files(self) -> dict[str, int]:
        """Live data and delete files (content 0: data, 1: position deletes/DVs, 2: equality deletes)."""
        statement = f"SELECT content, count(*) FROM {self.full}.files GROUP BY content"  # noqa: S608 (quoted names)
        found = {int(r[0]): int(r[1]) for r in self.spark.sql(statement).collect()}
        return {"data-files": found.get(0, 0), "delete-files": found.get(1, 0) + found.get(2, 0)}

    def rewrite_data_files(self, dry_run: bool) -> dict[str, Any]:
        before = self.files()
        if dry_run:
            return {"status": "succeeded", "dry-run": True, **before}
        options = {"remove-dangling-deletes": "true", **self.request.get("rewrite_options", {})}
        pairs = ", ".join(f"{literal(k)}, {literal(str(v))}" for k, v in options.items())
        result = self.call("rewrite_data_files", f", options => map({pairs})")
        version = int(self.spark.sql(f"SHOW TBLPROPERTIES {self.full} ('format-version')").collect()[0][1])
        if version == 2 and self.files()["delete-files"]:  # position deletes left on files not rewritten
            positional = self.call("rewrite_position_delete_files", ", options => map('rewrite-all', 'true')")
            result.update({k: v for k, v in positional.items() if k.startswith("delete-files")})
        after = self.files()
        result.setdefault("delete-files-removed", 0)
        result["delete-files-removed"] = max(
            result["delete-files-removed"], before["delete-files"] - after["delete-files"]
        )
        return {
            "status": "succeeded",
            **result,
            "data-files-before": before["data-files"],
            "data-files-after": after["data-files"],
        }

    def rewrite_manifests(self, dry_run: bool) -> dict[str, Any]:
        if dry_run:
            return {"status": "succeeded", "dry-run": True, "manifests": self.count("manifests")}
        return {"status": "succeeded", **self.call("rewrite_manifests")}

    def expire_snapshots(self, dry_run: bool) -> dict[str, Any]:
        before = self.count("snapshots")
        if dry_run:
            return {"status": "succeeded", "dry-run": True, "snapshots": before}
        deleted = self.call("expire_snapshots")
        after = self.count("snapshots")
        files = sum(int(v) for k, v in deleted.items() if k.startswith("deleted-"))
        return {"status": "succeeded", "snapshots-expired": before - after, "files-deleted": files, **deleted}

    def run(self, job: str) -> dict[str, Any]:
        dry_run = bool(self.request.get("dry_run"))
        try:
            runner = {
                "rewrite-data-files": self.rewrite_data_files,
                "rewrite-manifests": self.rewrite_manifests,
                "expire-snapshots": self.expire_snapshots,
            }[job]
        except KeyError:
            return {"status": "skipped", "reason": f"{job} does not run on Spark"}
        try:
            return runner(dry_run)
        except Exception as exc:  # one job failed: say why (Spark's first line), go on with the next
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return {"status": "failed", "error": f"{type(exc).__name__}: {first[:500]}"}


def session(request: dict[str, Any]) -> Any:
    """The Spark session: Spark Connect, or a driver here (``spark-submit`` or pyspark's own launcher)."""
    from pyspark.sql import SparkSession

    catalog = {
        f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{CATALOG}.type": "rest",
        f"spark.sql.catalog.{CATALOG}.uri": request["uri"],
        f"spark.sql.catalog.{CATALOG}.warehouse": request["warehouse"],
        f"spark.sql.catalog.{CATALOG}.token": request["token"],
    }
    if request.get("connect_url"):
        spark = SparkSession.builder.remote(request["connect_url"]).getOrCreate()
        for key, value in catalog.items():
            spark.conf.set(key, value)
        return spark
    builder = SparkSession.builder.appName("irc-proxy maintenance")
    if request.get("master"):
        builder = builder.master(request["master"])
    conf = {
        "spark.ui.enabled": "false",
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        **({"spark.jars": ",".join(request["jars"])} if request.get("jars") else {}),
        **request.get("conf", {}),
        **catalog,
    }
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> int:
    request = json.loads(sys.stdin.read())
    results: dict[str, Any] = {}
    spark = None
    try:
        spark = session(request)
        driver = Driver(spark, request)
        for job in request["jobs"]:
            results[job] = driver.run(job)
        out: dict[str, Any] = {"jobs": results}
    except Exception as exc:  # the session did not start, the table is gone, ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        out = {"jobs": results, "error": f"{type(exc).__name__}: {first[:500]}"}
    finally:
        if spark is not None:
            spark.stop()
    sys.stdout.write(RESULT_MARKER + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
