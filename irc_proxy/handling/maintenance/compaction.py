"""``rewrite-data-files`` on the local executor: Iceberg Java's bin-pack ``RewriteDataFiles`` with pyarrow.

What it rewrites itself (``docs/maintenance.md``): format v1/v2 tables, Parquet data files of the table's
default partition spec in partitions no live delete file applies to. The rest is left to
``executor = "spark"`` (the reason says so when nothing is left to rewrite here): v3 tables (each row's
``_row_id`` and ``_last_updated_sequence_number`` must be kept), partitions with delete files (they must be
applied), delete files that apply to every partition, other file formats.

How (each step bounded):

1. plan on ``main``'s current snapshot: the live data files, grouped per partition by ``binpack.plan_groups``,
   at most ``max_rewrite_bytes`` of input per run (the rest waits for the next run);
2. rewrite each group by streaming record batches (pyiceberg's projection by field id onto the current schema),
   buffered up to ``rewrite_buffer_bytes`` per row group, into Parquet files under the table's data location
   with pyiceberg's statistics; never a whole partition in memory;
3. commit one ``replace`` snapshot (the rewritten files' entries ``deleted``, the new ones ``added``) through the
   normal commit path with ``assert-table-uuid`` and ``assert-ref-snapshot-id`` on ``main``, on the metadata file
   planned from. A concurrent commit makes it validate as Java does — every rewritten file still live and no
   delete file since — and commit again on the new head (the writer's manifests kept); otherwise the job is
   ``skipped`` and the files it wrote are deleted.

The rewritten files are not deleted: ``expire-snapshots`` deletes them once no retained snapshot reaches them.
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyiceberg.catalog.noop import NoopCatalog
from pyiceberg.io import FileIO
from pyiceberg.io.fileformat import FileFormatFactory
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestContent
from pyiceberg.table import Table as IcebergTable  # not a SQL table (tests/unit/stores/test_schema.py)
from pyiceberg.table import Transaction
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH
from pyiceberg.table.snapshots import Operation, Summary
from pyiceberg.table.update import AssertTableUUID, TableRequirement, TableUpdate
from pyiceberg.table.update.snapshot import _OverwriteFiles
from pyiceberg.typedef import EMPTY_DICT

from irc_proxy.errors import CommitFailed
from irc_proxy.handling.loaded import OpenedTable, Owns, TableLoad
from irc_proxy.handling.maintenance.binpack import Group, Thresholds, plan_groups
from irc_proxy.handling.maintenance.deleting import Deleter
from irc_proxy.handling.maintenance.job import (
    COMMIT_ATTEMPTS,
    Job,
    no_storage_access,
    refusal,
    skipped,
    storage_io,
)
from irc_proxy.handling.maintenance.reading import GroupReader
from irc_proxy.handling.tables.tables import TableChange

USE_SPARK = 'run it with executor = "spark"'
WRITE_FORMAT = "write.format.default"


class CannotRewrite(Exception):
    """The local executor does not rewrite this table (the reason says why and what to use)."""


@dataclass
class Plan:
    """What one run rewrites, planned on ``main``'s head ``snapshot_id``."""

    loaded: TableLoad
    snapshot_id: int | None
    thresholds: Thresholds
    groups: list[Group[DataFile]]
    left: int = 0
    """Groups over the run's byte budget, left for the next run."""
    held_back: int = 0
    """Partitions with files to rewrite that delete files apply to (left for the Spark executor)."""
    deletes: set[str] = field(default_factory=set)
    """The live delete files at the start: a commit on a newer head with any other conflicts."""

    @property
    def rewritten(self) -> list[DataFile]:
        return [f for group in self.groups for f in group.files]


@dataclass
class Written:
    data_files: list[DataFile] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    """Every file this run wrote (data files, manifests, manifest lists): deleted when its commit is given up."""
    in_doubt: bool = False
    """A commit failed otherwise than refused (an error after the swap, a cancellation): the files may be live now
    and are left for ``remove-orphan-files`` (Java's ``CommitStateUnknownException``)."""


@dataclass(frozen=True)
class Access:
    """The table opened for a rewrite: what its catalog answered, a FileIO with the proxy's storage access to it
    (reads and the new files' writes) and which paths are the table's own."""

    opened: OpenedTable
    io: FileIO
    owns: Owns

    @property
    def load(self) -> TableLoad:
        return self.opened.load

    @property
    def metadata(self) -> TableMetadata:
        return self.opened.load.metadata


