"""The Spark driver of the ``spark`` maintenance executor: ``python -m irc_proxy.maintenance_spark`` (or this file
under ``spark-submit``), run as a child of the proxy, never inside it.

It reads one request as JSON on standard input (the run credential travels there, never on the command line),
starts a Spark session whose Iceberg catalog is the proxy over REST, runs Iceberg's own procedures on the one
table, and prints one line ``IRC-PROXY-RESULT <json>`` with each job's counts under the issue's names. Everything
else Spark prints goes to standard error. It imports nothing of the proxy but the standard library and pyspark,
so a cluster's ``spark-submit`` can run this file alone.

Request: ``{"uri", "warehouse", "token", "namespace": [...], "name", "format_version", "jobs": [...], "master",
"connect_url", "jars": [...], "conf": {...}, "rewrite_options": {...}}``. It reads no metadata table: Spark
resolves ``t.files`` by first loading a table ``files`` in a namespace ``t``, which the run credential may not
read (403, not the 404 Spark falls back on); the proxy counts files and snapshots itself, before and after.

Storage: a table on S3 is read and written with Hadoop's S3A (``HadoopFileIO``), the one S3 client Spark's stock
Hadoop has (Iceberg's ``S3FileIO`` needs the Iceberg AWS bundle, which a cluster may not have). Before Spark starts,
the driver loads the table from the proxy as the run, asking for vended credentials like any REST client, and maps
what it gets (``s3.endpoint``, ``s3.path-style-access``, ``client.region`` and the scoped session keys) onto the
catalog's own ``hadoop.fs.s3a.*`` options, so Spark's tasks get them with the table's FileIO. Without vending the
proxy hands out nothing and S3A uses ``spark_conf``'s ``spark.hadoop.fs.s3a.*`` keys or its default credential
chain. ``spark_conf`` keys ``spark.sql.catalog.irc_proxy_maintenance.*`` override any of these.
"""

from __future__ import annotations

import os
import sys

# Run as a file, this directory comes first on sys.path, where the proxy's own modules (numbers.py, ...) would
# shadow the standard library's: it goes before anything else is imported.
if sys.path and os.path.realpath(sys.path[0] or ".") == os.path.dirname(os.path.realpath(__file__)):
    del sys.path[0]

import json
from typing import Any
from urllib.parse import quote, urlsplit
from urllib.request import Request, urlopen

RESULT_MARKER = "IRC-PROXY-RESULT "
CATALOG = "irc_proxy_maintenance"
"""The Spark catalog name of the proxy inside the child (a fixed name: nothing of the caller's goes into SQL
unquoted)."""

S3_SCHEMES = ("s3", "s3a", "s3n")
S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
HTTP_TIMEOUT_SECONDS = 60

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


def reason(exc: Exception) -> str:
    """The first line of what went wrong: the Java exception's own message for a Py4J error."""
    java = getattr(exc, "java_exception", None)
    text = (str(java) if java is not None else str(exc)).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return f"{type(exc).__name__}: {first[:500]}"


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

    def call(self, procedure: str, extra: str = "") -> dict[str, Any]:
        rows = self.spark.sql(f"CALL {CATALOG}.system.{procedure}(table => {literal(self.table)}{extra})").collect()
        return counts(rows[0]) if rows else {}

    def rewrite_data_files(self) -> dict[str, Any]:
        options = {"remove-dangling-deletes": "true", **self.request.get("rewrite_options", {})}
        pairs = ", ".join(f"{literal(k)}, {literal(str(v))}" for k, v in options.items())
        result = self.call("rewrite_data_files", f", options => map({pairs})")
        if self.request.get("format_version") == 2:  # position deletes left on files that were not rewritten
            positional = self.call("rewrite_position_delete_files", ", options => map('rewrite-all', 'true')")
            result.update({k: v for k, v in positional.items() if k.startswith("delete-files")})
        return {"status": "succeeded", **result}

    def rewrite_manifests(self) -> dict[str, Any]:
        return {"status": "succeeded", **self.call("rewrite_manifests")}

    def expire_snapshots(self) -> dict[str, Any]:
        deleted = self.call("expire_snapshots")
        files = sum(int(v) for k, v in deleted.items() if k.startswith("deleted-"))
        return {"status": "succeeded", "files-deleted": files, **deleted}

    def run(self, job: str) -> dict[str, Any]:
        try:
            runner = {
                "rewrite-data-files": self.rewrite_data_files,
                "rewrite-manifests": self.rewrite_manifests,
                "expire-snapshots": self.expire_snapshots,
            }[job]
        except KeyError:
            return {"status": "skipped", "reason": f"{job} does not run on Spark"}
        try:
            return runner()
        except Exception as exc:  # one job failed: say why, go on with the next
            return {"status": "failed", "error": reason(exc)}


