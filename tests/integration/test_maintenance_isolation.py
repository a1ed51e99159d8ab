"""The local executor's child processes (``[server.maintenance] isolation = "process"``, the default): one real
``irc-proxy serve`` process per scenario, its child found through ``/proc``.

Asserted: every job runs in a child at nice +10 and the server serves what the child committed at once (a Glue
catalog whose pointer cache would otherwise keep the old pointer for an hour); a child killed mid-run fails the run's
jobs with the reason and the next run gets a new child; stopping or killing the server, or losing the run's claim,
stops the child; a run whose server was killed between its commit and its deletes is finished from its checkpoint
after a restart; the settings' secrets are neither on the child's command line nor in its environment or the log.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import Table

from tests.support.aws import ACCESS_KEY, SECRET_KEY, client, glue_catalog_config
from tests.support.maintenance import finished_run, path_of, request_run
from tests.support.server import ProxyProcess

CHILD_MODULE = "irc_proxy.maintenance_local"
JOBS = ["expire-snapshots", "remove-orphan-files", "rewrite-manifests", "rewrite-data-files"]
EXPIRE_EVERYTHING = {"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "1"}
PAUSED = {"IRC_TEST_PAUSE_AT": "expire-snapshots.after-commit=120"}
LOCAL = """
[server.maintenance]
poll_seconds = 0.1
lease_seconds = 1
[catalogs.local]
kind = "local"
"""


def rows(start: int) -> pa.Table:
    return pa.table({"id": pa.array([start, start + 1], pa.int64()), "data": pa.array([f"r{start}", f"r{start + 1}"])})


def written(iceberg: RestCatalog, ns: str, name: str, appends: int = 4) -> Table:
    """A table of ``appends`` small appends whose snapshots but the newest expire."""
    iceberg.create_namespace_if_not_exists(ns)
    table = iceberg.create_table((ns, name), schema=rows(0).schema, properties=EXPIRE_EVERYTHING)
    for i in range(appends):
        table.append(rows(i * 2))
    return table


def children(proxy_pid: int) -> list[int]:
    """The server's maintenance children alive now."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        state = stat.rsplit(")", 1)[1].split()[0]
        if parent == proxy_pid and state != "Z" and CHILD_MODULE.encode() in command:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