@dataclass
class Live:
    """The live content files of ``main``'s head."""

    data: list[DataFile] = field(default_factory=list)
    deletes: list[DataFile] = field(default_factory=list)


def live_files(metadata: TableMetadata, io: FileIO, owns: Owns, max_files: int) -> Live:
    """The live data and delete files of ``main``'s head. Raises CannotRewrite for a manifest list, manifest or
    file outside the table's roots, or more files than ``max_files``. Blocking."""
    found = Live()
    snapshot = metadata.snapshot_by_name(MAIN_BRANCH)
    if snapshot is None:
        return found
    if not owns(snapshot.manifest_list):
        raise CannotRewrite("the table's manifest list lies outside its roots")
    for manifest in snapshot.manifests(io):
        if not owns(manifest.manifest_path):
            raise CannotRewrite("a manifest of the table lies outside its roots")
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
            data_file = entry.data_file
            if not owns(data_file.file_path):
                raise CannotRewrite("a data file of the table lies outside its roots")
            is_data = manifest.content == ManifestContent.DATA and data_file.content == DataFileContent.DATA
            (found.data if is_data else found.deletes).append(data_file)
            if len(found.data) + len(found.deletes) > max_files:
                raise CannotRewrite(f"the table has more than max_files_per_run ({max_files}) files")
    return found


def with_deletes(metadata: TableMetadata, live: Live) -> set[Hashable]:
    """The partitions (spec id, value) a live delete file may apply to; raises CannotRewrite when one may apply
    to every partition (a delete file of an unpartitioned spec: a global equality delete, or any delete file of
    an unpartitioned table)."""
    specs = metadata.specs()
    if any(specs[d.spec_id].is_unpartitioned() for d in live.deletes):
        raise CannotRewrite(f"the table has delete files to apply to every partition: {USE_SPARK}")
    return {(d.spec_id, d.partition) for d in live.deletes}


def plan(access: Access, job: Job) -> Plan:
    """The groups to rewrite (Java's bin-pack), within the run's byte budget: the default spec's Parquet files of
    partitions no delete file applies to. Raises CannotRewrite. Blocking."""
    loaded, metadata = access.load, access.metadata
    if metadata.format_version >= 3:
        raise CannotRewrite(f"format v3 tables keep each row's _row_id and _last_updated_sequence_number: {USE_SPARK}")
    if metadata.properties.get(WRITE_FORMAT, "parquet").lower() != "parquet":
        raise CannotRewrite(f"the table writes {metadata.properties[WRITE_FORMAT]} files: {USE_SPARK}")
    live = live_files(metadata, access.io, access.owns, job.limits.max_files)
    blocked = with_deletes(metadata, live)
    policy_target = job.target_file_size
    thresholds = (
        Thresholds.of(metadata.properties)
        if policy_target is None
        else Thresholds.of(metadata.properties, policy_target)
    )
    spec_id = metadata.default_spec_id
    candidates = [
        ((f.spec_id, f.partition), f.file_size_in_bytes, f)
        for f in live.data
        if f.spec_id == spec_id and f.file_format == FileFormat.PARQUET
    ]
    groups = plan_groups((c for c in candidates if c[0] not in blocked), thresholds)
    held_back = {c[0] for c in candidates if c[0] in blocked}
    if held_back and not groups:
        raise CannotRewrite(f"the partitions to rewrite have delete files to apply: {USE_SPARK}")
    chosen, budget = [], job.limits.max_rewrite_bytes
    for group in groups:
        if group.size <= budget:
            chosen.append(group)
            budget -= group.size
    head = metadata.snapshot_by_name(MAIN_BRANCH)
    return Plan(
        loaded,
        head.snapshot_id if head else None,
        thresholds,
        chosen,
        len(groups) - len(chosen),
        len(held_back),
        {d.file_path for d in live.deletes},
    )


