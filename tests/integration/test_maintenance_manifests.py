"""The ``rewrite-manifests`` job (issue 28) on the local executor, requested through the management API of one
real ``irc-proxy serve`` process and run by its worker.

pyiceberg writes through the server's socket (one manifest per append); the assertions are on results: the
number of manifests, every live file kept with its snapshot id and sequence numbers, and the same rows read by
pyiceberg and DuckDB before and after. Also: two partition specs kept apart, a commit racing the rewrite (it
wins, the rewrite plans again and the losing attempt's files are deleted), dry runs, v3 and empty tables.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.manifest import ManifestEntryStatus
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform

from irc_proxy.app import build_catalogs, open_state
from irc_proxy.handling.maintenance.job import Job, Limits
from irc_proxy.handling.maintenance.manifests import Prepared, RewriteManifests
from irc_proxy.handling.naming import TableIdent
from irc_proxy.settings import load_settings
from irc_proxy.threads import ThreadRunner
from tests.e2e.test_duckdb import connect
from tests.support.maintenance import finished_run, path_of, request_run
from tests.support.server import ProxyProcess, Serve

CONFIG = """
[server.maintenance]
poll_seconds = 0.1
[catalogs.local]
kind = "local"
"""
JOB = "rewrite-manifests"


def rows(start: int, count: int = 2) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "data": pa.array([f"r{i}" for i in ids]),
            "kind": pa.array(["even" if i % 2 == 0 else "odd" for i in ids]),
        }
    )


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "manifests")


@pytest.fixture
def http(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=60) as client:
        yield client


@pytest.fixture
def iceberg(proxy: ProxyProcess) -> RestCatalog:
    return RestCatalog("manifests", uri=proxy.url, warehouse="local")


def run(http: httpx.Client, ns: str, name: str, dry_run: bool = False) -> dict[str, Any]:
    run_id = request_run(http, ns, name, [JOB], dry_run)
    found = finished_run(http, run_id)
    return {**found["results"][JOB], "run-status": found["status"]}


def appended(iceberg: RestCatalog, ns: str, name: str, appends: int, properties: dict[str, str] | None = None) -> Table:
    iceberg.create_namespace_if_not_exists(ns)
    table = iceberg.create_table((ns, name), schema=rows(0).schema, properties=properties or {})
    for i in range(appends):
        table.append(rows(i * 2))
    return table


def checksum(table: Table) -> list[tuple[Any, ...]]:
    data = table.scan().to_arrow().sort_by("id")
    return list(zip(data["id"].to_pylist(), data["data"].to_pylist(), strict=True))


def duckdb_rows(proxy: ProxyProcess, directory: Path, ns: str, name: str) -> tuple[int, int]:
    """(row count, a checksum of every row) as DuckDB reads the table through the proxy."""
    duck = connect(proxy, directory)
    try:
        found = duck.execute(f"SELECT count(*), sum(hash(id, data)) FROM irc.{ns}.{name}").fetchone()
    finally:
        duck.close()
    assert found is not None
    return int(found[0]), int(found[1])


def live_files(table: Table) -> dict[str, tuple[int | None, int | None, int | None]]:
    """Each live data file of the current snapshot: (snapshot id, data and file sequence numbers)."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return {
        e.data_file.file_path: (e.snapshot_id, e.sequence_number, e.file_sequence_number)
        for m in snapshot.manifests(table.io)
        for e in m.fetch_manifest_entry(table.io, discard_deleted=True)
    }


def manifest_count(table: Table) -> int:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return len(snapshot.manifests(table.io))


