"""``rewrite-data-files`` on the local executor (issue 28): bin-pack small files with pyarrow.

One real ``irc-proxy serve`` process; pyiceberg writes through its socket, DuckDB reads through it. Asserted on
results: the file count after the job, exactly the same rows (pyiceberg and DuckDB), the snapshot it commits,
that a commit racing the rewrite is kept (an append) or wins (a delete of a rewritten file: the job skips and
deletes what it wrote), that tables the local executor does not rewrite are skipped with why, and that a dry
run changes nothing. The races run the job's steps in this process on the server's own database and files,
with a second real client committing through the server between the plan and the commit.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestContent, ManifestWriterV2
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from irc_proxy.app import build_catalogs, open_state
from irc_proxy.handling.maintenance.compaction import RewriteDataFiles, Written, _Rewriter, plan
from irc_proxy.handling.maintenance.job import Job, Limits
from irc_proxy.handling.naming import TableIdent
from irc_proxy.settings import load_settings
from irc_proxy.threads import ThreadRunner
from tests.e2e.test_duckdb import connect
from tests.support.maintenance import finished_run, path_of, request_run
from tests.support.server import ProxyProcess, Serve

CONFIG = """
[server.maintenance]
poll_seconds = 0.1
rewrite_buffer_mb = 1
[catalogs.local]
kind = "local"
"""
JOB = "rewrite-data-files"
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "part", StringType(), required=False),
    NestedField(3, "data", StringType(), required=False),
)
BY_PART = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))
PARTS = ("a", "b", "c")


def rows(start: int, count: int = 6, width: int = 8) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array([PARTS[i % len(PARTS)] for i in ids]),
            "data": pa.array([hashlib.sha256(str(i).encode()).hexdigest()[:width] for i in ids]),
        }
    )


def data_files(table: Table) -> list[DataFile]:
    return [task.file for task in table.scan().plan_files()]


def checksum(table: Table) -> list[tuple[Any, ...]]:
    data = table.scan().to_arrow().sort_by("id")
    return list(zip(data["id"].to_pylist(), data["part"].to_pylist(), data["data"].to_pylist(), strict=True))


def duck_checksum(proxy: ProxyProcess, tmp_path: Path, ns: str, name: str) -> tuple[Any, ...]:
    duck = connect(proxy, tmp_path / f"duckdb-{name}")
    try:
        found = duck.execute(f"SELECT count(*), sum(id), min(data), max(data) FROM irc.{ns}.{name}").fetchone()
    finally:
        duck.close()
    assert found is not None
    return tuple(found)


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "compaction")


@pytest.fixture
def http(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=120) as client:
        yield client


@pytest.fixture
def iceberg(proxy: ProxyProcess) -> RestCatalog:
    return RestCatalog("compaction", uri=proxy.url, warehouse="local")


def run(http: httpx.Client, ns: str, name: str, dry_run: bool = False) -> dict[str, Any]:
    found = finished_run(http, request_run(http, ns, name, [JOB], dry_run), timeout=180)
    result: dict[str, Any] = found["results"][JOB]
    return result


def small_files(iceberg: RestCatalog, ns: str, name: str, appends: int, partitioned: bool, **properties: str) -> Table:
    iceberg.create_namespace_if_not_exists(ns)
    spec = BY_PART if partitioned else PartitionSpec()
    table = iceberg.create_table((ns, name), schema=SCHEMA, partition_spec=spec, properties=properties)
    for i in range(appends):
        table.append(rows(i * 6))
    return iceberg.load_table((ns, name))


# The job -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_sixty_small_appends_become_one_file_per_partition_with_exactly_the_same_rows(
    http: httpx.Client, iceberg: RestCatalog, proxy: ProxyProcess, ns_name: str, tmp_path: Path, partitioned: bool
) -> None:
    table = small_files(iceberg, ns_name, "events", 60, partitioned, **{"format-version": "1" if partitioned else "2"})
    before_files, before_rows = data_files(table), checksum(table)
    before_duck = duck_checksum(proxy, tmp_path, ns_name, "events")
    assert len(before_files) == (180 if partitioned else 60) and len(before_rows) == 360

    result = run(http, ns_name, "events")

    partitions = len(PARTS) if partitioned else 1
    assert result["status"] == "succeeded", result
    assert result["data-files-rewritten"] == len(before_files)
    assert result["data-files-added"] == partitions and result["partitions-rewritten"] == partitions
    assert result["bytes-rewritten"] == sum(f.file_size_in_bytes for f in before_files)
    table = iceberg.load_table((ns_name, "events"))
    after = data_files(table)
    assert len(after) == partitions and result["bytes-added"] == sum(f.file_size_in_bytes for f in after)
    assert checksum(table) == before_rows
    assert duck_checksum(proxy, tmp_path, ns_name, "events") == before_duck
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert snapshot.summary.operation == Operation.REPLACE
    assert snapshot.summary["deleted-data-files"] == str(len(before_files))
    assert snapshot.summary["total-records"] == "360"
    for data_file in after:  # stats pyiceberg prunes with, and the partition value kept
        assert data_file.record_count == 360 // partitions
        assert data_file.lower_bounds and data_file.upper_bounds and data_file.value_counts
        if partitioned:
            values = set(pq.read_table(str(path_of(data_file.file_path)), columns=["part"])["part"].to_pylist())
            assert values == {data_file.partition[0]}
    assert all(path_of(f.file_path).exists() for f in before_files), "rewritten files stay for expire-snapshots"
    if partitioned:
        assert checksum_filtered(table, "b") == [r for r in before_rows if r[1] == "b"]
    assert run(http, ns_name, "events")["data-files-rewritten"] == 0, "nothing left to rewrite"


def checksum_filtered(table: Table, part: str) -> list[tuple[Any, ...]]:
    data = table.scan(row_filter=f"part == '{part}'").to_arrow().sort_by("id")
    return list(zip(data["id"].to_pylist(), data["part"].to_pylist(), data["data"].to_pylist(), strict=True))


def test_a_dry_run_reports_what_it_would_rewrite_and_changes_nothing(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    table = small_files(iceberg, ns_name, "dry", 8, partitioned=True)
    on_disk = set(path_of(table.location()).rglob("*"))
    result = run(http, ns_name, "dry", dry_run=True)
    assert result["status"] == "succeeded" and result["dry-run"] is True, result
    assert result["data-files-rewritten"] == 24 and result["partitions-rewritten"] == 3
    assert "data-files-added" not in result
    after = iceberg.load_table((ns_name, "dry"))
    assert after.metadata.current_snapshot_id == table.metadata.current_snapshot_id
    assert set(path_of(table.location()).rglob("*")) == on_disk


def test_files_written_before_a_schema_change_are_projected_onto_the_current_schema_by_field_id(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    table = small_files(iceberg, ns_name, "evolved", 3, partitioned=False)
    with table.update_schema() as update:
        update.rename_column("data", "payload")
        update.add_column("extra", LongType())
        update.add_column("note", StringType())  # nulls in the older files, a dictionary-read column in the newer
    table = iceberg.load_table((ns_name, "evolved"))
    for start, extra in ((100, 7), (200, 8)):
        added = rows(start).rename_columns(["id", "part", "payload"]).append_column("extra", pa.array([extra] * 6))
        table.append(added.append_column("note", pa.array([f"n{start + i}" for i in range(6)])))
    before = table.scan().to_arrow().sort_by("id")
    result = run(http, ns_name, "evolved")
    assert result["status"] == "succeeded" and result["data-files-rewritten"] == 5, result
    table = iceberg.load_table((ns_name, "evolved"))
    after = table.scan().to_arrow().sort_by("id")  # pyiceberg reads `note` as large_string from mixed files only
    assert after.column_names == before.column_names and after.to_pylist() == before.to_pylist()
    (written,) = data_files(table)
    field_ids = [f.metadata[b"PARQUET:field_id"] for f in pq.read_schema(str(path_of(written.file_path)))]
    assert field_ids == [b"1", b"2", b"3", b"4", b"5"]


def test_files_below_min_input_files_or_at_the_target_size_are_left_alone(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    table = small_files(iceberg, ns_name, "few", 4, partitioned=False)
    result = run(http, ns_name, "few")
    assert result["status"] == "succeeded" and result["data-files-rewritten"] == 0, result
    assert iceberg.load_table((ns_name, "few")).metadata.current_snapshot_id == table.metadata.current_snapshot_id


# Tables the local executor does not rewrite -------------------------------------------------------------------
class _DeleteManifestWriter(ManifestWriterV2):
    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _AddDeletes(_FastAppendFiles):
    """A writer committing a position delete file (pyiceberg 0.12 writes none itself)."""

    def new_manifest_writer(self, spec: PartitionSpec) -> Any:
        return _DeleteManifestWriter(spec, self.schema(), self.new_manifest_output(), self._snapshot_id, "deflate")


def add_position_delete(table: Table, target: DataFile) -> None:
    """Delete ``target``'s first row with a v2 position delete file, committed through the server."""
    path = f"{table.location()}/data/deletes-{target.file_path.rsplit('/', 1)[-1]}"
    schema = Schema(
        NestedField(2147483546, "file_path", StringType(), required=True),
        NestedField(2147483545, "pos", LongType(), required=True),
    )
    deletes = pa.table({"file_path": [target.file_path], "pos": pa.array([0], pa.int64())}, schema_to_pyarrow(schema))
    pq.write_table(deletes, str(path_of(path)))
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=target.partition,
        record_count=1,
        file_size_in_bytes=path_of(path).stat().st_size,
        spec_id=target.spec_id,
    )
    with table.transaction() as tx:
        producer = _AddDeletes(operation=Operation.OVERWRITE, transaction=tx, io=table.io)
        producer.append_data_file(delete_file)
        producer.commit()