class _Rewriter:
    """Writes one group's rows into new Parquet files (blocking), streaming within the buffer."""

    def __init__(self, access: Access, buffer_bytes: int) -> None:
        self.metadata, self.io, self.owns, self.buffer_bytes = access.metadata, access.io, access.owns, buffer_bytes
        metadata = self.metadata
        self.schema = metadata.schema()
        self.reader = GroupReader(metadata, self.io, buffer_bytes)
        self.file_schema = self.reader.write_schema
        self.model = FileFormatFactory.get(FileFormat.PARQUET)
        self.locations = load_location_provider(metadata.location, metadata.properties)
        self.run_id = uuid.uuid4()

    def _location(self, group: Group[DataFile], number: int) -> str:
        name = f"{self.run_id}-rewrite-{number:05d}.parquet"
        spec = self.metadata.specs()[group.files[0].spec_id]
        if spec.is_unpartitioned():
            return self.locations.new_data_location(name)
        partition = spec.partition_to_path(group.files[0].partition, self.schema)
        return self.locations.new_data_location(f"{partition}/{name}")

    def rewrite(self, group: Group[DataFile], thresholds: Thresholds, written: Written) -> None:
        """Write ``group``'s rows as about ``expected_output_files`` files, recording each in ``written``."""
        split = max(group.size // thresholds.expected_output_files(group.size), 1)
        output = _Output(self, group, written)
        for batch, input_bytes in self.reader.batches(group.files):
            if output.consumed >= split:
                output.close()
                output = _Output(self, group, written)
            output.add(batch, input_bytes)
        output.close()


class _Output:
    """One new data file: batches buffered up to the rewriter's buffer, then written as a row group."""

    def __init__(self, rewriter: _Rewriter, group: Group[DataFile], written: Written) -> None:
        self.rewriter, self.group, self.written = rewriter, group, written
        self.location = rewriter._location(group, len(written.paths))
        if not rewriter.owns(self.location):
            raise CannotRewrite("the table's data location lies outside its roots")
        self.output = rewriter.io.new_output(self.location)
        self.writer = rewriter.model.create_writer(self.output, rewriter.file_schema, rewriter.metadata.properties)
        self.buffer: list[pa.RecordBatch] = []
        self.buffered = self.consumed = self.rows = 0
        written.paths.append(self.location)

    def add(self, batch: pa.RecordBatch, input_bytes: int) -> None:
        self.buffer.append(batch)
        self.buffered += batch.nbytes
        self.consumed += input_bytes
        self.rows += batch.num_rows
        if self.buffered >= self.rewriter.buffer_bytes:
            self._flush()

    def _flush(self) -> None:
        if self.buffer:
            self.writer.write(pa.Table.from_batches(self.buffer))
        self.buffer, self.buffered = [], 0

    def close(self) -> None:
        if self.rows == 0:
            self.written.paths.remove(self.location)
            return
        self._flush()
        with self.writer:
            pass
        statistics = self.writer.result()
        first = self.group.files[0]
        self.written.data_files.append(
            DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=self.location,
                file_format=FileFormat.PARQUET,
                partition=first.partition,
                file_size_in_bytes=len(self.output),
                sort_order_id=None,
                spec_id=first.spec_id,
                equality_ids=None,
                key_metadata=None,
                **statistics.to_serialized_dict(),
            )
        )


class _Replace(_OverwriteFiles):
    """pyiceberg's overwrite producer (existing manifests kept minus the rewritten files) recording a ``replace``
    snapshot: pyiceberg's summary update knows append/overwrite/delete only, so the totals are computed as an
    overwrite and the operation renamed."""

    def _summary(self, snapshot_properties: dict[str, str] = EMPTY_DICT) -> Summary:
        summary = super()._summary(snapshot_properties)
        return Summary(Operation.REPLACE, **summary.additional_properties)


def replace_snapshot(
    loaded: TableLoad, io: FileIO, rewritten: list[DataFile], added: list[DataFile], written: Written
) -> tuple[list[TableRequirement], list[TableUpdate]]:
    """The commit of one ``replace`` snapshot on ``loaded``'s ``main`` (manifests written now). Blocking."""
    metadata = loaded.metadata
    location = loaded.location
    table = IcebergTable(("maintenance", "rewrite"), metadata, location, io, NoopCatalog("maintenance"))
    producer = _Replace(operation=Operation.OVERWRITE, transaction=Transaction(table), io=io, branch=MAIN_BRANCH)
    for data_file in rewritten:
        producer.delete_data_file(data_file)
    for data_file in added:
        producer.append_data_file(data_file)
    try:
        updates, requirements = producer._commit()
    finally:
        written.paths += producer._written_manifests + producer._written_manifest_lists
    return [AssertTableUUID(uuid=metadata.table_uuid), *requirements], list(updates)


def conflict(metadata: TableMetadata, start: Plan) -> str | None:
    """Java's validation of a rewrite against a newer head: why the rewrite cannot commit on it (None: it can)."""
    if metadata.format_version >= 3 or metadata.default_spec_id != start.loaded.metadata.default_spec_id:
        return "the table's format version or partition spec changed during the rewrite"
    return None


