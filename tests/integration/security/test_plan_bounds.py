"""Server-side scan planning has bounded cost per request: each attack on planTableScan / fetchScanTasks that
once cost gigabytes, tens of seconds of CPU or megabytes of state is refused (400 naming the limit) or bounded.

The proxy is a real ``irc-proxy serve`` process (local backend, ``file://`` warehouse) with small answers
(``max_response_bytes`` = 64 KiB) and a one-second CPU budget, so the bounds show on a 2,000-file table
written directly as manifests (the data files need not exist: planning reads only metadata).
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField, StringType

from tests.support.rest import assert_error, commit, create_namespace, create_table, snapshot, table_url
from tests.support.server import ProxyProcess

FILES = 2000
RESPONSE_BYTES = 64 << 10
SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "data", StringType(), required=False))


@dataclass(frozen=True)
class Planner:
    server: ProxyProcess
    http: httpx.Client
    namespace: str
    big: str
    """A table of FILES data files in one manifest."""

    def plan_url(self, table: str) -> str:
        return f"{table_url((self.namespace,), table)}/plan"

    def tasks_url(self, table: str) -> str:
        return f"{table_url((self.namespace,), table)}/tasks"

    @property
    def peak_rss_bytes(self) -> int:
        """The server process's peak resident memory (VmHWM)."""
        process = self.server._process
        assert process is not None
        for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM")


def write_table(http: httpx.Client, namespace: str, name: str, files: int) -> str:
    """Create ``namespace.name`` and commit one snapshot of ``files`` data files (one manifest); its location."""
    location: str = create_table(http, (namespace,), name)["metadata"]["location"]
    io = PyArrowFileIO()
    manifest_path = f"{location}/metadata/manifest-{uuid.uuid4().hex}.avro"
    with write_manifest(2, UNPARTITIONED_PARTITION_SPEC, SCHEMA, io.new_output(manifest_path), 1, "deflate") as out:
        for i in range(files):
            data = DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=f"{location}/data/{i:05d}-{uuid.uuid4().hex}.parquet",
                file_format=FileFormat.PARQUET,
                partition=Record(),
                record_count=10,
                file_size_in_bytes=1000,
            )
            out.add_entry(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=1, data_file=data))
    manifest = out.to_manifest_file()
    with write_manifest_list(2, io.new_output(f"{location}/metadata/snap-1.avro"), 1, None, 1, "deflate") as lst:
        lst.add_manifests([manifest])
    commit(
        http,
        table_url((namespace,), name),
        {"action": "add-snapshot", "snapshot": snapshot(1, None, 1, location)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1},
    )
    return location


@pytest.fixture(scope="module")
def planner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Planner]:
    workdir = tmp_path_factory.mktemp("plan-bounds")
    warehouse = workdir / "warehouse"
    warehouse.mkdir()
    config = f"""
[server.scan_planning]
max_response_bytes = {RESPONSE_BYTES}
max_plan_cpu_seconds = 1.0
sync_budget_seconds = 30
[catalogs.local]
warehouse = "{warehouse.as_uri()}"
drop_retention = "PT0S"
"""
    server = ProxyProcess(workdir, config).start()
    with httpx.Client(base_url=server.url, timeout=120) as http:
        namespace = f"plans_{uuid.uuid4().hex[:8]}"
        create_namespace(http, namespace)
        write_table(http, namespace, "big", FILES)
        yield Planner(server, http, namespace, "big")
    server.stop()


def balanced(kind: str, leaves: list[dict[str, Any]]) -> dict[str, Any]:
    if len(leaves) == 1:
        return leaves[0]
    middle = len(leaves) // 2
    return {"type": kind, "left": balanced(kind, leaves[:middle]), "right": balanced(kind, leaves[middle:])}


def everything(planner: Planner, body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[int]]:
    """Plan ``body`` on the big table and fetch every plan task: the file scan tasks and each answer's size."""
    response = planner.http.post(planner.plan_url(planner.big), json=body)
    assert response.status_code == 200, response.text[:500]
    first = response.json()
    assert first["status"] == "completed"
    answers, sizes = [first], [len(response.content)]
    pending = list(first.get("plan-tasks", []))
    while pending:
        fetched = planner.http.post(planner.tasks_url(planner.big), json={"plan-task": pending.pop(0)})
        assert fetched.status_code == 200, fetched.text[:500]
        answers.append(fetched.json())
        sizes.append(len(fetched.content))
        pending += answers[-1].get("plan-tasks", [])
    return [task for answer in answers for task in answer.get("file-scan-tasks", [])], sizes