def wait_for(predicate: Callable[[], Any], timeout: float = 60, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := predicate():
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def paused(tmp_path: Path) -> Iterator[ProxyProcess]:
    """A server whose expiry holds still for 120 s right after its commit (before its deletes)."""
    proxy = ProxyProcess(tmp_path, LOCAL, env=PAUSED).start()
    yield proxy
    proxy.stop()


def held_run(proxy: ProxyProcess, ns: str, jobs: list[str] | None = None) -> tuple[str, int, Table]:
    """A run of ``jobs`` (expiry first) held at the pause; its id, its child and the table before it."""
    iceberg = RestCatalog("isolation", uri=proxy.url, warehouse="local")
    table = written(iceberg, ns, "t")
    with httpx.Client(base_url=proxy.url, timeout=30) as http:
        run_id = request_run(http, ns, "t", jobs or ["expire-snapshots"])
    wait_for(lambda: "paused at" in proxy.log(), what="the pause after the expiry's commit")
    (child,) = children(proxy.pid)
    return run_id, child, table


def test_every_job_runs_in_a_child_at_a_lower_priority_and_it_is_reused(tmp_path: Path, ns_name: str) -> None:
    proxy = ProxyProcess(tmp_path, LOCAL).start()
    try:
        iceberg = RestCatalog("isolation", uri=proxy.url, warehouse="local")
        table = written(iceberg, ns_name, "t", appends=5)  # bin-packing rewrites groups of 5 files or more
        expected = table.scan().to_arrow().sort_by("id")
        assert children(proxy.pid) == []  # started with the first run
        with httpx.Client(base_url=proxy.url, timeout=30) as http:
            result = finished_run(http, request_run(http, ns_name, "t", JOBS))
            (child,) = children(proxy.pid)
            assert os.getpriority(os.PRIO_PROCESS, child) - os.getpriority(os.PRIO_PROCESS, proxy.pid) == 10
            assert result["status"] == "succeeded", result
            assert {job: r["status"] for job, r in result["results"].items()} == dict.fromkeys(JOBS, "succeeded")
            assert result["results"]["expire-snapshots"]["snapshots-expired"] == 4
            assert result["results"]["rewrite-data-files"]["data-files-rewritten"] == 5
            again = finished_run(http, request_run(http, ns_name, "t", ["rewrite-manifests"], dry_run=True))
            assert again["status"] == "succeeded", again
        assert children(proxy.pid) == [child]  # the next run took the same child
        loaded = iceberg.load_table((ns_name, "t"))  # the server serves what the child committed
        assert len(loaded.scan().plan_files()) == 1
        assert loaded.scan().to_arrow().sort_by("id") == expected
        assert "maintenance child" in proxy.log() and " started in " in proxy.log()
    finally:
        proxy.stop()
    assert wait_for(lambda: not alive(child), 10, "the child to stop with the server")


def test_a_child_killed_mid_run_fails_its_jobs_with_the_reason_and_the_next_run_gets_a_new_child(
    paused: ProxyProcess, ns_name: str
) -> None:
    run_id, child, _ = held_run(paused, ns_name, ["expire-snapshots", "remove-orphan-files"])
    os.kill(child, signal.SIGKILL)
    with httpx.Client(base_url=paused.url, timeout=30) as http:
        result = finished_run(http, run_id, timeout=30)
        assert result["status"] == "failed", result
        for job in ("expire-snapshots", "remove-orphan-files"):
            assert result["results"][job]["status"] == "failed"
            assert "killed by SIGKILL" in result["results"][job]["error"], result
        assert "killed by SIGKILL" in result["error"]
        # The commit before the kill landed and the server serves it (its cache held nothing of the table meanwhile).
        loaded = RestCatalog("after", uri=paused.url, warehouse="local").load_table((ns_name, "t"))
        assert len(loaded.metadata.snapshots) == 1
        following = finished_run(http, request_run(http, ns_name, "t", ["rewrite-manifests"]))
    assert following["status"] == "succeeded", following
    assert children(paused.pid) not in ([], [child])


def test_stopping_the_server_stops_its_child(paused: ProxyProcess, ns_name: str) -> None:
    _, child, _ = held_run(paused, ns_name)
    paused.stop()
    assert wait_for(lambda: not alive(child), 10, "the child to stop with the server")


def test_a_killed_server_leaves_no_child_and_its_restart_finishes_the_deletes_from_the_checkpoint(
    paused: ProxyProcess, ns_name: str
) -> None:
    run_id, child, table = held_run(paused, ns_name)
    old_lists = {path_of(s.manifest_list) for s in table.metadata.snapshots[:-1]}
    assert all(path.exists() for path in old_lists)  # committed, nothing deleted yet
    paused.send_signal(signal.SIGKILL)
    assert wait_for(lambda: not alive(child), 10, "the orphaned child to exit")
    paused.start()  # the claim's lease (1 s) ends: the restarted worker takes the run over
    with httpx.Client(base_url=paused.url, timeout=30) as http:
        result = finished_run(http, run_id, timeout=60)
    assert result["status"] == "succeeded", result
    assert result["results"]["expire-snapshots"]["resumed-files-deleted"] >= len(old_lists), result
    assert not any(path.exists() for path in old_lists)


def test_losing_the_runs_claim_stops_its_child(paused: ProxyProcess, ns_name: str) -> None:
    run_id, child, _ = held_run(paused, ns_name)
    with sqlite3.connect(paused.workdir / "data" / "state.db") as db:  # another replica took the run over
        db.execute("UPDATE maintenance_run SET holder = 'another-replica' WHERE id = ?", (run_id,))
    assert wait_for(lambda: not alive(child), 10, "the child to be stopped")
    assert wait_for(lambda: "taken over by another replica" in paused.log(), 10, "the outcome to be dropped")


def test_a_replica_that_stalled_past_its_lease_does_not_start_its_own_run_again(
    paused: ProxyProcess, ns_name: str
) -> None:
    """A replica frozen longer than the lease (a long GC pause, a loaded host) must not claim its own run again when
    it thaws: that started a second child running the same jobs beside the first (seen in CI)."""
    run_id, child, _ = held_run(paused, ns_name)
    for _ in range(4):  # each thaw races the worker's next claim against the lease renewal
        paused.send_signal(signal.SIGSTOP)
        time.sleep(1.5)  # past the 1 s lease: nobody renews it
        paused.send_signal(signal.SIGCONT)
        time.sleep(0.6)  # several polls of the worker (0.1 s) and renewals (0.33 s)
        assert children(paused.pid) == [child]
    assert paused.log().count(" started in ") == 1
    with sqlite3.connect(paused.workdir / "data" / "state.db") as db:
        (status,) = db.execute("SELECT status FROM maintenance_run WHERE id = ?", (run_id,)).fetchone()
    assert status == "running"


def test_glue_serves_the_childs_commit_at_once_and_no_secret_reaches_the_child_or_the_log(
    moto: str, tmp_path: Path, ns_name: str
) -> None:
    bucket, secret = f"isolation-{uuid.uuid4().hex[:8]}", f"isolation-secret-{uuid.uuid4().hex}"
    client("s3", moto).create_bucket(Bucket=bucket)
    catalog = glue_catalog_config(
        "glue",
        moto,
        f"s3://{bucket}/wh",
        s3_path_style_access="true",
        secret_access_key=f'"{secret}"',
        pointer_cache_seconds="3600",  # no change signal reaches a single Glue server: only its own moves do
    )
    proxy = ProxyProcess(tmp_path, "[server.maintenance]\npoll_seconds = 0.1\n" + catalog).start()
    try:
        storage = {"s3.endpoint": moto, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY}
        iceberg = RestCatalog("glue", uri=proxy.url, warehouse="glue", **storage)
        written(iceberg, ns_name, "t")
        assert len(iceberg.load_table((ns_name, "t")).metadata.snapshots) == 4  # its pointer is cached now
        with httpx.Client(base_url=proxy.url, timeout=30) as http:
            result = finished_run(http, request_run(http, ns_name, "t", ["expire-snapshots"], catalog="glue"), "glue")
        assert result["results"]["expire-snapshots"]["snapshots-expired"] == 3, result
        assert len(iceberg.load_table((ns_name, "t")).metadata.snapshots) == 1
        (child,) = children(proxy.pid)
        assert secret.encode() not in Path(f"/proc/{child}/cmdline").read_bytes()
        assert secret.encode() not in Path(f"/proc/{child}/environ").read_bytes()
        assert secret not in proxy.log()
    finally:
        proxy.stop()
