"""Hostile review of table maintenance (``expire-snapshots``, ``remove-orphan-files``, the run queue): each test
is an attack by a writer of its own table on one served ``irc-proxy serve`` process, and says what must hold.

* a statistics file (or partition statistics file) of an expiring snapshot named after the table's own
  metadata files: the expiry must not delete the metadata log a rollback or a restore reads;
* a directory of the table swapped for a symbolic link into another table's directory while the orphan
  job deletes: no delete may land in the other table;
* requests piling up runs of one table: one queued run per table, and another table's run is not held up;
* a manifest list naming another table's manifest: the manifest rewrite must not copy its entries.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.manifest import write_manifest_list

from tests.support.maintenance import finished_run, path_of, request_run, runs_url
from tests.support.rest import assert_error
from tests.support.server import ProxyProcess, Serve

CONFIG = """
[server.maintenance]
poll_seconds = 0.1
[catalogs.local]
kind = "local"
"""
OLD = time.time() - 5 * 24 * 3600
"""Older than the default orphan_min_age (3 days)."""
RUNS = runs_url()
SCHEMA = pa.schema([pa.field("id", pa.int64())])


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "maintenance-attacks")


@pytest.fixture
def http(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=60) as client:
        yield client


@pytest.fixture
def iceberg(proxy: ProxyProcess) -> RestCatalog:
    return RestCatalog("maintenance-attacks", uri=proxy.url, warehouse="local")


def request(http: httpx.Client, ns: str, name: str, jobs: list[str]) -> str:
    return request_run(http, ns, name, jobs)


def outcome(http: httpx.Client, run_id: str, timeout: float = 120) -> dict[str, Any]:
    return finished_run(http, run_id, timeout=timeout)


# The table's own metadata files ---------------------------------------------------------------------------
def test_expiry_never_deletes_the_metadata_files_an_expired_snapshots_statistics_name(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    """A writer points the statistics and partition statistics of its oldest snapshot at the table's first
    and latest metadata files, then expires that snapshot: every metadata file of the log stays (a rollback,
    a register of an earlier version, a restore read them) and the table loads."""
    iceberg.create_namespace(ns_name)
    table = iceberg.create_table((ns_name, "t"), schema=SCHEMA)
    for i in range(3):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    table = iceberg.load_table((ns_name, "t"))
    oldest = table.metadata.snapshots[0].snapshot_id
    first, latest = table.metadata.metadata_log[0].metadata_file, table.metadata_location
    statistics = {"snapshot-id": oldest, "statistics-path": first, "file-size-in-bytes": 1}
    updates = [
        {"action": "set-statistics", "statistics": {**statistics, "file-footer-size-in-bytes": 1, "blob-metadata": []}},
        {"action": "set-partition-statistics", "partition-statistics": {**statistics, "statistics-path": latest}},
        {"action": "set-properties", "updates": {"history.expire.max-snapshot-age-ms": "1"}},
    ]
    committed = http.post(f"/v1/local/namespaces/{ns_name}/tables/t", json={"updates": updates, "requirements": []})
    assert committed.status_code == 200, committed.text
    log = [entry.metadata_file for entry in iceberg.load_table((ns_name, "t")).metadata.metadata_log]

    result = outcome(http, request(http, ns_name, "t", ["expire-snapshots"]))

    assert result["results"]["expire-snapshots"]["snapshots-expired"] >= 1, result
    assert [entry for entry in log if not path_of(entry).is_file()] == []
    assert path_of(first).is_file() and path_of(latest).is_file()
    assert len(iceberg.load_table((ns_name, "t")).scan().to_arrow()) == 3


# Another table's manifest named in a manifest list ---------------------------------------------------------
def test_the_manifest_rewrite_never_reads_another_tables_manifest_its_list_names(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    """A writer commits a snapshot whose manifest list (in its own table) names another table's manifest beside
    its own, then asks for a manifest rewrite: copied into its table, the other table's entries would make its
    data files this table's (an expiry would then delete them). The job fails without reading that manifest,
    commits nothing and leaves none of its files behind."""
    iceberg.create_namespace(ns_name)
    mine, theirs = (iceberg.create_table((ns_name, name), schema=SCHEMA) for name in ("mine", "theirs"))
    for table in (mine, theirs):
        table.append(pa.table({"id": pa.array([1], pa.int64())}))
    mine, theirs = iceberg.load_table((ns_name, "mine")), iceberg.load_table((ns_name, "theirs"))
    head, other = mine.current_snapshot(), theirs.current_snapshot()
    assert head is not None and other is not None
    snapshot_id, metadata_dir = head.snapshot_id + 1, path_of(mine.metadata_location).parent
    listed = f"file://{metadata_dir}/snap-{snapshot_id}-planted.avro"
    with write_manifest_list(2, mine.io.new_output(listed), snapshot_id, head.snapshot_id, 2, "null") as writer:
        writer.add_manifests([*head.manifests(mine.io), *other.manifests(theirs.io)])
    snapshot = {
        "snapshot-id": snapshot_id,
        "parent-snapshot-id": head.snapshot_id,
        "sequence-number": 2,
        "timestamp-ms": head.timestamp_ms + 1,
        "manifest-list": listed,
        "summary": {"operation": "append"},
    }
    updates = [
        {"action": "add-snapshot", "snapshot": snapshot},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id},
    ]
    committed = http.post(f"/v1/local/namespaces/{ns_name}/tables/mine", json={"updates": updates, "requirements": []})
    assert committed.status_code == 200, committed.text
    location = iceberg.load_table((ns_name, "mine")).metadata_location
    files = set(metadata_dir.iterdir())

    result = outcome(http, request(http, ns_name, "mine", ["rewrite-manifests"]))

    job = result["results"]["rewrite-manifests"]
    assert job["status"] == "failed" and "outside the table's locations" in job["error"], job
    assert iceberg.load_table((ns_name, "mine")).metadata_location == location
    assert set(metadata_dir.iterdir()) == files


# A directory swapped for a link while the deletes run -----------------------------------------------------
_LIBC = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def exchange(first: Path, second: Path) -> None:
    """Swap two names atomically (Linux ``renameat2(RENAME_EXCHANGE)``)."""
    if _LIBC.renameat2(_AT_FDCWD, bytes(first), _AT_FDCWD, bytes(second), _RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def plant(directory: Path, count: int) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    planted = [directory / f"part-{i:05}.parquet" for i in range(count)]
    for path in planted:
        path.write_bytes(b"x")
        os.utime(path, (OLD, OLD))
    return planted


def test_a_directory_swapped_for_a_link_during_the_deletes_never_deletes_another_tables_files(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    """The attacker's table holds thousands of old orphans in ``data/sub``; beside it a link ``data/elsewhere``
    points at the victim table's ``data`` directory, which holds files of the same names. While the orphan
    job runs, the attacker swaps ``sub`` and the link, over and over: a delete checked while ``sub`` was the
    directory and carried out once it is the link would remove the victim's file. None may go."""
    iceberg.create_namespace(ns_name)
    attacker = iceberg.create_table((ns_name, "attacker"), schema=SCHEMA)
    victim = iceberg.create_table((ns_name, "victim"), schema=SCHEMA)
    victim.append(pa.table({"id": pa.array([1], pa.int64())}))
    sub = path_of(attacker.location()) / "data" / "sub"
    link = sub.parent / "elsewhere"
    victims = plant(path_of(victim.location()) / "data", 4000)
    sub.mkdir(parents=True)
    link.symlink_to(victims[0].parent, target_is_directory=True)
    for _round in range(3):
        if link.is_symlink() is False:
            exchange(sub, link)  # back to: sub the directory, elsewhere the link
        plant(sub, 4000)
        stop, swaps = threading.Event(), [0]

        def swap() -> None:
            while not stop.is_set():
                exchange(sub, link)
                swaps[0] += 1

        swapper = threading.Thread(target=swap)
        swapper.start()
        try:
            result = outcome(http, request(http, ns_name, "attacker", ["remove-orphan-files"]))
        finally:
            stop.set()
            swapper.join()
        assert [path.name for path in victims if not path.is_file()] == []
        assert swaps[0] > 0 and result["status"] == "succeeded", result
    assert len(iceberg.load_table((ns_name, "victim")).scan().to_arrow()) == 1