def test_a_namespace_policy_sets_the_target_file_size_and_the_tables_own_property_still_wins(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    """``irc-proxy.maintenance.target_file_size_bytes`` on the namespace: with a target the files already meet (each
    within 0.75x-1.8x of it) nothing is a candidate; the table's ``write.target-file-size-bytes`` wins over it."""
    table = small_files(iceberg, ns_name, "targeted", 6, partitioned=False)
    sizes = [f.file_size_in_bytes for f in data_files(table)]
    target = max(sizes)
    assert target >= 1024 and min(sizes) >= 0.75 * target, sizes  # the files are this size, give or take
    assert run(http, ns_name, "targeted", dry_run=True)["data-files-rewritten"] == 6  # Iceberg's 512 MiB

    iceberg.update_namespace_properties(
        (ns_name,), updates={"irc-proxy.maintenance.target_file_size_bytes": str(target)}
    )
    result = run(http, ns_name, "targeted")

    assert result["target-file-size-bytes"] == target and result["data-files-rewritten"] == 0, result
    assert len(data_files(iceberg.load_table((ns_name, "targeted")))) == 6

    with table.transaction() as change:
        change.set_properties({"write.target-file-size-bytes": str(64 << 20)})
    result = run(http, ns_name, "targeted")

    assert result["target-file-size-bytes"] == 64 << 20 and result["data-files-rewritten"] == 6, result
    assert len(data_files(iceberg.load_table((ns_name, "targeted")))) == 1


def test_a_table_with_delete_files_is_skipped_naming_the_spark_executor(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    table = small_files(iceberg, ns_name, "mor", 6, partitioned=False, **{"format-version": "2"})
    add_position_delete(table, data_files(table)[0])
    table = iceberg.load_table((ns_name, "mor"))
    before = checksum(table)
    assert len(before) == 35
    result = run(http, ns_name, "mor")
    assert result["status"] == "skipped" and 'executor = "spark"' in result["reason"], result
    assert "delete files" in result["reason"]
    after = iceberg.load_table((ns_name, "mor"))
    assert after.metadata.current_snapshot_id == table.metadata.current_snapshot_id and checksum(after) == before


def test_partitions_with_delete_files_are_left_and_the_others_rewritten(
    http: httpx.Client, iceberg: RestCatalog, ns_name: str
) -> None:
    table = small_files(iceberg, ns_name, "partly", 6, partitioned=True, **{"format-version": "2"})
    add_position_delete(table, next(f for f in data_files(table) if f.partition[0] == "a"))
    table = iceberg.load_table((ns_name, "partly"))
    before = checksum(table)
    assert len(before) == 35
    result = run(http, ns_name, "partly")
    assert result["status"] == "succeeded", result
    assert result["partitions-rewritten"] == 2 and result["data-files-rewritten"] == 12
    assert result["partitions-with-delete-files"] == 1
    table = iceberg.load_table((ns_name, "partly"))
    assert checksum(table) == before
    assert sorted(f.partition[0] for f in data_files(table)) == ["a"] * 6 + ["b", "c"]


def test_a_format_v3_table_is_skipped_naming_the_spark_executor(http: httpx.Client, ns_name: str) -> None:
    assert http.post("/v1/local/namespaces", json={"namespace": [ns_name]}).status_code == 200
    schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
    body = {"name": "v3", "schema": schema, "properties": {"format-version": "3"}}
    created = http.post(f"/v1/local/namespaces/{ns_name}/tables", json=body)
    assert created.status_code == 200, created.text
    assert created.json()["metadata"]["format-version"] == 3
    result = run(http, ns_name, "v3")
    assert result["status"] == "skipped" and 'executor = "spark"' in result["reason"], result
    assert "_row_id" in result["reason"]


# Concurrency -----------------------------------------------------------------------------------------------
class InProcess:
    """The job's steps run in this process on the server's own database and files (a second replica)."""

    def __init__(self, proxy: ProxyProcess, ns: str, name: str) -> None:
        settings = load_settings(proxy.config_path, environ={})
        self.state = open_state(settings)
        self.threads = ThreadRunner(4)
        self.catalogs = build_catalogs(settings, self.threads, self.state)
        own = settings.server.maintenance
        limits = Limits(own.max_files_per_run, own.orphan_min_age, own.max_rewrite_bytes, 1024**2)
        self.job = Job(self.catalogs.get("local"), TableIdent((ns,), name), False, limits, self.threads)
        self.rewrite = RewriteDataFiles(self.job)

    def close(self) -> None:
        asyncio.run(self.catalogs.close())
        self.state.dispose()

    async def rewrite_then_commit(self, meanwhile: Any) -> tuple[str | None, Written]:
        """Plan and write the new files, let ``meanwhile()`` commit through the server, then commit."""
        access = await self.rewrite.open()
        planned = plan(access, self.job)
        assert planned.groups
        written = Written()
        rewriter = _Rewriter(access, self.job.limits.rewrite_buffer_bytes)
        for group in planned.groups:
            rewriter.rewrite(group, planned.thresholds, written)
        meanwhile()
        reason = await self.rewrite._commit(planned, access, written)
        if reason is not None:
            await self.rewrite._delete(access, written.paths)
        return reason, written


def test_an_append_committed_during_the_rewrite_is_kept(
    proxy: ProxyProcess, iceberg: RestCatalog, ns_name: str
) -> None:
    table = small_files(iceberg, ns_name, "raced", 10, partitioned=True)
    before = checksum(table)
    writer = RestCatalog("writer", uri=proxy.url, warehouse="local").load_table((ns_name, "raced"))
    job = InProcess(proxy, ns_name, "raced")
    try:
        reason, written = asyncio.run(job.rewrite_then_commit(lambda: writer.append(rows(1000))))
    finally:
        job.close()
    assert reason is None
    table = iceberg.load_table((ns_name, "raced"))
    assert checksum(table) == sorted(before + checksum_of(rows(1000)))
    paths = {f.file_path for f in data_files(table)}
    assert {f.file_path for f in written.data_files} <= paths
    assert len(paths) == len(PARTS) + len(PARTS), "the rewritten files and the racing append's files"
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert snapshot.summary.operation == Operation.REPLACE
    assert snapshot.parent_snapshot_id == writer.refresh().metadata.snapshots[-2].snapshot_id


def checksum_of(data: pa.Table) -> list[tuple[Any, ...]]:
    return list(zip(data["id"].to_pylist(), data["part"].to_pylist(), data["data"].to_pylist(), strict=True))


def test_a_delete_of_a_rewritten_file_during_the_rewrite_wins_and_the_job_skips(
    proxy: ProxyProcess, iceberg: RestCatalog, ns_name: str
) -> None:
    table = small_files(iceberg, ns_name, "deleted", 10, partitioned=False)
    writer = RestCatalog("writer", uri=proxy.url, warehouse="local").load_table((ns_name, "deleted"))
    job = InProcess(proxy, ns_name, "deleted")
    try:
        reason, written = asyncio.run(job.rewrite_then_commit(lambda: writer.delete("id == 7")))
    finally:
        job.close()
    assert reason is not None and "removed by a concurrent commit" in reason
    table = iceberg.load_table((ns_name, "deleted"))
    remaining = checksum(table)
    assert len(remaining) == 59 and all(r[0] != 7 for r in remaining), "the deleted row stays deleted"
    assert table.metadata.current_snapshot_id == writer.refresh().metadata.current_snapshot_id
    assert written.paths and not any(path_of(p).exists() for p in written.paths), "what the job wrote is gone"


def test_a_delete_file_committed_during_the_rewrite_makes_the_job_skip(
    proxy: ProxyProcess, iceberg: RestCatalog, ns_name: str
) -> None:
    table = small_files(iceberg, ns_name, "mor_raced", 6, partitioned=True, **{"format-version": "2"})
    target = next(f for f in data_files(table) if f.partition[0] == "b")
    writer = RestCatalog("writer", uri=proxy.url, warehouse="local").load_table((ns_name, "mor_raced"))
    job = InProcess(proxy, ns_name, "mor_raced")
    try:
        reason, written = asyncio.run(job.rewrite_then_commit(lambda: add_position_delete(writer, target)))
    finally:
        job.close()
    assert reason is not None and "delete file was added" in reason
    table = iceberg.load_table((ns_name, "mor_raced"))
    assert len(checksum(table)) == 35, "the row the writer deleted stays deleted"
    assert len(data_files(table)) == 18
    assert written.paths and not any(path_of(p).exists() for p in written.paths)


# Memory ------------------------------------------------------------------------------------------------------
def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def wide_table(iceberg: RestCatalog, ns: str, name: str, files: int) -> int:
    """A table of ``files`` appends of 8,000 rows of 256-character random strings; returns their Arrow bytes."""
    table = iceberg.create_table((ns, name), schema=SCHEMA)
    arrow_bytes = 0
    for i in range(files):
        batch = rows(i * 8000, count=8000).set_column(2, "data", random_strings(i, 8000))
        arrow_bytes += batch.nbytes
        table.append(batch)
    return arrow_bytes


def test_memory_stays_bounded_on_a_table_many_times_the_buffer(serve: Serve, ns_name: str) -> None:
    """A fresh server rewrites a 10-file table (22 MB of Arrow data), then a 40-file one (87 MB), each into one
    file with a 1 MB buffer: the second, four times bigger, grows the server's peak resident memory by far less
    than its data (a third at most: ~20 MB measured; an unbounded buffer grows it by ~120 MB). Peak memory, not
    memory after the first run: the allocator keeps freed pages resident, ~50 MB measured whatever is read, so
    the first run's growth says little."""
    proxy = serve(CONFIG, "compaction-memory")
    iceberg = RestCatalog("memory", uri=proxy.url, warehouse="local")
    iceberg.create_namespace(ns_name)
    wide_table(iceberg, ns_name, "small", 10)
    arrow_bytes = wide_table(iceberg, ns_name, "big", 40)
    assert arrow_bytes > 80 * 1024**2
    with httpx.Client(base_url=proxy.url, timeout=300) as http:
        assert run(http, ns_name, "small")["data-files-rewritten"] == 10
        peak_before = peak_rss(proxy.pid)
        result = run(http, ns_name, "big")
        grown = peak_rss(proxy.pid) - peak_before
    assert result["status"] == "succeeded" and result["data-files-rewritten"] == 40, result
    assert result["data-files-added"] == 1
    assert grown < arrow_bytes / 3, f"peak memory grew {grown} bytes rewriting {arrow_bytes} bytes of Arrow data"
    assert len(checksum(iceberg.load_table((ns_name, "big")))) == 320_000


def random_strings(seed: int, count: int) -> pa.Array:
    import random

    generator = random.Random(seed)
    return pa.array([generator.randbytes(128).hex() for _ in range(count)])