# Literal sizes and list lengths ------------------------------------------------------------------------------
def test_a_megabyte_literal_is_400_naming_the_limit_before_any_planning(planner: Planner) -> None:
    body = {"filter": {"type": "eq", "term": "data", "value": "x" * (1 << 20)}}
    started = time.monotonic()
    response = planner.http.post(planner.plan_url(planner.big), json=body)
    assert time.monotonic() - started < 10
    assert_error(response, 400, "BadRequestException", "max_filter_literal_bytes")
    assert len(response.content) < 2000 and "xxxxxxxx" not in response.text


def test_an_in_list_of_ten_thousand_values_is_400_naming_the_limit(planner: Planner) -> None:
    body = {"filter": {"type": "in", "term": "id", "values": list(range(9998))}}
    response = planner.http.post(planner.plan_url(planner.big), json=body)
    assert_error(response, 400, "BadRequestException", "max_filter_in_values")


def test_many_literals_within_each_limit_are_400_past_the_filter_total(planner: Planner) -> None:
    values = [f"{i:04d}" + "v" * 4000 for i in range(80)]  # 80 x 4 KB: each literal fits, 320 KB do not
    body = {"filter": {"type": "in", "term": "data", "values": values}}
    response = planner.http.post(planner.plan_url(planner.big), json=body)
    assert_error(response, 400, "BadRequestException", "max_filter_bytes")


# The residual is not repeated in every task; every answer is bounded -------------------------------------------
def test_a_large_filter_is_not_repeated_per_task_and_every_answer_is_bounded(planner: Planner) -> None:
    values = [f"{i:04d}" + "v" * 3000 for i in range(80)]  # 240 KB of filter, within every limit
    body = {"filter": {"type": "or", "left": {"type": "in", "term": "data", "values": values},
                       "right": {"type": "gt", "term": "id", "value": 5}}}  # fmt: skip
    tasks, sizes = everything(planner, body)
    assert len(tasks) == FILES
    assert len({task["data-file"]["file-path"] for task in tasks}) == FILES, "every file exactly once"
    assert all("residual-filter" not in task for task in tasks), "the whole filter: the client applies it"
    assert len(sizes) > 2, "2,000 files do not fit one 64 KiB answer"
    assert max(sizes) < RESPONSE_BYTES + 4096, sizes
    assert sum(sizes) < 2 << 20, "was 2,000 x 240 KB = 480 MB"
    assert planner.peak_rss_bytes < 1 << 30


def test_a_small_filter_keeps_its_residual_in_each_task(planner: Planner) -> None:
    """pyiceberg 0.12's count() reads a missing residual as true: a small whole filter is still sent."""
    tasks, _ = everything(planner, {"filter": {"type": "gt", "term": "id", "value": 5}})
    assert len(tasks) == FILES
    assert all(task["residual-filter"] == {"type": "gt", "term": "id", "value": 5} for task in tasks)


def test_a_plan_task_cannot_be_rewound_to_fetch_what_was_answered_inline(planner: Planner) -> None:
    first = planner.http.post(planner.plan_url(planner.big), json={}).json()
    resumed = [task for task in first["plan-tasks"] if task.count(":") == 2]
    assert resumed, first["plan-tasks"]
    plan_id, chunk, _ = resumed[0].split(":")
    rewound = planner.http.post(planner.tasks_url(planner.big), json={"plan-task": f"{plan_id}:{chunk}"})
    assert_error(rewound, 404, "NoSuchPlanTaskException")