# The run queue ----------------------------------------------------------------------------------------------
def test_one_tables_requests_queue_one_run_and_never_hold_up_another_tables_run(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    """A writer asks for run after run of its own table: while one is queued the next is refused (409, naming
    it), so one caller cannot fill the state database or the claim window, and a run of another table asked
    for afterwards finishes."""
    iceberg.create_namespace(ns_name)
    for name in ("busy", "other"):
        iceberg.create_table((ns_name, name), schema=SCHEMA)
    accepted, body = 0, {"table": {"namespace": [ns_name], "name": "busy"}, "jobs": ["expire-snapshots"]}
    for _ in range(30):
        response = http.post(RUNS, json=body)
        if response.status_code == 202:
            accepted += 1
        else:
            assert_error(response, 409, "ConflictException", "is queued already")
    assert accepted < 30
    assert outcome(http, request(http, ns_name, "other", ["expire-snapshots"]), timeout=30)["status"] == "succeeded"
    listed = http.get(RUNS, params={"namespace": ns_name, "table": "busy", "page-size": "1000"}).json()["runs"]
    assert len(listed) == accepted


# Storage the catalog does not hold alone ------------------------------------------------------------------
@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    """Catalogs ``one`` and ``two`` share the allowed location ``lake``."""
    workdir = tmp_path_factory.mktemp("maintenance-shared")
    lake = workdir / "lake"
    lake.mkdir()
    config = f"""
[server.maintenance]
poll_seconds = 0.1
[catalogs.one]
warehouse = "{(lake / "one").as_uri()}"
allowed_locations = ["{lake.as_uri()}"]
[catalogs.two]
warehouse = "{(lake / "two").as_uri()}"
allowed_locations = ["{lake.as_uri()}"]
"""
    server = ProxyProcess(workdir, config).start()
    try:
        yield server
    finally:
        server.stop()


def files_under(directory: Path) -> set[Path]:
    return {path for path in directory.rglob("*") if path.is_file()}


def run_in(server: ProxyProcess, catalog: str, ns: str, name: str) -> dict[str, Any]:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        jobs = ["expire-snapshots", "remove-orphan-files"]
        return finished_run(http, request_run(http, ns, name, jobs, catalog=catalog), catalog)


def test_a_table_created_over_another_catalogs_tables_is_left_alone(shared: ProxyProcess, ns_name: str) -> None:
    """Catalogs check occupancy among their own objects only: a writer of catalog ``one`` creates its table at
    catalog ``two``'s warehouse (both may use the lake) and asks for maintenance. Orphan removal would
    delete every file of ``two`` the table does not reach; both jobs are skipped instead, saying why."""
    two = RestCatalog("two", uri=shared.url, warehouse="two")
    two.create_namespace(ns_name)
    victim = two.create_table((ns_name, "orders"), schema=SCHEMA)
    victim.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    lake_two = path_of(victim.location()).parent.parent
    for path in files_under(lake_two):
        os.utime(path, (OLD, OLD))
    before = files_under(lake_two)
    one = RestCatalog("one", uri=shared.url, warehouse="one")
    one.create_namespace(ns_name)
    one.create_table((ns_name, "grab"), schema=SCHEMA, location=lake_two.as_uri())

    result = run_in(shared, "one", ns_name, "grab")

    assert before <= files_under(lake_two)
    assert result["status"] == "skipped", result
    assert all("another catalog" in job["reason"] for job in result["results"].values())
    assert len(two.load_table((ns_name, "orders")).scan().to_arrow()) == 2


def test_a_table_over_the_proxys_data_directory_is_left_alone(tmp_path: Path, ns_name: str) -> None:
    """An allowed location that contains the data directory lets a writer's first table sit over it: orphan
    removal would delete the catalog and state databases once they are older than ``orphan_min_age``."""
    data = tmp_path / "data"
    config = f"""
[server.maintenance]
poll_seconds = 0.1
[catalogs.wide]
warehouse = "{(data / "warehouse").as_uri()}"
allowed_locations = ["{tmp_path.as_uri()}"]
"""
    server = ProxyProcess(tmp_path, config).start()
    try:
        catalog_db = data / "catalog.db"
        os.utime(catalog_db, (OLD, OLD))
        wide = RestCatalog("wide", uri=server.url, warehouse="wide")
        wide.create_namespace(ns_name)
        wide.create_table((ns_name, "everything"), schema=SCHEMA, location=data.as_uri())

        result = run_in(server, "wide", ns_name, "everything")
    finally:
        server.stop()

    assert catalog_db.is_file() and (data / "state.db").is_file()
    assert result["results"]["remove-orphan-files"]["status"] == "skipped", result
    assert "data directory" in result["results"]["remove-orphan-files"]["reason"]
