"""Scheduled maintenance and policies (issue 28 items 3 and 5) on two real replicas sharing one PostgreSQL.

* commits mark their tables, one replica at a time sweeps: every table needing attention gets exactly one
  scheduled run although both replicas sweep every second; a catalog with ``enabled = false`` gets none;
* the sweep's walk finds a table written behind the proxy's back (pyiceberg's SQL catalog on the same database);
* precedence, asserted on what expiry keeps: a namespace override is inherited by a child namespace, a table's
  override wins over it, Iceberg's own ``history.expire.min-snapshots-to-keep`` wins over both;
* a replica SIGKILLed between an expiry's commit and its deletes: the other replica takes the run over once the
  lease ends and deletes the rest; nothing the table still reaches goes.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from tests.support.maintenance import finished_run, path_of, request_run, runs_url
from tests.support.postgres import scratch_database
from tests.support.server import ProxyProcess

pytestmark = pytest.mark.postgres
SNAPSHOTS = 3
"""Appends each table gets: the catalog's ``snapshots`` threshold, so each needs attention once written."""


def config(url: str, warehouse: Path, off: Path, *, enabled: bool = True, lease: float = 3) -> str:
    return f"""
[state]
database_url = "{url}"
[server.maintenance]
poll_seconds = 0.2
lease_seconds = {lease}
[catalogs.local]
kind = "local"
database_url = "{url}"
warehouse = "{warehouse.as_uri()}"
[catalogs.local.maintenance]
enabled = {"true" if enabled else "false"}
interval = "PT1S"
jobs = ["expire-snapshots"]
snapshots = {SNAPSHOTS}
max_snapshot_age = "PT0S"
min_run_interval = "PT1H"
[catalogs.off]
kind = "local"
database_url = "sqlite:///{off / "off.db"}"
warehouse = "{off.as_uri()}/warehouse"
[catalogs.off.maintenance]
snapshots = 1
max_snapshot_age = "PT0S"
"""


def policy_url(catalog: str = "local") -> str:
    return runs_url(catalog).removesuffix("/runs") + "/policy"


def rows(start: int) -> pa.Table:
    return pa.table({"id": pa.array([start, start + 1], pa.int64())})


def written(catalog: Any, namespace: tuple[str, ...], name: str, appends: int = SNAPSHOTS, **props: str) -> Table:
    """Create a table and give it ``appends`` snapshots in one commit.

    One commit, not one per append: a sweep between two appends would otherwise run on a table only part-written
    (it then needs attention once ``SNAPSHOTS`` are there) and what expiry kept would depend on the timing.
    """
    catalog.create_namespace_if_not_exists(namespace)
    table = catalog.create_table((*namespace, name), schema=rows(0).schema, properties=props)
    with table.transaction() as transaction:
        for i in range(appends):
            transaction.append(rows(i * 2))
    return catalog.load_table((*namespace, name))


def runs_of(http: httpx.Client, namespace: tuple[str, ...], name: str, catalog: str = "local") -> list[dict[str, Any]]:
    params = {"namespace": "\x1f".join(namespace), "table": name}
    response = http.get(runs_url(catalog), params=params)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["runs"]
    return found


def wait_for(predicate: Any, timeout: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProxyProcess, ProxyProcess, str, Path]]:
    with scratch_database() as url:
        warehouse = tmp_path_factory.mktemp("scheduled-warehouse")
        off = tmp_path_factory.mktemp("unscheduled")
        text = config(url, warehouse, off)
        first = ProxyProcess(tmp_path_factory.mktemp("replica-a"), text).start()
        second = ProxyProcess(tmp_path_factory.mktemp("replica-b"), text).start()
        yield first, second, url, warehouse
        first.stop()
        second.stop()


def test_two_sweeping_replicas_maintain_each_table_once_and_a_disabled_catalog_never(
    replicas: tuple[ProxyProcess, ProxyProcess, str, Path], ns_name: str
) -> None:
    a, b, _url, _warehouse = replicas
    names = [f"t{i}" for i in range(6)]
    for i, name in enumerate(names):  # written through both replicas: each commit marks its table
        written(RestCatalog("w", uri=(a, b)[i % 2].url, warehouse="local"), (ns_name,), name)
    off = RestCatalog("off", uri=a.url, warehouse="off")
    written(off, (ns_name,), "idle")
    with httpx.Client(base_url=b.url, timeout=30) as http:
        wait_for(
            lambda: all([r["status"] for r in runs_of(http, (ns_name,), n)] == ["succeeded"] for n in names),
            what="one finished run per table",
        )
        time.sleep(3)  # three more sweeps of each replica: none queues a second run
        for name in names:
            found = runs_of(http, (ns_name,), name)
            assert len(found) == 1, found
            assert found[0]["requested-by"] == "irc-proxy" and found[0]["jobs"] == ["expire-snapshots"]
            assert found[0]["results"]["expire-snapshots"]["snapshots-expired"] == SNAPSHOTS - 1
        assert runs_of(http, (ns_name,), "idle", catalog="off") == []
    for name in names:
        assert len(RestCatalog("r", uri=a.url, warehouse="local").load_table((ns_name, name)).metadata.snapshots) == 1
    assert len(off.load_table((ns_name, "idle")).metadata.snapshots) == SNAPSHOTS


def test_the_walk_finds_a_table_written_behind_the_proxy(
    replicas: tuple[ProxyProcess, ProxyProcess, str, Path], ns_name: str
) -> None:
    a, _b, url, warehouse = replicas
    behind = SqlCatalog("local", uri=url, warehouse=warehouse.as_uri())
    written(behind, (ns_name,), "direct")  # no commit went through a proxy: no mark
    with httpx.Client(base_url=a.url, timeout=30) as http:
        wait_for(lambda: [r["status"] for r in runs_of(http, (ns_name,), "direct")] == ["succeeded"], what="a run")
    assert len(behind.load_table((ns_name, "direct")).metadata.snapshots) == 1