# CPU: simplified filters are cheap, the rest stops at the budget ----------------------------------------------------
@pytest.mark.parametrize(
    "leaves",
    [
        [{"type": "eq", "term": "id", "value": i} for i in range(3300)],
        [{"type": "is-null", "term": "data"} for _ in range(5000)],
    ],
    ids=["or of 3,300 eq", "or of 5,000 is-null"],
)
def test_a_huge_or_that_means_little_is_planned_quickly(planner: Planner, leaves: list[dict[str, Any]]) -> None:
    started = time.monotonic()
    tasks, sizes = everything(planner, {"filter": balanced("or", leaves)})
    elapsed = time.monotonic() - started
    assert len(tasks) == FILES  # no column metrics in these files: every file may match
    assert elapsed < 20, f"{elapsed:.1f}s (was 28 s and 16 s of CPU)"
    assert max(sizes) < RESPONSE_BYTES + 4096


def test_a_costly_filter_stops_at_the_cpu_budget_with_400(planner: Planner) -> None:
    # 3,300 distinct comparisons nothing merges: evaluated per file, over 2,000 files.
    leaves = [{"type": "lt" if i % 2 else "gt", "term": "id", "value": i * 7} for i in range(3300)]
    body = {"filter": balanced("or", [balanced("and", leaves[i : i + 2]) for i in range(0, 3300, 2)])}
    started = time.monotonic()
    response = planner.http.post(planner.plan_url(planner.big), json=body)
    elapsed = time.monotonic() - started
    assert_error(response, 400, "BadRequestException", "max_plan_cpu_seconds")
    assert elapsed < 20, f"{elapsed:.1f}s for a 1 s CPU budget"
    assert planner.http.get("/healthz", timeout=5).status_code == 200


# State: plans with nothing left to fetch keep no request ------------------------------------------------------
def test_plans_answered_whole_keep_neither_request_nor_chunks(planner: Planner) -> None:
    small = "small_" + uuid.uuid4().hex[:6]
    write_table(planner.http, planner.namespace, small, 3)
    values = [f"{i:04d}" + "v" * 3000 for i in range(80)]
    body = {"filter": {"type": "in", "term": "data", "values": values}}
    plan_ids = []
    for _ in range(3):
        response = planner.http.post(planner.plan_url(small), json=body)
        assert response.status_code == 200, response.text[:300]
        assert "plan-tasks" not in response.json()
        plan_ids.append(response.json()["plan-id"])
    database = planner.server.workdir / "data" / "state.db"
    with sqlite3.connect(database) as conn:
        rows = conn.execute(
            "SELECT length(request), length(coalesce(chunks, '')) FROM scan_plan WHERE plan_id IN (?, ?, ?)",
            plan_ids,
        ).fetchall()
    assert len(rows) == 3 and all(request <= 2 and chunks <= 2 for request, chunks in rows), rows


# Symbolic links: a file in the table's own directory that leads to another table's manifest --------------------
def test_a_symlinked_manifest_in_the_tables_own_directory_is_403(planner: Planner) -> None:
    victim = "victim_" + uuid.uuid4().hex[:6]
    victim_location = write_table(planner.http, planner.namespace, victim, 5)
    victim_manifest = next(Path(victim_location.removeprefix("file://")).glob("metadata/manifest-*.avro"))
    attacker = "attacker_" + uuid.uuid4().hex[:6]
    location = create_table(planner.http, (planner.namespace,), attacker)["metadata"]["location"]
    metadata_dir = Path(location.removeprefix("file://")) / "metadata"
    metadata_dir.mkdir(parents=True, exist_ok=True)
    link = metadata_dir / "manifest-looks-like-mine.avro"
    os.symlink(victim_manifest, link)
    io = PyArrowFileIO()
    victim_list = next(iter(Path(victim_location.removeprefix("file://")).glob("metadata/snap-1.avro")))
    manifests = list(read_manifest_list(io.new_input(victim_list.as_uri())))
    manifests[0][0] = f"{location}/metadata/{link.name}"  # manifest_path: the link, inside the table
    with write_manifest_list(2, io.new_output(f"{location}/metadata/snap-1.avro"), 1, None, 1, "deflate") as lst:
        lst.add_manifests(manifests)
    commit(
        planner.http,
        table_url((planner.namespace,), attacker),
        {"action": "add-snapshot", "snapshot": snapshot(1, None, 1, location)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1},
    )
    response = planner.http.post(planner.plan_url(attacker), json={})
    assert_error(response, 403, "ForbiddenException")
    assert victim not in response.text.replace(str(link), "")
    assert f"{victim}/data" not in response.text
