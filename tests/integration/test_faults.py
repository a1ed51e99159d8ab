"""Faults injected for real: a TCP fault proxy (``tests.support.faults``) between the proxy and its backends.

* Glue (moto's server) down, or a black hole → 503 ServiceUnavailableException within the configured
  ``timeout_seconds`` times ``max_attempts``; back up → served again.
* The connection to Glue cut after ``UpdateTable`` reached it (Glue applied the commit, the reply is lost) →
  CommitStateUnknownException; afterwards the table loads, its metadata file exists, and it is at the old or
  the new metadata, never anything else.
* PostgreSQL (state database and local catalog database) down, or a black hole → catalog requests 503 (within
  the 5 s connect timeout) and ``/readyz`` 503 while ``/healthz`` stays 200; back up → everything served again
  without restarting the proxy.
* The PostgreSQL connection cut after the COMMIT of a pointer swap reached the server → 504 CommitStateUnknown,
  not a 503 (a client would clean up the files of a commit that landed); cut before the COMMIT → 503, nothing
  changed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from tests.support.aws import client, glue_catalog_config
from tests.support.faults import FaultProxy, fault_proxy
from tests.support.postgres import scratch_database
from tests.support.rest import SCHEMA, assert_error, ns_path
from tests.support.server import ProxyProcess

GLUE_TIMEOUT = 1.5
GLUE_ATTEMPTS = 2


def _table_url(catalog: str, namespace: str, name: str) -> str:
    return f"/v1/{catalog}/namespaces/{ns_path(namespace)}/tables/{name}"


def _create_table(http: httpx.Client, catalog: str, namespace: str, name: str) -> dict[str, Any]:
    response = http.post(f"/v1/{catalog}/namespaces", json={"namespace": [namespace]})
    assert response.status_code == 200, response.text
    response = http.post(f"/v1/{catalog}/namespaces/{namespace}/tables", json={"name": name, "schema": SCHEMA})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _set_property(http: httpx.Client, url: str, key: str) -> httpx.Response:
    return http.post(url, json={"requirements": [], "updates": [{"action": "set-properties", "updates": {key: "v"}}]})


def _assert_old_or_new(http: httpx.Client, url: str, old_location: str, key: str) -> dict[str, Any]:
    """The table loads; its metadata file exists; it is at the old metadata, or at new metadata with the change."""
    loaded = http.get(url)
    assert loaded.status_code == 200, loaded.text
    body: dict[str, Any] = loaded.json()
    assert Path(urlparse(body["metadata-location"]).path).is_file()
    if body["metadata-location"] != old_location:
        assert body["metadata"]["properties"].get(key) == "v", body["metadata"]["properties"]
    return body


# Glue on moto, behind the fault proxy ---------------------------------------------------------------
@pytest.fixture(scope="module")
def glue_fault(moto: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FaultProxy, ProxyProcess, Any]]:
    parsed = urlparse(moto)
    with fault_proxy(parsed.hostname or "127.0.0.1", parsed.port or 80) as fault:
        warehouse = tmp_path_factory.mktemp("faults-glue-warehouse").as_uri()
        # max_attempts = 2 (GLUE_ATTEMPTS) comes with glue_catalog_config.
        config = glue_catalog_config("glue", f"http://{fault.address}", warehouse, timeout_seconds=str(GLUE_TIMEOUT))
        proxy = ProxyProcess(tmp_path_factory.mktemp("faults-glue-proxy"), config).start()
        yield fault, proxy, client("glue", moto)
        proxy.stop()


@pytest.fixture
def glue_http(glue_fault: tuple[FaultProxy, ProxyProcess, Any]) -> Iterator[httpx.Client]:
    fault, proxy, _ = glue_fault
    fault.up()
    with httpx.Client(base_url=proxy.url, timeout=60) as http:
        yield http
    fault.up()


def test_glue_down_is_503_quickly_and_served_again_when_back(
    glue_fault: tuple[FaultProxy, ProxyProcess, Any], glue_http: httpx.Client, ns_name: str
) -> None:
    fault = glue_fault[0]
    fault.down()
    started = time.monotonic()
    response = glue_http.get("/v1/glue/namespaces")
    took = time.monotonic() - started
    print(f"\nGlue refused: {response.status_code} after {took:.2f}s")
    assert_error(response, 503, "ServiceUnavailableException")
    assert took < GLUE_TIMEOUT * GLUE_ATTEMPTS + 3
    assert_error(
        glue_http.post("/v1/glue/namespaces", json={"namespace": [ns_name]}), 503, "ServiceUnavailableException"
    )
    fault.up()
    assert glue_http.post("/v1/glue/namespaces", json={"namespace": [ns_name]}).status_code == 200
    assert glue_http.get("/v1/glue/namespaces").status_code == 200


def test_glue_black_hole_is_503_within_the_timeout(
    glue_fault: tuple[FaultProxy, ProxyProcess, Any], glue_http: httpx.Client, ns_name: str
) -> None:
    fault = glue_fault[0]
    assert glue_http.post("/v1/glue/namespaces", json={"namespace": [ns_name]}).status_code == 200
    fault.hang = True
    fault.cut_all()  # pooled keep-alive connections would still relay
    started = time.monotonic()
    response = glue_http.get(f"/v1/glue/namespaces/{ns_name}")
    took = time.monotonic() - started
    print(f"\nGlue black hole: {response.status_code} after {took:.2f}s (timeout {GLUE_TIMEOUT}s x {GLUE_ATTEMPTS})")
    assert_error(response, 503, "ServiceUnavailableException")
    assert GLUE_TIMEOUT <= took < GLUE_TIMEOUT * GLUE_ATTEMPTS + 5
    fault.up()
    fault.cut_all()
    assert glue_http.get(f"/v1/glue/namespaces/{ns_name}").status_code == 200


def test_glue_connection_cut_after_update_table_is_commit_state_unknown_and_table_stays_whole(
    glue_fault: tuple[FaultProxy, ProxyProcess, Any], glue_http: httpx.Client, ns_name: str
) -> None:
    fault, _, glue = glue_fault
    old = _create_table(glue_http, "glue", ns_name, "t")["metadata-location"]
    url = _table_url("glue", ns_name, "t")

    cuts = fault.stats["cut_after_request"]
    fault.cut_after_request(b"AWSGlue.UpdateTable")
    response = _set_property(glue_http, url, "ambiguous")
    fault.heal()
    print(f"\ncut after UpdateTable: {response.status_code} {response.text[:160]} stats={dict(fault.stats)}")
    assert response.status_code == 504, response.text  # the spec's gateway timeout: commit state unknown
    assert response.json()["error"]["type"] == "CommitStateUnknownException"
    assert response.json()["error"]["code"] == response.status_code
    assert fault.stats["cut_after_request"] > cuts

    body = _assert_old_or_new(glue_http, url, old, "ambiguous")
    pointer = glue.get_table(DatabaseName=ns_name, Name="t")["Table"]["Parameters"]["metadata_location"]
    assert pointer == body["metadata-location"]
    after = _set_property(glue_http, url, "after")
    assert after.status_code == 200, after.text
    assert _assert_old_or_new(glue_http, url, old, "after")["metadata"]["properties"]["after"] == "v"


# PostgreSQL behind the fault proxy -----------------------------------------------------------------
@pytest.fixture(scope="module")
def pg_fault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FaultProxy, ProxyProcess]]:
    with scratch_database() as url:
        parsed = urlparse(url)
        with fault_proxy(parsed.hostname or "127.0.0.1", parsed.port or 5432) as fault:
            faulty = url.replace(f"@{parsed.hostname}:{parsed.port}/", f"@{fault.address}/")
            warehouse = tmp_path_factory.mktemp("faults-pg-warehouse").as_uri()
            config = (
                f'[state]\ndatabase_url = "{faulty}"\n'
                f'[catalogs.local]\nkind = "local"\ndatabase_url = "{faulty}"\nwarehouse = "{warehouse}"\n'
            )
            proxy = ProxyProcess(tmp_path_factory.mktemp("faults-pg-proxy"), config).start()
            yield fault, proxy
            proxy.stop()


@pytest.fixture
def pg_http(pg_fault: tuple[FaultProxy, ProxyProcess]) -> Iterator[httpx.Client]:
    fault, proxy = pg_fault
    fault.up()
    with httpx.Client(base_url=proxy.url, timeout=60) as http:
        yield http
    fault.up()


@pytest.mark.postgres
def test_database_down_is_503_and_not_ready_then_recovers_without_restart(
    pg_fault: tuple[FaultProxy, ProxyProcess], pg_http: httpx.Client, ns_name: str
) -> None:
    fault = pg_fault[0]
    created = _create_table(pg_http, "local", ns_name, "t")
    url = _table_url("local", ns_name, "t")
    assert pg_http.get("/readyz").status_code == 200

    fault.down()
    started = time.monotonic()
    for response in (
        pg_http.get("/v1/local/namespaces"),
        pg_http.get(url),
        pg_http.post("/v1/local/namespaces", json={"namespace": [f"{ns_name}_2"]}),
        _set_property(pg_http, url, "while-down"),
    ):
        assert_error(response, 503, "ServiceUnavailableException")
    took = time.monotonic() - started
    ready = pg_http.get("/readyz")
    print(f"\ndatabase down: 4 requests answered 503 in {took:.2f}s; /readyz {ready.status_code} {ready.text}")
    assert ready.status_code == 503
    assert pg_http.get("/healthz").status_code == 200

    fault.up()
    assert pg_http.get("/readyz").status_code == 200
    loaded = pg_http.get(url)
    assert loaded.status_code == 200, loaded.text
    assert loaded.json()["metadata-location"] == created["metadata-location"]  # the 503 commit changed nothing
    assert _set_property(pg_http, url, "after").status_code == 200
    assert pg_http.post("/v1/local/namespaces", json={"namespace": [f"{ns_name}_2"]}).status_code == 200


@pytest.mark.postgres
def test_database_black_hole_is_503_within_the_connect_timeout(
    pg_fault: tuple[FaultProxy, ProxyProcess], pg_http: httpx.Client, ns_name: str
) -> None:
    """Connections accepted but never answered (a hung server, a dropped route): the 5 s connect timeout of both
    databases bounds the wait; afterwards the pool reconnects."""
    fault = pg_fault[0]
    _create_table(pg_http, "local", ns_name, "t")
    fault.hang = True
    fault.cut_all()  # the pooled connections die; new ones meet the black hole
    started = time.monotonic()
    response = pg_http.get(_table_url("local", ns_name, "t"))
    took = time.monotonic() - started
    ready = pg_http.get("/readyz")
    print(f"\ndatabase black hole: {response.status_code} after {took:.2f}s; /readyz {ready.status_code}")
    assert_error(response, 503, "ServiceUnavailableException")
    assert took < 5 * 2 + 3
    assert ready.status_code == 503
    fault.up()
    fault.cut_all()
    assert pg_http.get(_table_url("local", ns_name, "t")).status_code == 200
    assert pg_http.get("/readyz").status_code == 200


@pytest.mark.postgres
def test_idle_database_connections_cut_are_replaced_transparently(
    pg_fault: tuple[FaultProxy, ProxyProcess], pg_http: httpx.Client, ns_name: str
) -> None:
    fault = pg_fault[0]
    _create_table(pg_http, "local", ns_name, "t")
    fault.cut_all()
    assert pg_http.get(_table_url("local", ns_name, "t")).status_code == 200
    assert pg_http.get("/v1/local/namespaces").status_code == 200


@pytest.mark.postgres
def test_database_connection_cut_after_the_swap_commit_is_commit_state_unknown(
    pg_fault: tuple[FaultProxy, ProxyProcess], pg_http: httpx.Client, ns_name: str
) -> None:
    fault = pg_fault[0]
    old = _create_table(pg_http, "local", ns_name, "t")["metadata-location"]
    url = _table_url("local", ns_name, "t")
    fault.cut_all()  # fresh connections: none is armed by an earlier swap
    cuts = fault.stats["cut_after_request"]
    fault.cut_after_request(b"COMMIT", after=b"UPDATE iceberg_tables")
    response = _set_property(pg_http, url, "ambiguous")
    fault.heal()
    print(f"\ncut after the swap's COMMIT: {response.status_code} {response.text[:160]} stats={dict(fault.stats)}")
    assert fault.stats["cut_after_request"] > cuts
    assert response.status_code == 504, response.text  # the spec's gateway timeout: commit state unknown
    assert response.json()["error"]["type"] == "CommitStateUnknownException"
    body = _assert_old_or_new(pg_http, url, old, "ambiguous")
    assert body["metadata-location"] != old  # the COMMIT reached PostgreSQL before the cut: it landed


@pytest.mark.postgres
def test_database_connection_cut_before_the_swap_commit_is_503_and_nothing_changed(
    pg_fault: tuple[FaultProxy, ProxyProcess], pg_http: httpx.Client, ns_name: str
) -> None:
    fault = pg_fault[0]
    old = _create_table(pg_http, "local", ns_name, "t")["metadata-location"]
    url = _table_url("local", ns_name, "t")
    cuts = fault.stats["cut_after_request"]
    fault.cut_after_request(b"UPDATE iceberg_tables")  # the UPDATE ran, the transaction never commits
    response = _set_property(pg_http, url, "lost")
    fault.heal()
    assert fault.stats["cut_after_request"] > cuts
    assert_error(response, 503, "ServiceUnavailableException")
    loaded = pg_http.get(url)
    assert loaded.status_code == 200 and loaded.json()["metadata-location"] == old
