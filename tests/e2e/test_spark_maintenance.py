"""Table maintenance with ``executor = "spark"`` (local master) end to end, against an ``oauth2`` proxy with grants.

Real PySpark writes the tables (many small appends, merge-on-read DELETE and UPDATE), the management API runs
maintenance, the proxy's worker starts a Spark driver as a child process whose catalog is the proxy (with a run
credential), and afterwards Spark, pyiceberg and DuckDB read exactly the rows they read before, the files are
bin-packed, the applied delete files are gone, v3 rows keep their ``_row_id`` and ``_last_updated_sequence_number``,
and expired snapshots are gone while a tag is kept.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from irc_proxy.handling.security.authn import hash_secret
from tests.e2e.spark_jars import ensure_spark_jars
from tests.e2e.test_duckdb import offline_duckdb
from tests.e2e.test_glue_clients import add_spark_catalog
from tests.support.maintenance import finished_run, runs_url
from tests.support.rest import MGMT, issue_token
from tests.support.server import ProxyProcess

pytestmark = pytest.mark.spark

ROOT_SECRET = "root-secret-maintenance"
CATALOG = "maint_e2e"  # the Spark catalog of the test's own session
MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    "history.expire.max-snapshot-age-ms": "1",
    "history.expire.min-snapshots-to-keep": "1",
}
JOBS = ["rewrite-data-files", "rewrite-manifests", "expire-snapshots"]
RUN_SECONDS = 300
APPENDS = 50


@pytest.fixture(scope="module")
def proxy_with_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    scratch = tmp_path_factory.mktemp("maintenance-spark-driver")
    jars = json.dumps([str(jar) for jar in ensure_spark_jars()])
    conf = {
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": "2",
        "spark.local.dir": str(scratch),
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={scratch}",
    }
    config = (
        f'[auth]\nmode = "oauth2"\nadmins = ["root"]\n[[auth.clients]]\nid = "root"\n'
        f'secret_hash = "{hash_secret(ROOT_SECRET)}"\n'
        "[server.maintenance]\npoll_seconds = 0.2\n"
        '[catalogs.local]\nkind = "local"\n'
        f'[catalogs.local.maintenance]\nexecutor = "spark"\nspark_jars = {jars}\nspark_timeout = "PT10M"\n'
        "spark_conf = { " + ", ".join(f'"{k}" = "{v}"' for k, v in conf.items()) + " }\n"
    )
    server = ProxyProcess(tmp_path_factory.mktemp("maintenance-spark"), config).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def admin(proxy_with_spark: ProxyProcess) -> Iterator[httpx.Client]:
    token = issue_token(proxy_with_spark.url, "root", ROOT_SECRET)
    with httpx.Client(base_url=proxy_with_spark.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        yield http


@pytest.fixture(scope="module")
def writer(spark: Any, proxy_with_spark: ProxyProcess) -> str:
    """The test's own Spark session, as ``root``, on the proxy's ``local`` catalog."""
    return add_spark_catalog(spark, CATALOG, proxy_with_spark, "local", credential=f"root:{ROOT_SECRET}")


def rows(spark: Any, statement: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in spark.sql(statement).collect())


def checksum(found: list[tuple[Any, ...]]) -> str:
    return hashlib.sha256(repr(sorted(found)).encode()).hexdigest()


def file_counts(spark: Any, table: str) -> tuple[int, int]:
    """(live data files, live delete files)."""
    spark.sql(f"REFRESH TABLE {table}")
    content = dict(rows(spark, f"SELECT content, count(*) FROM {table}.files GROUP BY content"))
    return content.get(0, 0), content.get(1, 0) + content.get(2, 0)


def write_small_files(spark: Any, table: str, version: int, appends: int) -> None:
    properties = ", ".join(f"'{k}'='{v}'" for k, v in {"format-version": str(version), **MOR}.items())
    spark.sql(f"CREATE TABLE {table} (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ({properties})")
    for n in range(appends):
        values = ", ".join(f"({n * 10 + i}, 'v{n}-{i}')" for i in range(10))
        spark.sql(f"INSERT INTO {table} VALUES {values}")
        if n == appends // 2:
            spark.sql(f"ALTER TABLE {table} CREATE TAG kept")
    spark.sql(f"DELETE FROM {table} WHERE id % 7 = 0")
    spark.sql(f"UPDATE {table} SET v = concat(v, '-u') WHERE id % 5 = 0")


def run_maintenance(admin: httpx.Client, ns: str, name: str, proxy: ProxyProcess) -> dict[str, Any]:
    body = {"table": {"namespace": [ns], "name": name}, "jobs": JOBS}
    response = admin.post(runs_url(), json=body)
    assert response.status_code == 202, response.text
    run = finished_run(admin, response.json()["id"], timeout=RUN_SECONDS)
    assert run["status"] == "succeeded", json.dumps({k: run.get(k) for k in ("results", "error")}) + proxy.log()[-4000:]
    return run


def load(admin: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    response = admin.get(f"/v1/local/namespaces/{quote(ns)}/tables/{quote(name)}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def duckdb_rows(metadata_location: str, scratch: Path) -> list[tuple[Any, ...]]:
    con = offline_duckdb(scratch)
    found = con.execute(f"SELECT id, v FROM iceberg_scan('{metadata_location}')").fetchall()
    con.close()
    return sorted(found)


def test_spark_executor_compacts_a_v2_table_with_position_deletes_and_every_engine_reads_the_same_rows(
    spark: Any, writer: str, admin: httpx.Client, proxy_with_spark: ProxyProcess, ns_name: str, tmp_path: Path
) -> None:
    spark.sql(f"CREATE NAMESPACE {writer}.{ns_name}")
    table = f"{writer}.{ns_name}.events"
    write_small_files(spark, table, 2, APPENDS)
    before = rows(spark, f"SELECT id, v FROM {table}")
    tagged = rows(spark, f"SELECT id, v FROM {table} VERSION AS OF 'kept'")
    data_before, deletes_before = file_counts(spark, table)
    assert data_before >= APPENDS and deletes_before >= 1  # the small files and the position deletes are there

    run = run_maintenance(admin, ns_name, "events", proxy_with_spark)

    rewrite = run["results"]["rewrite-data-files"]
    assert rewrite["executor"] == "spark"
    assert rewrite["data-files-rewritten"] == data_before
    assert rewrite["data-files-added"] == 1
    assert (rewrite["delete-files-before"], rewrite["delete-files-after"]) == (deletes_before, 0)
    assert (rewrite["data-files-before"], rewrite["data-files-after"]) == (data_before, 1)
    assert file_counts(spark, table) == (1, 0)  # bin-packed to one file (far below the target size), deletes applied
    after = rows(spark, f"SELECT id, v FROM {table}")
    assert checksum(after) == checksum(before) and len(after) == len(before)
    # expired: everything but the current snapshot and the tag's; the tag still reads what it read
    metadata = load(admin, ns_name, "events")["metadata"]
    kept = {ref["snapshot-id"] for ref in metadata["refs"].values()}
    assert set(metadata["refs"]) == {"main", "kept"}
    assert {s["snapshot-id"] for s in metadata["snapshots"]} == kept
    assert run["results"]["expire-snapshots"]["snapshots-expired"] >= APPENDS
    assert rows(spark, f"SELECT id, v FROM {table} VERSION AS OF 'kept'") == tagged
    # pyiceberg and DuckDB read the same rows
    catalog = RestCatalog(
        "maint",
        uri=proxy_with_spark.url,
        warehouse="local",
        credential=f"root:{ROOT_SECRET}",
        **{"oauth2-server-uri": f"{proxy_with_spark.url}/v1/oauth/tokens"},
    )
    arrow = catalog.load_table((ns_name, "events")).scan().to_arrow()
    assert checksum(sorted(zip(arrow["id"].to_pylist(), arrow["v"].to_pylist(), strict=True))) == checksum(before)
    location = load(admin, ns_name, "events")["metadata-location"]
    assert checksum(duckdb_rows(location, tmp_path)) == checksum(before)


def test_spark_executor_compacts_a_v3_table_with_deletion_vectors_and_keeps_row_lineage(
    spark: Any, writer: str, admin: httpx.Client, proxy_with_spark: ProxyProcess, ns_name: str, tmp_path: Path
) -> None:
    spark.sql(f"CREATE NAMESPACE {writer}.{ns_name}")
    table = f"{writer}.{ns_name}.lineage"
    write_small_files(spark, table, 3, 12)
    lineage = f"SELECT id, v, _row_id, _last_updated_sequence_number FROM {table}"
    before = rows(spark, lineage)
    data_before, deletes_before = file_counts(spark, table)
    assert data_before >= 12 and deletes_before >= 1

    run = run_maintenance(admin, ns_name, "lineage", proxy_with_spark)

    rewrite = run["results"]["rewrite-data-files"]
    assert (rewrite["delete-files-before"], rewrite["delete-files-after"]) == (deletes_before, 0)
    assert file_counts(spark, table) == (1, 0)
    assert rows(spark, lineage) == before  # every row keeps its _row_id and _last_updated_sequence_number
    location = load(admin, ns_name, "lineage")["metadata-location"]
    assert checksum(duckdb_rows(location, tmp_path)) == checksum([(i, v) for i, v, _, _ in before])


def test_a_caller_without_table_write_is_refused_before_any_run_starts(
    admin: httpx.Client, proxy_with_spark: ProxyProcess, ns_name: str
) -> None:
    assert admin.post("/v1/local/namespaces", json={"namespace": [ns_name]}).status_code == 200
    schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
    created = admin.post(f"/v1/local/namespaces/{ns_name}/tables", json={"name": "t", "schema": schema})
    assert created.status_code == 200, created.text
    assert admin.post(f"{MGMT}/roles", json={"name": "readers"}).status_code == 201
    grant = {"catalog": "local", "namespace": [ns_name], "privilege": "table.read"}
    assert admin.post(f"{MGMT}/roles/readers/grants", json=grant).status_code == 201
    made = admin.post(f"{MGMT}/principals", json={"name": "reader", "roles": ["readers"]}).json()["credentials"]
    token = issue_token(proxy_with_spark.url, made["client-id"], made["client-secret"])
    body = {"table": {"namespace": [ns_name], "name": "t"}, "jobs": ["rewrite-data-files"]}
    refused = httpx.post(
        f"{proxy_with_spark.url}{runs_url()}", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert refused.status_code == 403, refused.text
    assert "table.write" in refused.json()["error"]["message"]
    listed = admin.get(runs_url(), params={"namespace": ns_name, "table": "t"}).json()
    assert listed["runs"] == []
