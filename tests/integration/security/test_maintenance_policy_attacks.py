"""Hostile review of maintenance policies and the schedule (issue 28): a writer of its own table or namespace
sets ``irc-proxy.maintenance.*`` and Iceberg's own properties, on one served ``irc-proxy serve`` process.

* an Iceberg retention property no duration can hold (``history.expire.max-snapshot-age-ms`` of 20 digits,
  which any client may set): the sweep of the whole catalog must go on for every other table, the table's
  policy must still be answered (the value ignored, with a warning);
* overrides of the catalog's executor keys (``executor``, ``spark_submit``, ``spark_master``, ...): refused,
  never shown as in effect, and the policy a table writer reads reveals none of the operator's Spark settings;
* a dry run requested each time the last one finished (one is queued at a time): the table's run history in the
  state database stays bounded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.manifest import write_manifest

from tests.support.maintenance import finished_run, path_of, request_run, runs_url
from tests.support.server import ProxyProcess, Serve

KEPT = 3
BOMB_VALUE_BYTES = 1 << 20
BOMB_ROWS = 300
INFLATED_BOUND_BYTES = 64 << 20
INFLATED_ENTRIES = 16
SECRET_MASTER = "k8s://https://internal-cluster.example:6443"
CONFIG = f"""
[server.maintenance]
poll_seconds = 0.1
runs_kept_per_table = {KEPT}
rewrite_buffer_mb = 16
[catalogs.local]
kind = "local"
[catalogs.local.maintenance]
enabled = true
interval = "PT1S"
jobs = ["expire-snapshots"]
snapshots = 3
max_snapshot_age = "PT0S"
[catalogs.sparky]
kind = "local"
[catalogs.sparky.maintenance]
executor = "spark"
spark_master = "{SECRET_MASTER}"
spark_submit = "/opt/secret-spark/bin/spark-submit"
spark_conf = {{ "spark.hadoop.fs.s3a.secret.key" = "hunter2" }}
"""
SCHEMA = pa.schema([pa.field("id", pa.int64())])


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "maintenance-policy-attacks")


@pytest.fixture
def http(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=60) as client:
        yield client


def written(iceberg: RestCatalog, ns: str, name: str, **props: str) -> None:
    iceberg.create_namespace_if_not_exists(ns)
    table = iceberg.create_table((ns, name), schema=SCHEMA, properties=props)
    for i in range(3):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))


def policy_of(http: httpx.Client, ns: str, name: str, catalog: str = "local") -> httpx.Response:
    url = runs_url(catalog).removesuffix("/runs") + "/policy"
    return http.get(url, params={"namespace": ns, "table": name})


def runs_of(http: httpx.Client, ns: str, name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = http.get(runs_url(), params={"namespace": ns, "table": name}).json()["runs"]
    return found


def test_a_retention_property_no_duration_holds_never_stops_the_sweep_of_other_tables(
    http: httpx.Client, proxy: ProxyProcess, ns_name: str
) -> None:
    """The poisoned table is marked first (its commits are older), so a sweep that dies on it would never reach
    the victim, every second, for ever."""
    iceberg = RestCatalog("policy-attacks", uri=proxy.url, warehouse="local")
    written(iceberg, f"a_{ns_name}", "poison", **{"history.expire.max-snapshot-age-ms": "9" * 20})
    written(iceberg, f"b_{ns_name}", "victim")
    deadline = time.monotonic() + 30
    while not runs_of(http, f"b_{ns_name}", "victim"):
        assert time.monotonic() < deadline, "the sweep never queued the other table's run"
        time.sleep(0.2)
    shown = policy_of(http, f"a_{ns_name}", "poison")
    assert shown.status_code == 200, shown.text
    assert shown.json()["policy"]["max_snapshot_age"]["source"] == "catalog"
    assert any("history.expire.max-snapshot-age-ms" in w for w in shown.json()["warnings"])


def test_executor_keys_are_the_catalogs_alone_and_not_shown_to_table_writers(
    http: httpx.Client, proxy: ProxyProcess, ns_name: str
) -> None:
    for key, value in (("executor", "spark"), ("spark_submit", "/bin/sh"), ("spark_catalog_uri", "http://evil")):
        created = http.post("/v1/sparky/namespaces", json={"namespace": [f"{ns_name}_{key}"], "properties": {}})
        assert created.status_code == 200, created.text
        update = {"updates": {f"irc-proxy.maintenance.{key}": value}, "removals": []}
        answer = http.post(f"/v1/sparky/namespaces/{ns_name}_{key}/properties", json=update)
        assert answer.status_code == 400, answer.text
    iceberg = RestCatalog("policy-attacks", uri=proxy.url, warehouse="sparky")
    iceberg.create_namespace(ns_name)
    iceberg.create_table((ns_name, "t"), schema=SCHEMA)
    shown = policy_of(http, ns_name, "t", catalog="sparky")
    assert shown.status_code == 200, shown.text
    assert not any(key == "executor" or key.startswith("spark_") for key in shown.json()["policy"])
    for secret in (SECRET_MASTER, "secret-spark", "spark.hadoop.fs.s3a.secret.key"):
        assert secret not in shown.text


def test_runs_requested_one_after_another_keep_a_bounded_history(
    http: httpx.Client, proxy: ProxyProcess, ns_name: str
) -> None:
    iceberg = RestCatalog("policy-attacks", uri=proxy.url, warehouse="local")
    iceberg.create_namespace(ns_name)
    iceberg.create_table((ns_name, "t"), schema=SCHEMA)
    ids = []
    for _ in range(2 * KEPT + 1):
        ids.append(request_run(http, ns_name, "t", ["expire-snapshots"], dry_run=True))
        assert finished_run(http, ids[-1])["status"] == "succeeded"
    kept = [run["id"] for run in runs_of(http, ns_name, "t")]
    assert kept == ids[::-1][: len(kept)] and KEPT <= len(kept) <= KEPT + 1, kept


def test_a_compaction_of_tiny_files_decoding_to_gigabytes_stays_within_its_buffer(
    http: httpx.Client, proxy: ProxyProcess, ns_name: str
) -> None:
    """Parquet dictionary-encodes: a file of a few hundred bytes holds 300 rows of one 1 MB string (300 MB
    decoded). A writer adds five to its own table and asks for a compaction: the server's memory must stay
    near the rewrite's buffer (``rewrite_buffer_mb``, 16 here), not grow by what one file decodes to."""
    iceberg = RestCatalog("policy-attacks", uri=proxy.url, warehouse="local")
    iceberg.create_namespace(ns_name)
    table = iceberg.create_table((ns_name, "bomb"), schema=pa.schema([pa.field("s", pa.string())]))
    directory = path_of(table.location()) / "data"
    directory.mkdir(parents=True, exist_ok=True)
    one_value = pa.array(["a" * BOMB_VALUE_BYTES])
    column = pa.DictionaryArray.from_arrays(pa.array([0] * BOMB_ROWS, pa.int32()), one_value)
    files = []
    for i in range(5):
        data = directory / f"bomb-{i}.parquet"
        pq.write_table(pa.table({"s": column}), data, compression="zstd", store_schema=False)
        assert data.stat().st_size < 4096
        files.append(data.as_uri())
    table.add_files(files)
    before = proxy.peak_rss_kib()
    found = finished_run(http, request_run(http, ns_name, "bomb", ["rewrite-data-files"]), timeout=300)
    grew_mib = (proxy.peak_rss_kib() - before) / 1024
    assert grew_mib < 150, f"the server's peak RSS grew by {grew_mib:.0f} MiB: {found}"
    assert httpx.get(f"{proxy.url}/healthz", timeout=5).status_code == 200
    assert found["results"]["rewrite-data-files"]["data-files-rewritten"] == 5, found
    summary = iceberg.load_table((ns_name, "bomb")).metadata.current_snapshot().summary
    assert (summary["total-records"], summary["total-data-files"]) == (str(5 * BOMB_ROWS), "1")


