"""``GET /metrics``: the Prometheus exposition of a real proxy after real traffic."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyiceberg.catalog.rest import RestCatalog

from tests.support.maintenance import finished_run, request_run
from tests.support.rest import create_namespace, create_table, ns_path, table_url
from tests.support.server import ProxyProcess, Serve


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = httpx.get(f"{url}/metrics", timeout=10)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    """The sum over every sample of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in samples.items() if n == name and wanted <= have)


@pytest.fixture(scope="module")
def metered(serve: Serve) -> ProxyProcess:
    return serve(label="metrics")


def test_requests_are_counted_by_route_status_and_catalog(metered: ProxyProcess) -> None:
    ns = f"ns_{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=metered.url, timeout=30) as http:
        create_namespace(http, ns)
        create_table(http, (ns,), "t")
        for _ in range(2):
            assert http.get(table_url((ns,), "t")).status_code == 200
        assert http.get(f"/v1/namespaces/{ns_path(ns)}").status_code == 200  # no prefix: the default catalog
        assert http.get("/v1/no-such-catalog/namespaces").status_code == 404
        refused = http.post(
            table_url((ns,), "t"),
            json={"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 7}], "updates": []},
        )
        assert refused.status_code == 409
    samples = scrape(metered.url)

    requests = "irc_proxy_http_requests_total"
    table = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"
    assert value(samples, requests, method="POST", route="/v1/{prefix}/namespaces", status="200", catalog="local") >= 1
    assert value(samples, requests, method="GET", route=table, status="200", catalog="local") >= 2
    assert value(samples, requests, method="POST", route=table, status="409", catalog="local") >= 1
    assert value(samples, requests, route="/v1/{prefix}/namespaces/{namespace}", catalog="local") >= 1
    assert value(samples, requests, status="404", catalog="unmatched") >= 1  # unknown prefixes add no label value
    assert value(samples, "irc_proxy_http_request_duration_seconds_count", route=table, catalog="local") >= 3
    assert value(samples, "irc_proxy_http_request_duration_seconds_bucket", route=table, le="+Inf") >= 3

    backend = "irc_proxy_backend_call_duration_seconds_count"
    assert value(samples, backend, catalog="local", operation="load_table_pointer") >= 2
    assert value(samples, backend, catalog="local", operation="swap_table_pointers") >= 1
    assert value(samples, "irc_proxy_commit_conflicts_total") >= 1
    cache = value(samples, "irc_proxy_metadata_cache_hits_total") + value(
        samples, "irc_proxy_metadata_cache_misses_total"
    )
    assert cache >= 1
    assert ("irc_proxy_sts_calls_total", frozenset()) in samples
    assert ("irc_proxy_commit_retries_total", frozenset()) in samples


def test_commit_retries_are_counted_across_replicas(tmp_path: Path) -> None:
    """Two processes on one catalog database race for one table: the losers re-apply (retries)."""
    shared = f'[catalogs.local]\nkind = "local"\ndatabase_url = "sqlite:///{tmp_path / "catalog.db"}"\n'
    shared += f'warehouse = "{(tmp_path / "wh").as_uri()}"\n'
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    replicas = [ProxyProcess(tmp_path / name, shared).start() for name in ("a", "b")]
    try:
        with httpx.Client(base_url=replicas[0].url, timeout=30) as http:
            create_namespace(http, "race")
            create_table(http, ("race",), "t")

        def bump(index: int) -> int:
            body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {f"k{index}": "v"}}]}
            with httpx.Client(base_url=replicas[index % 2].url, timeout=60) as own:
                return own.post(table_url(("race",), "t"), json=body).status_code

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(bump, range(40))) == {200}
        retries = sum(value(scrape(r.url), "irc_proxy_commit_retries_total") for r in replicas)
        assert retries >= 1
        with httpx.Client(base_url=replicas[1].url, timeout=30) as http:
            properties = http.get(table_url(("race",), "t")).json()["metadata"]["properties"]
        assert {f"k{i}" for i in range(40)} <= set(properties)
    finally:
        for replica in replicas:
            replica.stop()


def test_maintenance_runs_jobs_files_and_bytes_are_counted_after_a_run(serve: Serve) -> None:
    """An expiry that deletes files, then a dry run: runs and jobs by outcome, files and bytes removed (the
    dry run's not), durations; the counts equal what the run reported (a fresh process counts only these)."""
    proxy = serve('[server.maintenance]\npoll_seconds = 0.1\n[catalogs.local]\nkind = "local"\n', "metrics-maint")
    iceberg = RestCatalog("metered", uri=proxy.url, warehouse="local")
    iceberg.create_namespace("kept")
    rows = pa.table({"id": pa.array([1, 2], pa.int64())})
    properties = {"history.expire.max-snapshot-age-ms": "1"}
    table = iceberg.create_table(("kept", "t"), schema=rows.schema, properties=properties)
    for _ in range(3):
        table.append(rows)
    with httpx.Client(base_url=proxy.url, timeout=60) as http:
        done = finished_run(http, request_run(http, "kept", "t", ["expire-snapshots"]))
        dry = finished_run(http, request_run(http, "kept", "t", ["expire-snapshots"], dry_run=True))
    expiry = done["results"]["expire-snapshots"]
    assert done["status"] == dry["status"] == "succeeded" and expiry["files-deleted"] > 0
    samples = scrape(proxy.url)
    assert value(samples, "irc_proxy_maintenance_runs_total", catalog="local", status="succeeded") == 2
    assert value(samples, "irc_proxy_maintenance_jobs_total", job="expire-snapshots", status="succeeded") == 2
    files = value(samples, "irc_proxy_maintenance_files_total", job="expire-snapshots", action="removed")
    removed_bytes = value(samples, "irc_proxy_maintenance_bytes_total", job="expire-snapshots", action="removed")
    assert (files, removed_bytes) == (expiry["files-deleted"], expiry["bytes-deleted"])
    assert value(samples, "irc_proxy_maintenance_job_duration_seconds_count", job="expire-snapshots") == 2
    assert value(samples, "irc_proxy_maintenance_run_duration_seconds_count") == 2
    assert value(samples, "irc_proxy_maintenance_runs_running") == 0