def test_namespace_override_is_inherited_table_override_wins_iceberg_property_wins_over_both(
    replicas: tuple[ProxyProcess, ProxyProcess, str, Path], ns_name: str
) -> None:
    a, _b, _url, _warehouse = replicas
    iceberg = RestCatalog("p", uri=a.url, warehouse="local")
    key = "irc-proxy.maintenance.min_snapshots_to_keep"
    iceberg.create_namespace((ns_name,), properties={key: "3"})
    child = (ns_name, "child")
    iceberg.create_namespace(child)
    kept = {
        "inherited": ({}, 3),
        "own": ({key: "2"}, 2),
        "iceberg": ({key: "2", "history.expire.min-snapshots-to-keep": "4"}, 4),
    }
    for name, (props, _) in kept.items():
        written(iceberg, child, name, appends=5, **props)
    with httpx.Client(base_url=a.url, timeout=30) as http:
        for name, (_, keep) in kept.items():
            wait_for(lambda n=name: [r["status"] for r in runs_of(http, child, n)] == ["succeeded"], what=name)
            assert len(iceberg.load_table((*child, name)).metadata.snapshots) == keep, name
        shown = http.get(policy_url(), params={"namespace": "\x1f".join(child), "table": "iceberg"})
        assert shown.status_code == 200, shown.text
        value = shown.json()["policy"]["min_snapshots_to_keep"]
        assert value == {"value": 4, "source": "table property history.expire.min-snapshots-to-keep"}
        inherited = http.get(policy_url(), params={"namespace": "\x1f".join(child), "table": "inherited"}).json()
        assert inherited["policy"]["min_snapshots_to_keep"] == {"value": 3, "source": f"namespace {ns_name}"}
        assert inherited["policy"]["snapshots"] == {"value": SNAPSHOTS, "source": "catalog"}
        assert inherited["scheduled"] is True


def test_an_invalid_override_is_refused_at_commit_and_namespace_update(
    replicas: tuple[ProxyProcess, ProxyProcess, str, Path], ns_name: str
) -> None:
    a, _b, _url, _warehouse = replicas
    with httpx.Client(base_url=a.url, timeout=30) as http:
        assert http.post("/v1/local/namespaces", json={"namespace": [ns_name]}).status_code == 200
        bad = {"irc-proxy.maintenance.snapshots": "many"}
        update = http.post(f"/v1/local/namespaces/{ns_name}/properties", json={"updates": bad, "removals": []})
        assert update.status_code == 400 and "irc-proxy.maintenance.snapshots" in update.text, update.text
        schema = {
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
        }
        created = http.post(f"/v1/local/namespaces/{ns_name}/tables", json={"name": "t", "schema": schema})
        assert created.status_code == 200, created.text
        body = {"requirements": [], "updates": [{"action": "set-properties", "updates": bad}]}
        commit = http.post(f"/v1/local/namespaces/{ns_name}/tables/t", json=body)
        assert commit.status_code == 400, commit.text
        assert commit.json()["error"]["type"] == "BadRequestException"


def test_a_replica_killed_between_commit_and_deletes_leaves_the_rest_to_the_other(
    tmp_path_factory: pytest.TempPathFactory, ns_name: str
) -> None:
    with scratch_database() as url:
        warehouse, off = tmp_path_factory.mktemp("killed-warehouse"), tmp_path_factory.mktemp("killed-off")
        text = config(url, warehouse, off, enabled=False, lease=2)
        pause = {"IRC_TEST_PAUSE_AT": "expire-snapshots.after-commit=120"}
        proxies = [ProxyProcess(tmp_path_factory.mktemp(f"kill-{i}"), text, env=pause).start() for i in range(2)]
        try:
            iceberg = RestCatalog("k", uri=proxies[0].url, warehouse="local")
            table = written(iceberg, (ns_name,), "t", appends=4)
            expected = table.scan().to_arrow().sort_by("id")
            old_lists = {path_of(s.manifest_list) for s in table.metadata.snapshots[:-1]}
            with httpx.Client(base_url=proxies[1].url, timeout=30) as http:
                run_id = request_run(http, ns_name, "t", ["expire-snapshots"])
                wait_for(lambda: any("paused at" in p.log() for p in proxies), what="the pause after the commit")
                holder = next(p for p in proxies if "paused at" in p.log())
                assert len(iceberg.load_table((ns_name, "t")).metadata.snapshots) == 1  # committed ...
                assert all(path.exists() for path in old_lists)  # ... and nothing deleted yet
                holder.send_signal(signal.SIGKILL)
                killed = time.monotonic()
                other = next(p for p in proxies if p is not holder)
                with httpx.Client(base_url=other.url, timeout=30) as survivor:
                    result = finished_run(survivor, run_id, timeout=60)
                took = time.monotonic() - killed
            print(f"\ntaken over and finished {took:.1f}s after the kill (lease 2 s)")
            expiry = result["results"]["expire-snapshots"]
            assert result["status"] == "succeeded", result
            assert expiry["resumed-files-deleted"] >= len(old_lists), expiry
            assert not any(path.exists() for path in old_lists)
            holder.start()  # the killed replica comes back: nothing is left to do, nothing is lost
            table = RestCatalog("k2", uri=holder.url, warehouse="local").load_table((ns_name, "t"))
            assert table.scan().to_arrow().sort_by("id") == expected
        finally:
            for proxy in proxies:
                proxy.stop()