@pytest.mark.parametrize(("version", "appends"), [(2, 30), (1, 6)])
def test_many_appends_merge_into_one_manifest_and_pyiceberg_and_duckdb_read_the_same_rows(
    http: httpx.Client,
    iceberg: RestCatalog,
    proxy: ProxyProcess,
    ns_name: str,
    tmp_path: Path,
    version: int,
    appends: int,
) -> None:
    table = appended(iceberg, ns_name, "events", appends, {"format-version": str(version)})
    before, files_before = checksum(table), live_files(table)
    duck_before = duckdb_rows(proxy, tmp_path / "duckdb", ns_name, "events")
    head = table.metadata.current_snapshot_id
    assert manifest_count(table) == appends and duck_before[0] == 2 * appends

    result = run(http, ns_name, "events")

    assert result["status"] == "succeeded", result
    assert (result["manifests-rewritten"], result["manifests-added"], result["manifests-kept"]) == (appends, 1, 0)
    assert result["entries-processed"] == appends and result["truncated"] is False
    table = iceberg.load_table((ns_name, "events"))
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.snapshot_id == result["snapshot-id"]
    assert snapshot.parent_snapshot_id == head and snapshot.summary is not None
    summary = snapshot.summary
    assert summary.operation.value == "replace"
    assert summary["manifests-created"] == "1" and summary["manifests-replaced"] == str(appends)
    assert summary["manifests-kept"] == "0" and summary["entries-processed"] == str(appends)
    assert summary["total-records"] == str(2 * appends) and summary["total-data-files"] == str(appends)
    if version == 2:
        assert snapshot.sequence_number == appends + 1
    assert manifest_count(table) == 1
    manifest = snapshot.manifests(table.io)[0]
    assert manifest.added_snapshot_id == snapshot.snapshot_id and manifest.existing_files_count == appends
    statuses = {e.status for e in manifest.fetch_manifest_entry(table.io)}
    assert statuses == {ManifestEntryStatus.EXISTING}
    assert live_files(table) == files_before  # same files, same snapshot ids and sequence numbers
    assert checksum(table) == before
    assert duckdb_rows(proxy, tmp_path / "duckdb", ns_name, "events") == duck_before

    again = run(http, ns_name, "events")  # one manifest left: nothing to do, no empty commit
    assert again["status"] == "succeeded" and again["manifests-rewritten"] == again["manifests-added"] == 0
    assert iceberg.load_table((ns_name, "events")).metadata.current_snapshot_id == snapshot.snapshot_id


