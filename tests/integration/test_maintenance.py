"""Table maintenance (issue 28, first slice): expire-snapshots and remove-orphan-files on the local executor,
requested through the management API of one real ``irc-proxy serve`` process and run by its worker.

pyiceberg writes through the server's socket; the assertions are on results: which snapshots and refs are
left, which files are on disk, and that pyiceberg reads the same rows afterwards. Attacks: a table whose
manifests name another table's file and a file outside every allowed location, symbolic links under the
table's directory, a table in the trash beside the one maintained, and a commit racing the expiry.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import Table

from irc_proxy.app import build_catalogs, open_state
from irc_proxy.errors import CommitFailed
from irc_proxy.handling.maintenance.job import Job, Limits
from irc_proxy.handling.maintenance.jobs import ExpireSnapshots
from irc_proxy.handling.naming import TableIdent
from irc_proxy.settings import load_settings
from irc_proxy.threads import ThreadRunner
from tests.support.console import root_config
from tests.support.federation import (
    FRONT_PRINCIPAL,
    USER_CLIENT,
    USER_SECRET,
    rest_catalog,
    start_front,
    start_remote,
)
from tests.support.federation import token as federation_token
from tests.support.in_process import ServeInProcess
from tests.support.maintenance import finished_run, path_of, request_run, runs_url, with_job
from tests.support.rest import MGMT, assert_error, make_principal, token_of
from tests.support.server import ProxyProcess, Serve

CONFIG = """
[server.maintenance]
poll_seconds = 0.1
[catalogs.local]
kind = "local"
"""
OLD = time.time() - 5 * 24 * 3600
"""Older than the default orphan_min_age (3 days)."""


def rows(start: int) -> pa.Table:
    return pa.table({"id": pa.array([start, start + 1], pa.int64()), "data": pa.array([f"r{start}", f"r{start + 1}"])})


def files_under(location: str) -> set[Path]:
    return {p for p in path_of(location).rglob("*") if p.is_file()}


def checksum(table: Table, snapshot_id: int | None = None) -> list[tuple[Any, ...]]:
    data = table.scan(snapshot_id=snapshot_id).to_arrow().sort_by("id")
    return list(zip(data["id"].to_pylist(), data["data"].to_pylist(), strict=True))


def reached(table: Table) -> set[Path]:
    """Every file the table's snapshots reach (manifest lists, manifests, data files), as pyiceberg reads them."""
    found: set[Path] = set()
    for snapshot in table.metadata.snapshots:
        found.add(path_of(snapshot.manifest_list))
        for manifest in snapshot.manifests(table.io):
            found.add(path_of(manifest.manifest_path))
            found |= {path_of(e.data_file.file_path) for e in manifest.fetch_manifest_entry(table.io, False)}
    return found


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "maintenance")


@pytest.fixture
def http(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=60) as client:
        yield client


@pytest.fixture
def iceberg(proxy: ProxyProcess) -> RestCatalog:
    return RestCatalog("maintenance", uri=proxy.url, warehouse="local")


def run(http: httpx.Client, ns: str, name: str, jobs: list[str], dry_run: bool = False) -> dict[str, Any]:
    """Request a run and wait for its outcome."""
    return finished_run(http, request_run(http, ns, name, jobs, dry_run))


def history(iceberg: RestCatalog, ns: str, name: str, appends: int = 10) -> Table:
    """``appends`` appends and an overwrite; expiry then keeps one snapshot per retention rule."""
    iceberg.create_namespace_if_not_exists(ns)
    table = iceberg.create_table((ns, name), schema=rows(0).schema)
    for i in range(appends):
        table.append(rows(i * 2))
    table.overwrite(rows(1000))
    return table