def still_live(metadata: TableMetadata, io: FileIO, owns: Owns, start: Plan, max_files: int) -> str | None:
    """Why the newer head conflicts with the rewrite: a rewritten file no longer live, a delete file added."""
    if (reason := conflict(metadata, start)) is not None:
        return reason
    try:
        live = live_files(metadata, io, owns, max_files)
    except CannotRewrite as exc:
        return f"the table changed during the rewrite: {exc}"
    if any(d.file_path not in start.deletes for d in live.deletes):
        return "a delete file was added by a concurrent commit"
    data = {f.file_path for f in live.data}
    if any(f.file_path not in data for f in start.rewritten):
        return "a rewritten data file was removed by a concurrent commit"
    return None


class RewriteDataFiles:
    def __init__(self, job: Job) -> None:
        self.job = job

    async def open(self) -> Access:
        """The table as its catalog answers it now, with the proxy's storage access to it. Raises CannotRewrite
        when the proxy has none (a remote catalog that vended no credentials: nothing could be written)."""
        opened = await self.job.open()
        if (reason := no_storage_access(opened)) is not None:
            raise CannotRewrite(reason)
        metadata = opened.load.metadata
        _read, owns = opened.files(metadata)
        return Access(opened, storage_io(opened), owns)

    async def run(self) -> dict[str, Any]:
        if (reason := await refusal(self.job)) is not None:
            return skipped(reason)
        threads = self.job.threads
        try:
            access = await self.open()
            planned = await threads.run(plan, access, self.job)
        except CannotRewrite as exc:
            return skipped(str(exc))
        counts = _counts(planned)
        if self.job.dry_run or not planned.groups:
            return {"status": "succeeded", "dry-run": self.job.dry_run, **counts, "groups-left": planned.left}
        written = Written()
        try:
            rewriter = _Rewriter(access, self.job.limits.rewrite_buffer_bytes)
            for group in planned.groups:
                await threads.run(rewriter.rewrite, group, planned.thresholds, written)
            reason = await self._commit(planned, access, written)
        except CannotRewrite as exc:
            reason = str(exc)
        except BaseException:
            if not written.in_doubt:
                await self._delete(access, written.paths)
            raise
        if reason is not None:
            await self._delete(access, written.paths)
            return skipped(reason)
        return {
            "status": "succeeded",
            **counts,
            "data-files-added": len(written.data_files),
            "bytes-added": sum(f.file_size_in_bytes for f in written.data_files),
            "groups-left": planned.left,
        }

    async def _commit(self, planned: Plan, access: Access, written: Written) -> str | None:
        """Commit on the planned head, or on a newer one that passes validation, through the catalog's commit path
        (here or forwarded upstream); the reason when given up."""
        threads, loaded, io = self.job.threads, planned.loaded, access.io
        for _attempt in range(COMMIT_ATTEMPTS):
            before = len(written.paths)
            requirements, updates = await threads.run(
                replace_snapshot, loaded, io, planned.rewritten, written.data_files, written
            )
            change = TableChange(self.job.ident, requirements, updates, base_location=loaded.location or None)
            try:
                await self.job.catalog.commit_table(self.job.context, change)
                return None
            except CommitFailed:  # refused: nothing of this attempt is live
                manifests = written.paths[before:]
                del written.paths[before:]
                await self._delete(access, manifests)
            except BaseException:
                written.in_doubt = True
                raise
            opened = await self.job.open()
            loaded = opened.load
            _read, owns = opened.files(loaded.metadata)
            reason = await threads.run(still_live, loaded.metadata, io, owns, planned, self.job.limits.max_files)
            if reason is not None:
                return f"{reason}; nothing rewritten"
        return f"the table changed during each of {COMMIT_ATTEMPTS} commit attempts; nothing rewritten"

    async def _delete(self, access: Access, paths: list[str]) -> None:
        """Delete files this job wrote, confined like every maintenance delete (with the table's storage access)."""
        await self.job.threads.run(Deleter(self.job, access.opened, access.metadata).delete, paths)


def _counts(planned: Plan) -> dict[str, Any]:
    return {
        "partitions-with-delete-files": planned.held_back,
        "data-files-rewritten": len(planned.rewritten),
        "bytes-rewritten": sum(group.size for group in planned.groups),
        "partitions-rewritten": len({group.key for group in planned.groups}),
        "target-file-size-bytes": planned.thresholds.target,
    }


async def rewrite_data_files(job: Job) -> dict[str, Any]:
    """The ``rewrite-data-files`` runner (``runners.RUNNERS``)."""
    return await RewriteDataFiles(job).run()