def rest(request: dict[str, Any], path: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """One GET on the proxy's REST API as the run (the standard library's HTTP client: no dependency)."""
    sent = {"Authorization": f"Bearer {request['token']}", "Accept": "application/json", **(headers or {})}
    url = request["uri"].rstrip("/") + path  # the proxy's own URI, from its settings
    with urlopen(Request(url, headers=sent), timeout=HTTP_TIMEOUT_SECONDS) as answer:  # noqa: S310
        found: dict[str, Any] = json.loads(answer.read())
    return found


def loaded_table(request: dict[str, Any]) -> dict[str, Any]:
    """The run's table as the proxy serves it to a client asking for vended credentials (``LoadTableResult``)."""
    config = rest(request, "/v1/config?warehouse=" + quote(request["warehouse"], safe=""))
    prefix = {**config.get("defaults", {}), **config.get("overrides", {})}.get("prefix", "")
    namespace = quote("\x1f".join(request["namespace"]), safe="")
    base = f"/v1/{quote(prefix, safe='')}/" if prefix else "/v1/"
    path = f"{base}namespaces/{namespace}/tables/{quote(request['name'], safe='')}"
    return rest(request, path, {"X-Iceberg-Access-Delegation": "vended-credentials"})


def storage_config(loaded: dict[str, Any]) -> dict[str, str]:
    """The table's client config with the ``storage-credentials`` entry of the longest prefix covering its location
    on top (Iceberg's own precedence)."""
    location = str(loaded.get("metadata", {}).get("location", ""))
    found = {str(k): str(v) for k, v in (loaded.get("config") or {}).items()}
    covering = [
        (len(credential["prefix"]), credential["config"])
        for credential in loaded.get("storage-credentials") or []
        if isinstance(credential.get("prefix"), str)
        and isinstance(credential.get("config"), dict)
        and location.startswith(credential["prefix"])
    ]
    if covering:
        found.update({str(k): str(v) for k, v in max(covering, key=lambda pair: pair[0])[1].items()})
    return found


def s3a_options(location: str, config: dict[str, str]) -> dict[str, str]:
    """The Spark catalog options that give a table at ``location`` on S3 a ``HadoopFileIO`` over S3A set up from the
    REST ``config`` (Iceberg's ``s3.*`` and ``client.region`` keys); nothing for other storage."""
    if urlsplit(location).scheme.lower() not in S3_SCHEMES:
        return {}
    hadoop = {f"fs.{scheme}.impl": S3A for scheme in S3_SCHEMES}
    endpoint = config.get("s3.endpoint", "")
    if endpoint:
        hadoop["fs.s3a.endpoint"] = endpoint
        if urlsplit(endpoint).scheme == "http":
            hadoop["fs.s3a.connection.ssl.enabled"] = "false"
    if config.get("s3.path-style-access", "").lower() == "true":
        hadoop["fs.s3a.path.style.access"] = "true"
    region = config.get("client.region") or config.get("s3.region")
    if region:
        hadoop["fs.s3a.endpoint.region"] = region
    key, secret = config.get("s3.access-key-id"), config.get("s3.secret-access-key")
    if key and secret:
        token = config.get("s3.session-token")
        hadoop["fs.s3a.access.key"], hadoop["fs.s3a.secret.key"] = key, secret
        hadoop["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a." + (
            "TemporaryAWSCredentialsProvider" if token else "SimpleAWSCredentialsProvider"
        )
        if token:
            hadoop["fs.s3a.session.token"] = token
    return {"io-impl": "org.apache.iceberg.hadoop.HadoopFileIO", **{f"hadoop.{k}": v for k, v in hadoop.items()}}


def storage_options(request: dict[str, Any]) -> dict[str, str]:
    """``s3a_options`` for the run's table as the proxy serves it (vended credentials when the catalog vends)."""
    loaded = loaded_table(request)
    location = str(loaded.get("metadata", {}).get("location", ""))
    options = s3a_options(location, storage_config(loaded))
    return {f"spark.sql.catalog.{CATALOG}.{key}": value for key, value in options.items()}


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
    storage = storage_options(request)
    user_catalog = {k: v for k, v in request.get("conf", {}).items() if k.startswith(f"spark.sql.catalog.{CATALOG}.")}
    if request.get("connect_url"):
        spark = SparkSession.builder.remote(request["connect_url"]).getOrCreate()
        for key, value in {**storage, **user_catalog, **catalog}.items():
            spark.conf.set(key, value)
        return spark
    builder = SparkSession.builder.appName("irc-proxy maintenance")
    if request.get("master"):
        builder = builder.master(request["master"])
    conf = {
        "spark.ui.enabled": "false",
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        **({"spark.jars": ",".join(request["jars"])} if request.get("jars") else {}),
        **storage,
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
        out = {"jobs": results, "error": reason(exc)}
    finally:
        if spark is not None:
            spark.stop()
    sys.stdout.write(RESULT_MARKER + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