def test_a_manifest_inflating_to_gigabytes_is_refused_not_decoded(
    http: httpx.Client, proxy: ProxyProcess, ns_name: str
) -> None:
    """Avro manifests are deflate-compressed block by block: a manifest of a few hundred KB whose entries carry
    a 64 MB lower bound each inflates to gigabytes. A writer puts one under its own table (in place of its
    manifest: the manifest list names it by path), asks for a compaction and opens the table's health page:
    the server's memory must not grow by what it inflates to (3.6 GB before); the job fails, the page says why."""
    iceberg = RestCatalog("policy-attacks", uri=proxy.url, warehouse="local")
    iceberg.create_namespace(ns_name)
    table = iceberg.create_table((ns_name, "inflating"), schema=SCHEMA)
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    table = iceberg.load_table((ns_name, "inflating"))
    snapshot = table.current_snapshot()
    assert snapshot is not None
    manifest = snapshot.manifests(table.io)[0]
    entry = manifest.fetch_manifest_entry(table.io)[0]
    entry.data_file._data[10] = {1: b"\0" * INFLATED_BOUND_BYTES}  # lower_bounds has no setter
    path = path_of(manifest.manifest_path)
    path.unlink()
    with write_manifest(2, table.spec(), table.schema(), table.io.new_output(str(path)), 1, "deflate") as writer:
        for _ in range(INFLATED_ENTRIES):
            writer.add_entry(entry)
    assert path.stat().st_size < 2 << 20
    before = proxy.peak_rss_kib()
    found = finished_run(http, request_run(http, ns_name, "inflating", ["rewrite-data-files"]), timeout=120)
    page = http.get(f"/ui/catalogs/local/namespaces/{ns_name}/tables/inflating/health")
    grew_mib = (proxy.peak_rss_kib() - before) / 1024
    assert grew_mib < 150, f"the server's peak RSS grew by {grew_mib:.0f} MiB"
    assert found["status"] == "failed" and "decompression bomb" in json.dumps(found), found
    assert page.status_code == 200 and "decompression bomb" in page.text, page.text
    assert httpx.get(f"{proxy.url}/healthz", timeout=5).status_code == 200
