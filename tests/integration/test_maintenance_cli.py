"""``irc-proxy maintenance run|status|list`` (issue 28, item 6): the real ``irc-proxy`` command beside a real
``irc-proxy serve`` on the same configuration and state database.

A run queued from the command line is run by the server's worker; ``status`` and ``list`` print exactly the
management API's bodies; bad input is exit 2 before anything is queued; with no worker running maintenance,
``--wait`` gives up with exit 3 and says why, and ``--here`` runs the run in the command's own process.
"""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import Table

from tests.support.rest import MGMT
from tests.support.server import ProxyProcess, Serve

CONFIG = """
[server.maintenance]
poll_seconds = 0.1
[catalogs.local]
kind = "local"
"""
RUNS = f"{MGMT}/catalogs/local/maintenance/runs"


def cli(proxy: ProxyProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``irc-proxy ARGS --config <the server's configuration>``, a process of its own."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")}
    return subprocess.run(
        [sys.executable, "-m", "irc_proxy", *args, "--config", str(proxy.config_path)],
        capture_output=True,
        text=True,
        env=clean,
        cwd=proxy.workdir,
        timeout=120,
    )


def answer(result: subprocess.CompletedProcess[str], code: int = 0) -> Any:
    assert result.returncode == code, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def history(iceberg: RestCatalog, ns: str, name: str) -> Table:
    """Several snapshots, and a retention that lets all but the head go."""
    iceberg.create_namespace_if_not_exists(ns)
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    table = iceberg.create_table((ns, name), schema=data.schema)
    for _ in range(3):
        table.append(data)
    table.overwrite(data)
    with table.transaction() as tx:
        tx.set_properties({"history.expire.max-snapshot-age-ms": "1"})
    return iceberg.load_table((ns, name))


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "maintenance-cli")


@pytest.fixture
def http(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=60) as client:
        yield client