# Expire snapshots -----------------------------------------------------------------------------------------
def test_expiry_keeps_ref_heads_and_tags_deletes_only_unreachable_files_and_rows_stay(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    table = history(iceberg, ns_name, "events")
    snapshots = table.metadata.snapshots
    third = snapshots[2].snapshot_id
    table.manage_snapshots().create_tag(third, "kept", max_ref_age_ms=10**12).create_tag(
        snapshots[4].snapshot_id, "stale", max_ref_age_ms=1
    ).commit()
    with table.transaction() as tx:
        tx.set_properties({"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "1"})
    table = iceberg.load_table((ns_name, "events"))
    before_rows, tag_rows = checksum(table), checksum(table, third)
    head = table.metadata.current_snapshot_id
    on_disk, live_before = files_under(table.location()), reached(table)

    result = run(http, ns_name, "events", ["expire-snapshots"])

    assert result["status"] == "succeeded", result
    expiry = result["results"]["expire-snapshots"]
    table = iceberg.load_table((ns_name, "events"))
    assert {s.snapshot_id for s in table.metadata.snapshots} == {head, third}
    assert set(table.metadata.refs) == {"main", "kept"}
    assert expiry["snapshots-expired"] == len(snapshots) - 2 and expiry["refs-removed"] == ["stale"]
    live_after = reached(table)
    after = files_under(table.location())
    assert live_after <= after  # every file a kept snapshot reaches is still there
    gone = on_disk - after
    assert gone and gone == live_before - live_after  # exactly what only expired snapshots reached went
    assert expiry["files-deleted"] == len(gone) and expiry["bytes-deleted"] > 0
    assert checksum(table) == before_rows and checksum(table, third) == tag_rows


def test_a_dry_run_reports_and_changes_nothing(http: httpx.Client, iceberg: RestCatalog, ns_name: str) -> None:
    table = history(iceberg, ns_name, "dry", appends=3)
    with table.transaction() as tx:
        tx.set_properties({"history.expire.max-snapshot-age-ms": "1"})
    location = http.get(f"/v1/local/namespaces/{ns_name}/tables/dry").json()["metadata-location"]
    on_disk = files_under(table.location())

    result = run(http, ns_name, "dry", ["expire-snapshots", "remove-orphan-files"], dry_run=True)

    assert result["status"] == "succeeded" and result["dry-run"] is True
    assert result["results"]["expire-snapshots"]["files-to-delete"] > 0
    assert result["results"]["expire-snapshots"]["snapshots-expired"] >= 3
    assert http.get(f"/v1/local/namespaces/{ns_name}/tables/dry").json()["metadata-location"] == location
    assert files_under(table.location()) == on_disk


def test_gc_disabled_skips_both_deleting_jobs_with_the_reason_and_a_manifest_rewrite_still_runs(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    table = history(iceberg, ns_name, "shared", appends=2)
    with table.transaction() as tx:
        tx.set_properties({"gc.enabled": "false", "history.expire.max-snapshot-age-ms": "1"})
    on_disk = files_under(table.location())
    result = run(http, ns_name, "shared", ["expire-snapshots", "remove-orphan-files", "rewrite-manifests"])
    assert result["status"] == "succeeded"
    jobs = result["results"]
    assert "gc.enabled is false" in jobs["expire-snapshots"]["reason"]
    assert "gc.enabled is false" in jobs["remove-orphan-files"]["reason"]
    assert jobs["rewrite-manifests"]["status"] == "succeeded"  # it deletes nothing, as in Java
    assert on_disk <= files_under(table.location())  # nothing deleted (the rewrite added its manifest)
    assert len(iceberg.load_table((ns_name, "shared")).metadata.snapshots) == 4 + (
        jobs["rewrite-manifests"]["manifests-added"] > 0
    )


def test_expiry_never_deletes_files_its_manifests_name_outside_the_table(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str, tmp_path: Path, proxy: ProxyProcess
) -> None:
    """A writer adds another table's data file and a file outside every allowed location to its own table
    (``add_files``), then replaces them: expiry drops those snapshots, and both files stay."""
    iceberg.create_namespace_if_not_exists(ns_name)
    victim = iceberg.create_table((ns_name, "victim"), schema=rows(0).schema)
    victim.append(rows(0))
    victim_file = path_of(next(iter(victim.scan().plan_files())).file.file_path)
    outside = tmp_path / "outside.parquet"  # not under the warehouse: not an allowed location
    pq.write_table(rows(50), outside)
    attacker = iceberg.create_table((ns_name, "attacker"), schema=rows(0).schema)
    attacker.add_files([victim_file.as_uri(), outside.as_uri()])
    attacker.overwrite(rows(7))
    with attacker.transaction() as tx:
        tx.set_properties({"history.expire.max-snapshot-age-ms": "1"})

    result = run(http, ns_name, "attacker", ["expire-snapshots", "remove-orphan-files"])

    assert result["results"]["expire-snapshots"]["snapshots-expired"] >= 1, result
    assert victim_file.is_file() and outside.is_file()
    assert checksum(iceberg.load_table((ns_name, "victim"))) == [(0, "r0"), (1, "r1")]
    assert checksum(iceberg.load_table((ns_name, "attacker"))) == [(7, "r7"), (8, "r8")]


# Remove orphan files ---------------------------------------------------------------------------------------
def test_orphans_only_old_unreached_files_under_the_tables_roots_go(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str, tmp_path: Path
) -> None:
    table = history(iceberg, ns_name, "orphans", appends=2)
    before_rows = checksum(table)
    root = path_of(table.location())
    old, new = root / "data" / "old-orphan.parquet", root / "data" / "new-orphan.parquet"
    nested = root / "metadata" / "deep" / "stale.avro"
    nested.parent.mkdir(parents=True)
    for planted in (old, new, nested):
        planted.write_bytes(b"x" * 10)
    os.utime(old, (OLD, OLD))
    os.utime(nested, (OLD, OLD))
    # Beside the table: a sibling directory, a table in the trash, and a link pointing out of the table.
    sibling = root.parent / "orphans_backup" / "keep.parquet"
    sibling.parent.mkdir()
    sibling.write_bytes(b"y")
    os.utime(sibling, (OLD, OLD))
    dropped = history(iceberg, ns_name, "dropped", appends=1)
    dropped_files = files_under(dropped.location())
    for path in dropped_files:
        os.utime(path, (OLD, OLD))
    iceberg.drop_table((ns_name, "dropped"))  # kept in the trash (drop_retention P7D)
    target = tmp_path / "linked-target"
    target.write_bytes(b"z")
    os.utime(target, (OLD, OLD))
    (root / "data" / "link.parquet").symlink_to(target)
    live = reached(table) | {path_of(table.metadata_location)}
    for path in files_under(table.location()) - {old, nested, new}:
        os.utime(path, (OLD, OLD))  # live files as old as the orphans: only reachability keeps them

    result = run(http, ns_name, "orphans", ["remove-orphan-files"])

    assert result["status"] == "succeeded", result
    orphans = result["results"]["remove-orphan-files"]
    assert not old.exists() and not nested.exists()
    assert new.exists() and sibling.exists() and target.exists() and (root / "data" / "link.parquet").is_symlink()
    assert files_under(dropped.location()) == dropped_files
    assert live <= files_under(table.location())
    assert orphans["files-deleted"] == 2 and orphans["orphans-found"] == 2
    assert checksum(iceberg.load_table((ns_name, "orphans"))) == before_rows


@pytest.mark.parametrize("limit", [5, 15])
def test_bounded_listing_and_reach_stop_and_say_so(serve: Serve, ns_name: str, limit: int) -> None:
    """Past ``max_files_per_run`` a listing stops (and says so); a table reaching more fails the job, deleting
    nothing."""
    proxy = serve(CONFIG.replace("poll_seconds = 0.1", f"poll_seconds = 0.1\nmax_files_per_run = {limit}"), "bounded")
    iceberg = RestCatalog("bounded", uri=proxy.url, warehouse="local")
    table = history(iceberg, ns_name, "many", appends=1)
    root = path_of(table.location())
    planted = [root / "data" / f"orphan-{i:02}.parquet" for i in range(20)]
    for path in planted:
        path.write_bytes(b"x")
        os.utime(path, (OLD, OLD))
    with httpx.Client(base_url=proxy.url, timeout=60) as http:
        result = run(http, ns_name, "many", ["remove-orphan-files"])
    orphans = result["results"]["remove-orphan-files"]
    left = sum(1 for path in planted if path.exists())
    if len(reached(table)) > limit:
        assert orphans["status"] == "failed" and "max_files_per_run" in orphans["error"], orphans
        assert left == len(planted)
    else:
        assert orphans["listing-truncated"] is True and orphans["files-listed"] == limit, orphans
        assert orphans["files-deleted"] == len(planted) - left <= limit
    assert checksum(iceberg.load_table((ns_name, "many"))) == [(1000, "r1000"), (1001, "r1001")]


# Concurrency -----------------------------------------------------------------------------------------------
def test_a_commit_between_planning_and_committing_makes_the_expiry_plan_again_and_is_never_lost(
    proxy: ProxyProcess, iceberg: RestCatalog, ns_name: str
) -> None:
    """The expiry is planned, then a writer tags a snapshot the plan expires and appends: the planned commit is
    refused (it would drop the new tag), and a new run keeps both the tag and the append."""
    table = history(iceberg, ns_name, "raced", appends=3)
    with table.transaction() as tx:
        tx.set_properties({"history.expire.max-snapshot-age-ms": "1"})
    oldest = table.metadata.snapshots[0].snapshot_id
    settings = load_settings(proxy.config_path, environ={})
    state = open_state(settings)
    threads = ThreadRunner(4)
    catalogs = build_catalogs(settings, threads, state)
    limits = Limits(settings.server.maintenance.max_files_per_run, settings.server.maintenance.orphan_min_age)
    expiry = ExpireSnapshots(Job(catalogs.get("local"), TableIdent((ns_name,), "raced"), False, limits, threads))

    async def race() -> dict[str, Any]:
        planned = await expiry.plan()
        assert oldest in planned.plan.snapshot_ids
        table.manage_snapshots().create_tag(oldest, "audit").commit()  # the writer, through the server
        table.append(rows(500))
        with pytest.raises(CommitFailed):
            await expiry.commit(planned)
        return await expiry.run()

    try:
        result = asyncio.run(race())
    finally:
        asyncio.run(catalogs.close())
        state.dispose()
    assert result["status"] == "succeeded", result
    table = iceberg.load_table((ns_name, "raced"))
    assert table.metadata.refs["audit"].snapshot_id == oldest
    assert (500, "r500") in checksum(table)
    assert table.metadata.snapshot_by_id(oldest) is not None


# Authorization ---------------------------------------------------------------------------------------------
ROOT_SECRET = "root-secret-for-maintenance-tests"


def test_runs_need_table_write_and_are_audited(serve_in_process: ServeInProcess) -> None:
    server = serve_in_process(root_config(ROOT_SECRET, CONFIG), "maintenance-oauth2")
    with server.client(timeout=60) as anonymous:
        root_token = token_of(anonymous, "root", ROOT_SECRET)
    with server.client(timeout=60, headers={"Authorization": f"Bearer {root_token}"}) as root:
        assert root.post("/v1/local/namespaces", json={"namespace": ["team"]}).status_code == 200
        schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
        assert root.post("/v1/local/namespaces/team/tables", json={"name": "t", "schema": schema}).status_code == 200
        reader = make_principal(root, "reader", {"privilege": "table.read", "namespace": ["team"]})
        writer = make_principal(root, "writer", {"privilege": "table.write", "namespace": ["team"]})
        with server.client(timeout=60) as login:
            tokens = {"reader": token_of(login, *reader), "writer": token_of(login, *writer)}
        body = {"table": {"namespace": ["team"], "name": "t"}, "jobs": ["expire-snapshots"]}
        with server.client(timeout=60, headers={"Authorization": f"Bearer {tokens['reader']}"}) as as_reader:
            assert_error(as_reader.post(runs_url(), json=body), 403, "ForbiddenException")
            assert_error(
                as_reader.get(runs_url(), params={"namespace": "team", "table": "t"}), 403, "ForbiddenException"
            )
        with server.client(timeout=60, headers={"Authorization": f"Bearer {tokens['writer']}"}) as as_writer:
            accepted = as_writer.post(runs_url(), json=body)
            assert accepted.status_code == 202, accepted.text
            run_id = accepted.json()["id"]
            listed = as_writer.get(runs_url(), params={"namespace": "team", "table": "t"}).json()["runs"]
            assert [r["id"] for r in listed] == [run_id] and listed[0]["requested-by"] == "writer"
            assert_error(as_writer.post(runs_url(), json={**body, "jobs": ["defragment"]}), 400, "BadRequestException")
            missing = {**body, "table": {"namespace": ["team"], "name": "nope"}}
            assert_error(as_writer.post(runs_url(), json=missing), 404, "NoSuchTableException")
            assert_error(as_writer.get(f"{runs_url()}/no-such-run"), 404, "NotFoundException")
        with server.client(timeout=60, headers={"Authorization": f"Bearer {tokens['reader']}"}) as as_reader:
            assert_error(as_reader.get(f"{runs_url()}/{run_id}"), 403, "ForbiddenException")
        deadline = time.monotonic() + 30
        while root.get(f"{runs_url()}/{run_id}").json()["status"] in ("queued", "running"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert root.get(f"{runs_url()}/{run_id}").json()["status"] == "succeeded"
        wanted = {("reader", "denied", "team.t"), ("writer", "allowed", "team.t")}
        decisions: set[tuple[str, str, str]] = set()
        while not wanted <= decisions and time.monotonic() < deadline:  # records are written in batches
            params = {"operation": "management.requestMaintenanceRun"}
            records = root.get(f"{MGMT}/audit", params=params).json()["records"]
            decisions = {(r["principal"], r["decision"], r["object"]) for r in records}
            time.sleep(0.05)
        assert wanted <= decisions
        queued = [r["reason"] for r in records if r["status"] == 202]
        assert queued == [f"table.write on namespace local.team via role writer-role; run {run_id}: expire-snapshots"]
        system: list[dict[str, Any]] = []
        while not system and time.monotonic() < deadline:  # the worker audits just after the status, in batches
            system = root.get(f"{MGMT}/audit", params={"operation": "maintenance.run"}).json()["records"]
            time.sleep(0 if system else 0.1)
        assert [r["principal"] for r in system] == ["irc-proxy"] and run_id in system[0]["reason"]
        jobs = root.get(f"{MGMT}/audit", params={"operation": "maintenance.expire-snapshots"}).json()["records"]
        assert [(r["principal"], r["object"], r["status"]) for r in jobs] == [("irc-proxy", "team.t", 200)]
        assert jobs[0]["reason"].startswith(f"run {run_id} requested by writer: succeeded; snapshots-expired=0")


def test_a_forwarded_catalogs_expiry_commits_upstream_and_its_orphans_wait_for_storage_access(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A catalog forwarded to a second proxy: the expiry goes upstream through the same forwarding (as the front
    proxy's own principal) and the upstream's table loses the expired snapshots; the upstream vends no storage
    credentials, so no file is deleted (said in the result) and orphan removal is skipped with why."""
    remote = start_remote(tmp_path_factory.mktemp("maint-remote"))
    front = start_front(tmp_path_factory.mktemp("maint-front"), rest_catalog("fed", remote.url))
    try:
        user_token = federation_token(remote.url, USER_CLIENT, USER_SECRET)  # the front proxy's principal: only it
        writer = RestCatalog("w", uri=remote.url, warehouse="local", token=user_token)
        table = history(writer, "a", "t", appends=3)
        with table.transaction() as tx:
            tx.set_properties({"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "1"})
        table = writer.load_table(("a", "t"))
        head, rows_before = table.metadata.current_snapshot_id, checksum(table)
        on_disk, expired = files_under(table.location()), len(table.metadata.snapshots) - 1
        assert expired >= 3
        with httpx.Client(base_url=front.url, timeout=60) as front_client:
            queued = request_run(front_client, "a", "t", ["expire-snapshots", "remove-orphan-files"], catalog="fed")
            run = finished_run(front_client, queued, "fed", timeout=60)
        expiry, orphans = run["results"]["expire-snapshots"], run["results"]["remove-orphan-files"]
        assert expiry["status"] == "succeeded" and expiry["snapshots-expired"] == expired, run
        assert expiry["files-deleted"] == 0 and "vended no storage credentials" in expiry["note"], run
        assert orphans["status"] == "skipped" and "vended no storage credentials" in orphans["reason"], run
        upstream = writer.load_table(("a", "t"))
        assert [s.snapshot_id for s in upstream.metadata.snapshots] == [head]
        assert checksum(upstream) == rows_before
        assert on_disk <= files_under(upstream.location())  # nothing deleted without storage access
        # The commit reached the upstream as the front proxy's own principal (audited there, in batches).
        admin = {"Authorization": f"Bearer {federation_token(remote.url)}"}
        principals: set[str] = set()
        deadline = time.monotonic() + 30
        while FRONT_PRINCIPAL not in principals and time.monotonic() < deadline:
            audit = httpx.get(f"{remote.url}{MGMT}/audit", params={"operation": "updateTable"}, headers=admin)
            assert audit.status_code == 200, audit.text
            principals = {r["principal"] for r in audit.json()["records"] if r["object"] == "a.t"}
            time.sleep(0 if FRONT_PRINCIPAL in principals else 0.2)
        assert FRONT_PRINCIPAL in principals, principals
    finally:
        front.stop()
        remote.stop()


def test_a_forwarded_expiry_planned_before_an_upstream_commit_is_refused_there_and_plans_again(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The remote catalog checks the expiry's requirements: a writer's commit upstream between planning and
    committing makes the forwarded commit a 409 (CommitFailed), and the job plans again, keeping the writer's tag
    and append."""
    remote = start_remote(tmp_path_factory.mktemp("race-remote"))
    front = start_front(tmp_path_factory.mktemp("race-front"), rest_catalog("fed", remote.url))
    try:
        user_token = federation_token(remote.url, USER_CLIENT, USER_SECRET)
        writer = RestCatalog("w", uri=remote.url, warehouse="local", token=user_token)
        table = history(writer, "a", "raced", appends=2)
        with table.transaction() as tx:
            tx.set_properties({"history.expire.max-snapshot-age-ms": "1"})
        oldest = table.metadata.snapshots[0].snapshot_id

        async def race(job: Job) -> dict[str, Any]:
            expiry = ExpireSnapshots(job)
            planned = await expiry.plan()
            assert oldest in planned.plan.snapshot_ids
            table.manage_snapshots().create_tag(oldest, "audit").commit()  # the writer, upstream
            table.append(rows(500))
            with pytest.raises(CommitFailed):
                await expiry.commit(planned)
            return await expiry.run()

        result = with_job(front.config_path, "fed", "a", "raced", race)

        assert result["status"] == "succeeded", result
        upstream = writer.load_table(("a", "raced"))
        assert upstream.metadata.refs["audit"].snapshot_id == oldest
        assert upstream.metadata.snapshot_by_id(oldest) is not None
        assert (500, "r500") in checksum(upstream)
    finally:
        front.stop()
        remote.stop()