def test_each_partition_spec_is_merged_apart_and_rows_stay(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    table = appended(iceberg, ns_name, "specs", 4)
    with table.update_spec() as spec:
        spec.add_field("kind", IdentityTransform(), "kind")
    table = iceberg.load_table((ns_name, "specs"))
    for i in range(5):
        table.append(rows(100 + i * 2))
    before, files_before, count = checksum(table), live_files(table), manifest_count(table)
    assert count == 9

    result = run(http, ns_name, "specs")

    assert result["status"] == "succeeded", result
    table = iceberg.load_table((ns_name, "specs"))
    snapshot = table.current_snapshot()
    assert snapshot is not None
    manifests = snapshot.manifests(table.io)
    assert sorted(m.partition_spec_id for m in manifests) == [0, 1]
    assert result["manifests-added"] == 2 and result["manifests-rewritten"] == count
    for manifest in manifests:
        specs = {e.data_file.spec_id for e in manifest.fetch_manifest_entry(table.io)}
        assert specs == {manifest.partition_spec_id}
    assert live_files(table) == files_before and checksum(table) == before


def test_manifests_with_deleted_entries_are_merged_to_their_live_files_only(
    http: httpx.Client, iceberg: RestCatalog, proxy: ProxyProcess, ns_name: str, tmp_path: Path
) -> None:
    """A copy-on-write delete leaves manifests with DELETED entries: the rewrite keeps only the live files."""
    table = appended(iceberg, ns_name, "deleted", 6)
    table.delete(delete_filter="id < 4")  # removes the first two appends' files
    table = iceberg.load_table((ns_name, "deleted"))
    before, files_before = checksum(table), live_files(table)
    duck_before = duckdb_rows(proxy, tmp_path / "duckdb", ns_name, "deleted")
    assert len(before) == 8 and len(files_before) == 4

    result = run(http, ns_name, "deleted")

    assert result["status"] == "succeeded" and result["entries-processed"] == 4, result
    table = iceberg.load_table((ns_name, "deleted"))
    assert manifest_count(table) == 1
    assert live_files(table) == files_before and checksum(table) == before
    assert duckdb_rows(proxy, tmp_path / "duckdb", ns_name, "deleted") == duck_before


def test_a_small_target_size_makes_several_manifests_and_manifests_at_the_target_are_kept(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    table = appended(iceberg, ns_name, "target", 8)
    size = table.current_snapshot().manifests(table.io)[0].manifest_length  # type: ignore[union-attr]
    with table.transaction() as tx:
        tx.set_properties({"commit.manifest.target-size-bytes": str(size * 3)})
    before = checksum(table)

    result = run(http, ns_name, "target")

    assert result["status"] == "succeeded", result
    assert 1 < result["manifests-added"] < 8 and result["manifests-rewritten"] + result["manifests-kept"] == 8
    table = iceberg.load_table((ns_name, "target"))
    assert manifest_count(table) == result["manifests-added"] + result["manifests-kept"]
    assert checksum(table) == before
    with table.transaction() as tx:
        tx.set_properties({"commit.manifest.target-size-bytes": "1"})
    everything_at_target = run(http, ns_name, "target")
    assert everything_at_target["status"] == "succeeded" and everything_at_target["manifests-rewritten"] == 0


def test_a_dry_run_reports_and_changes_nothing(http: httpx.Client, iceberg: RestCatalog, ns_name: str) -> None:
    table = appended(iceberg, ns_name, "dry", 5)
    location = http.get(f"/v1/local/namespaces/{ns_name}/tables/dry").json()["metadata-location"]
    on_disk = {p for p in path_of(table.location()).rglob("*") if p.is_file()}

    result = run(http, ns_name, "dry", dry_run=True)

    assert result["status"] == "succeeded" and result["dry-run"] is True, result
    assert (result["manifests-rewritten"], result["manifests-added"], result["entries-processed"]) == (5, 1, 5)
    assert http.get(f"/v1/local/namespaces/{ns_name}/tables/dry").json()["metadata-location"] == location
    assert {p for p in path_of(table.location()).rglob("*") if p.is_file()} == on_disk


def test_v3_tables_are_skipped_naming_the_spark_executor_and_empty_tables_succeed(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    iceberg.create_namespace(ns_name)
    schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
    create = {"name": "v3", "schema": schema, "properties": {"format-version": "3"}}
    assert http.post(f"/v1/local/namespaces/{ns_name}/tables", json=create).status_code == 200
    iceberg.create_table((ns_name, "empty"), schema=rows(0).schema)

    v3 = run(http, ns_name, "v3")
    empty = run(http, ns_name, "empty")

    assert v3["status"] == "skipped" and "Spark executor" in v3["reason"], v3
    assert empty["status"] == "succeeded" and empty["manifests-rewritten"] == 0, empty
    assert iceberg.load_table((ns_name, "empty")).metadata.snapshots == []


def test_a_concurrent_append_wins_the_rewrite_plans_again_and_the_losing_files_are_deleted(
    proxy: ProxyProcess, iceberg: RestCatalog, ns_name: str
) -> None:
    """The rewrite writes its manifests, then a writer appends: the planned commit is refused (main moved), its
    files are deleted, and the next attempt merges the append's manifest too: every row stays."""
    table = appended(iceberg, ns_name, "raced", 4)
    settings = load_settings(proxy.config_path, environ={})
    state = open_state(settings)
    threads = ThreadRunner(4)
    catalogs = build_catalogs(settings, threads, state)
    limits = Limits(settings.server.maintenance.max_files_per_run, settings.server.maintenance.orphan_min_age)
    rewrite = RewriteManifests(Job(catalogs.get("local"), TableIdent((ns_name,), "raced"), False, limits, threads))

    async def race() -> tuple[list[str], dict[str, Any] | None, dict[str, Any]]:
        prepared = await rewrite.prepare()
        assert isinstance(prepared, Prepared)
        paths = list(prepared.written.paths)
        assert all(path_of(p).is_file() for p in paths)
        table.append(rows(500))  # the writer, through the server
        lost = await rewrite.attempt(prepared)
        return paths, lost, await rewrite.run()

    try:
        paths, lost, result = asyncio.run(race())
    finally:
        asyncio.run(catalogs.close())
        state.dispose()
    assert lost is None
    assert paths and not any(path_of(p).exists() for p in paths)
    assert result["status"] == "succeeded" and result["manifests-rewritten"] == 5, result
    table = iceberg.load_table((ns_name, "raced"))
    assert (500, "r500") in checksum(table) and len(checksum(table)) == 10
    assert manifest_count(table) == 1