def test_a_dry_run_queued_from_the_cli_is_run_by_the_server_and_status_and_list_print_the_apis_json(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    table = history(RestCatalog("cli", uri=proxy.url, warehouse="local"), ns_name, "orders")
    before = table.metadata_location

    queued = answer(cli(proxy, "maintenance", "run", f"{ns_name}.orders", "--dry-run", "--job", "expire-snapshots"))
    assert queued["status"] == "queued" and set(queued) == {"id", "status"}
    waited = answer(cli(proxy, "maintenance", "status", queued["id"], "--wait", "--timeout", "60"))

    assert waited["status"] == "succeeded" and waited["dry-run"] is True, waited
    assert waited["results"]["expire-snapshots"]["snapshots-expired"] == len(table.metadata.snapshots) - 1
    assert waited["requested-by"] == f"cli:{getpass.getuser()}"
    assert http.get(f"/v1/local/namespaces/{ns_name}/tables/orders").json()["metadata-location"] == before
    assert answer(cli(proxy, "maintenance", "status", queued["id"])) == http.get(f"{RUNS}/{queued['id']}").json()
    for typed in (f"{ns_name}.orders", f"{ns_name}:orders", f"{ns_name}%1Forders"):
        listed = answer(cli(proxy, "maintenance", "list", "--table", typed))
        assert listed == http.get(RUNS, params={"namespace": ns_name, "table": "orders"}).json()
        assert [run["id"] for run in listed["runs"]] == [queued["id"]]
    assert (
        answer(cli(proxy, "maintenance", "list", "--namespace", ns_name))
        == http.get(RUNS, params={"namespace": ns_name}).json()
    )
    seen: set[tuple[str, str]] = set()
    deadline = time.monotonic() + 30  # the worker records the run just after its outcome (the audit sink batches)
    while ("maintenance.run", "irc-proxy") not in seen and time.monotonic() < deadline:
        time.sleep(0.1)
        records = http.get(f"{MGMT}/audit", params={"object": f"{ns_name}.orders"}).json()["records"]
        seen = {(r["operation"], r["principal"]) for r in records}
    assert ("management.requestMaintenanceRun", f"cli:{getpass.getuser()}") in seen
    assert ("management.getMaintenanceRun", f"cli:{getpass.getuser()}") in seen
    assert ("maintenance.run", "irc-proxy") in seen


def test_run_wait_prints_the_finished_run_and_pages_follow(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    history(RestCatalog("cli", uri=proxy.url, warehouse="local"), ns_name, "paged")
    first = answer(cli(proxy, "maintenance", "run", f"{ns_name}:paged", "--dry-run", "--wait"))
    assert first["status"] == "succeeded" and first["jobs"] == [
        "expire-snapshots",
        "remove-orphan-files",
        "rewrite-manifests",
        "rewrite-data-files",
    ]
    second = answer(
        cli(proxy, "maintenance", "run", f"{ns_name}.paged", "--dry-run", "--wait", "--job", "rewrite-manifests")
    )
    assert second["status"] == "succeeded" and second["jobs"] == ["rewrite-manifests"]

    page = answer(cli(proxy, "maintenance", "list", "--namespace", ns_name, "--limit", "1"))
    api = http.get(RUNS, params={"namespace": ns_name, "page-size": "1"}).json()
    assert page == api and page["next-page-token"] == "1" and page["runs"][0]["id"] == second["id"]
    rest = answer(cli(proxy, "maintenance", "list", "--namespace", ns_name, "--limit", "1", "--page-token", "1"))
    assert [run["id"] for run in rest["runs"]] == [first["id"]] and "next-page-token" not in rest


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "orders"), "Invalid identifier"),
        (("run", "sales..orders"), "must be a non-empty string"),
        (("run", "sales.orders", "--job", "defragment"), "unknown job defragment; one or more of: expire-snapshots"),
        (("run", "sales.orders", "--timeout", "0", "--wait"), "--timeout"),
        (("list", "--limit", "0"), "--limit must be 1 to 1000"),
        (("list", "--page-token", "x"), "--page-token"),
        (("list", "--table", "sales"), "Invalid identifier"),
    ],
)
def test_bad_input_is_exit_2_and_queues_nothing(
    proxy: ProxyProcess, http: httpx.Client, args: tuple[str, ...], message: str
) -> None:
    before = http.get(RUNS).json()
    result = cli(proxy, "maintenance", *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr and result.stdout == "" and "Traceback" not in result.stderr
    assert http.get(RUNS).json() == before


def test_a_missing_table_catalog_or_run_is_refused_with_exit_1(proxy: ProxyProcess, ns_name: str) -> None:
    missing = cli(proxy, "maintenance", "run", f"{ns_name}.nope")
    assert missing.returncode == 1 and "does not exist" in missing.stderr, missing.stderr
    other = cli(proxy, "maintenance", "list", "--catalog", "elsewhere")
    assert other.returncode == 1 and "elsewhere" in other.stderr, other.stderr
    unknown = cli(proxy, "maintenance", "status", "0123abcd")
    assert unknown.returncode == 1 and "No such maintenance run" in unknown.stderr, unknown.stderr


def test_without_a_worker_wait_gives_up_with_exit_3_and_here_runs_it_in_the_cli(serve: Serve, ns_name: str) -> None:
    """A server whose worker runs nothing (``max_concurrent_runs = 0``) stands for "no server running"."""
    idle = serve(CONFIG.replace("poll_seconds = 0.1", "poll_seconds = 0.1\nmax_concurrent_runs = 0"), "idle")
    iceberg = RestCatalog("idle", uri=idle.url, warehouse="local")
    table = history(iceberg, ns_name, "events")
    head = table.metadata.current_snapshot_id

    gave_up = cli(idle, "maintenance", "run", f"{ns_name}.events", "--wait", "--timeout", "1")
    assert gave_up.returncode == 3, gave_up.stderr
    assert json.loads(gave_up.stdout)["status"] == "queued"
    assert "still queued after 1s" in gave_up.stderr and "--here" in gave_up.stderr

    again = cli(idle, "maintenance", "run", f"{ns_name}.events", "--here")
    assert again.returncode == 1 and "is queued already" in again.stderr  # one queued run per table
    queued = json.loads(gave_up.stdout)["id"]
    done = answer(cli(idle, "maintenance", "status", queued, "--here"))

    assert done["status"] == "succeeded", done
    assert done["results"]["expire-snapshots"]["snapshots-expired"] == len(table.metadata.snapshots) - 1
    assert [s.snapshot_id for s in iceberg.load_table((ns_name, "events")).metadata.snapshots] == [head]
    with httpx.Client(base_url=idle.url, timeout=60) as http:
        statuses = [run["status"] for run in http.get(RUNS, params={"namespace": ns_name}).json()["runs"]]
        assert statuses == ["succeeded"]  # the queued run, run here
        records = http.get(f"{MGMT}/audit", params={"operation": "maintenance.run"}).json()["records"]
        assert [r["principal"] for r in records] == ["irc-proxy"] and done["id"] in records[0]["reason"]
