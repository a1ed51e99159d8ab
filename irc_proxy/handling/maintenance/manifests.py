"""The ``rewrite-manifests`` job on the local executor, with Iceberg Java's ``RewriteManifests`` semantics.

Many small appends leave one small manifest each; a scan opens every one. The job merges the small data
manifests of ``main``'s current snapshot, per partition spec, into manifests of up to the table's
``commit.manifest.target-size-bytes`` (8 MiB, Java's default) and commits a ``replace`` snapshot:

* every live entry is written ``EXISTING`` with its original snapshot id, data and file sequence numbers,
  so readers see exactly the same files and rows; the new manifests inherit the new snapshot's sequence
  number, kept manifests (delete manifests, manifests already at the target, a spec's lone small manifest)
  are listed after them unchanged, as ``BaseRewriteManifests.apply`` orders them;
* the summary has Java's ``manifests-created``, ``manifests-kept``, ``manifests-replaced`` and
  ``entries-processed`` and the previous snapshot's totals; the created manifests must hold as many live
  files as the replaced ones (Java's ``validateFilesCounts``), or nothing is committed;
* the commit goes through the catalog's normal commit path with ``assert-table-uuid`` and
  ``assert-ref-snapshot-id`` on ``main``, on the metadata file planned from: any concurrent commit makes the
  job plan again (``COMMIT_ATTEMPTS``), then skip; the files an attempt wrote are deleted when its commit fails;
* the replaced manifests are not deleted here: older snapshots still name them (``expire-snapshots`` removes
  them once no retained snapshot does), so ``gc.enabled`` does not matter to this job.

Manifests are read through the catalog's bounded reader (``Catalog.open_table``), confined to the table; the
entries read are bounded by ``max_files_per_run`` (bins past the budget wait for the next run,
``truncated``). Format v3 tables are ``skipped``: pyiceberg 0.12 cannot write v3 manifests (row lineage).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import (
    TOTAL_DATA_FILES,
    TOTAL_DELETE_FILES,
    TOTAL_EQUALITY_DELETES,
    TOTAL_FILE_SIZE,
    TOTAL_POSITION_DELETES,
    TOTAL_RECORDS,
    Operation,
    Snapshot,
    Summary,
)
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
)
from pyiceberg.utils.bin_packing import ListPacker

from irc_proxy.backends.base import Capability
from irc_proxy.errors import CatalogError, CommitFailed, CommitStateUnknown, Unprocessable
from irc_proxy.handling.loaded import Owns, Read
from irc_proxy.handling.maintenance.reach import TooManyFiles
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.handling.storage.locations import METADATA_PATH
from irc_proxy.handling.storage.purge import redact
from irc_proxy.handling.storage.storage_reads import TableFiles, local_path
from irc_proxy.handling.tables.tables import TableChange
from irc_proxy.memory_files import MemoryFileIO, MemoryInputFile

if TYPE_CHECKING:
    from irc_proxy.handling.maintenance.jobs import Job

MANIFEST_TARGET_SIZE = "commit.manifest.target-size-bytes"
MANIFEST_TARGET_SIZE_DEFAULT = 8 * 1024 * 1024
"""Java's ``TableProperties.MANIFEST_TARGET_SIZE_BYTES_DEFAULT``."""
AVRO_COMPRESSION = "write.avro.compression-codec"
AVRO_COMPRESSION_DEFAULT = "gzip"
CREATED, KEPT, REPLACED, PROCESSED = "manifests-created", "manifests-kept", "manifests-replaced", "entries-processed"
"""Java's ``SnapshotSummary`` keys of a manifest rewrite."""
TOTALS = (
    TOTAL_DATA_FILES,
    TOTAL_DELETE_FILES,
    TOTAL_RECORDS,
    TOTAL_FILE_SIZE,
    TOTAL_POSITION_DELETES,
    TOTAL_EQUALITY_DELETES,
)
V3_NEEDS_SPARK = (
    "format v3 table: pyiceberg 0.12 cannot write v3 manifests (row lineage); "
    'rewrite its manifests with the Spark executor (executor = "spark")'
)


class FileCountsDiffer(Unprocessable):
    """The written manifests do not hold as many live files as those they replace (Java's validateFilesCounts)."""


# Planning (pure) ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ManifestPlan:
    """Which manifests of a snapshot to merge (each bin into one manifest, or more at the target) and keep."""

    bins: tuple[tuple[ManifestFile, ...], ...]
    kept: tuple[ManifestFile, ...]
    """Every other manifest of the snapshot, in its order: delete manifests, those at the target, lone ones."""
    truncated: bool = False
    """Bins were left for a later run: their entries would pass ``max_files_per_run``."""

    @property
    def replaced(self) -> tuple[ManifestFile, ...]:
        return tuple(m for manifest_bin in self.bins for m in manifest_bin)

    @property
    def live_entries(self) -> int:
        """The live files the replaced manifests list (from the manifest list's counts)."""
        return sum(_live(m) for m in self.replaced)


def _live(manifest: ManifestFile) -> int:
    return (manifest.added_files_count or 0) + (manifest.existing_files_count or 0)


def _entries(manifest: ManifestFile) -> int:
    """Entries a read of the manifest goes through (deleted ones too)."""
    return _live(manifest) + (manifest.deleted_files_count or 0)


def plan_rewrite(manifests: Sequence[ManifestFile], target_bytes: int, max_entries: int) -> ManifestPlan:
    """Bin-pack each partition spec's small data manifests (shorter than ``target_bytes``) in their order, as
    pyiceberg's and Java's merge managers do; a bin of one stays as it is. Bins are taken while their entries
    fit in ``max_entries``."""
    by_spec: dict[int, list[ManifestFile]] = {}
    for manifest in manifests:
        if manifest.content == ManifestContent.DATA and manifest.manifest_length < target_bytes:
            by_spec.setdefault(manifest.partition_spec_id, []).append(manifest)
    packer: ListPacker[ManifestFile] = ListPacker(target_bytes, lookback=1, largest_bin_first=False)
    bins: list[tuple[ManifestFile, ...]] = []
    budget, truncated = max_entries, False
    for small in by_spec.values():
        if len(small) < 2:
            continue
        for manifest_bin in packer.pack(small, lambda m: m.manifest_length):
            if len(manifest_bin) < 2:
                continue
            entries = sum(_entries(m) for m in manifest_bin)
            if entries > budget:
                truncated = True
                continue
            budget -= entries
            bins.append(tuple(manifest_bin))
    merged = {m.manifest_path for manifest_bin in bins for m in manifest_bin}
    return ManifestPlan(tuple(bins), tuple(m for m in manifests if m.manifest_path not in merged), truncated)


def summary(previous: Snapshot, created: int, kept: int, replaced: int, entries: int) -> Summary:
    """A ``replace`` snapshot's summary as Java's ``BaseRewriteManifests`` + ``SnapshotProducer`` write it:
    the rewrite's counts and the previous snapshot's totals (no file was added or removed)."""
    before = previous.summary.additional_properties if previous.summary is not None else {}
    totals = {key: before[key] for key in TOTALS if key in before}
    counts = {CREATED: str(created), KEPT: str(kept), REPLACED: str(replaced), PROCESSED: str(entries)}
    return Summary(Operation.REPLACE, **counts, **totals)


# Writing (blocking) -----------------------------------------------------------------------------------------
@dataclass
class Written:
    """What one attempt wrote: the new manifests, then the manifest list and the snapshot naming them."""

    manifests: list[ManifestFile] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    """Every file written (or begun), for the cleanup of a failed attempt."""
    entries: int = 0
    """Live entries rewritten."""
    snapshot: Snapshot | None = None


class ManifestRewriter:
    """Writes one plan's merged manifests and the new manifest list (blocking: run it in a worker thread)."""

    def __init__(
        self, metadata: TableMetadata, read: Read, owns: Owns, io: FileIO, target_bytes: int, max_entries: int
    ) -> None:
        self.metadata, self._read, self._owns, self._io = metadata, read, owns, io
        self._target, self._max = target_bytes, max_entries
        self._codec = metadata.properties.get(AVRO_COMPRESSION, AVRO_COMPRESSION_DEFAULT)
        directory = metadata.properties.get(METADATA_PATH) or f"{metadata.location.rstrip('/')}/metadata"
        self.directory = directory.rstrip("/")
        self._read_entries = 0

    def confined(self) -> bool:
        """Whether the files this job writes land among the table's own (its metadata directory)."""
        return self._owns(self._new_path("probe"))

    def _new_path(self, name: str) -> str:
        return f"{self.directory}/{name}"

    def write(self, current: Snapshot, plan: ManifestPlan, written: Written) -> None:
        """Merge each bin, then list the new manifests before the kept ones in a new snapshot's manifest list."""
        metadata = self.metadata
        snapshot_id = metadata.new_snapshot_id()
        for manifest_bin in plan.bins:
            self._merge(manifest_bin, snapshot_id, written)
        created, replaced = sum(_live(m) for m in written.manifests), plan.live_entries
        if created != replaced or written.entries != replaced:
            raise FileCountsDiffer(
                f"Replaced and created manifests must have the same number of active files: {created} (new), "
                f"{replaced} (old); nothing committed"
            )
        sequence_number = metadata.next_sequence_number()
        location = self._new_path(f"snap-{snapshot_id}-1-{uuid.uuid4()}.avro")
        written.paths.append(location)
        with write_manifest_list(
            format_version=metadata.format_version,  # v3 is refused before
            output_file=self._io.new_output(location),
            snapshot_id=snapshot_id,
            parent_snapshot_id=current.snapshot_id,
            sequence_number=sequence_number,
            avro_compression=self._codec,  # type: ignore[arg-type]  # a table property, checked by the writer
        ) as writer:
            writer.add_manifests([*written.manifests, *plan.kept])
        counts = summary(current, len(written.manifests), len(plan.kept), len(plan.replaced), written.entries)
        written.snapshot = Snapshot.model_validate(
            {
                "snapshot-id": snapshot_id,
                "parent-snapshot-id": current.snapshot_id,
                "sequence-number": sequence_number,
                "timestamp-ms": max(int(time.time() * 1000), metadata.last_updated_ms),
                "manifest-list": location,
                "summary": counts,
                "schema-id": metadata.current_schema_id,
            }
        )

    def _merge(self, manifest_bin: Sequence[ManifestFile], snapshot_id: int, written: Written) -> None:
        """The bin's live entries as EXISTING entries of new manifests, a new one begun at the target size."""
        spec_id = manifest_bin[0].partition_spec_id
        writer: ManifestWriter | None = None
        try:
            for manifest in manifest_bin:
                for entry in self._live_entries(manifest):
                    if writer is not None and writer.tell() >= self._target:
                        writer.__exit__(None, None, None)
                        written.manifests.append(writer.to_manifest_file())
                        writer = None
                    if writer is None:
                        writer = self._writer(spec_id, snapshot_id, written)
                    writer.existing(entry)
                    written.entries += 1
        except BaseException as exc:
            if writer is not None and not writer.closed:
                _close_quietly(writer, exc)
            raise
        if writer is not None:
            writer.__exit__(None, None, None)
            written.manifests.append(writer.to_manifest_file())

    def _writer(self, spec_id: int, snapshot_id: int, written: Written) -> ManifestWriter:
        location = self._new_path(f"{uuid.uuid4()}-m{len(written.manifests)}.avro")
        written.paths.append(location)
        writer = write_manifest(
            self.metadata.format_version,  # v3 is refused before
            self.metadata.specs()[spec_id],
            self.metadata.schema(),
            self._io.new_output(location),
            snapshot_id,
            self._codec,  # type: ignore[arg-type]
        )
        return writer.__enter__()

    def _live_entries(self, manifest: ManifestFile) -> list[ManifestEntry]:
        """The manifest's live entries, read within the table's confinement and the entry budget."""
        path = manifest.manifest_path
        if not self._owns(path):
            raise Unprocessable(f"The manifest {redact(path)} lies outside the table's locations: not rewritten")
        data = self._read(path, "manifest")
        try:
            entries = manifest.fetch_manifest_entry(MemoryFileIO(MemoryInputFile(path, data)), discard_deleted=False)
        except Exception as exc:  # not Avro, not a manifest
            raise Unprocessable(f"Cannot read manifest {redact(path)}: unreadable") from exc
        self._read_entries += len(entries)
        if self._read_entries > self._max:
            raise TooManyFiles(f"The manifests list more than {self._max} entries (maintenance.max_files_per_run)")
        return [e for e in entries if e.status != ManifestEntryStatus.DELETED]


def _close_quietly(writer: ManifestWriter, exc: BaseException) -> None:
    """Close a writer after a failure (an empty one refuses to close: its file is deleted anyway)."""
    with contextlib.suppress(Exception):  # the original failure is what is raised
        writer.__exit__(type(exc), exc, exc.__traceback__)


def discard(paths: Iterable[str], owns: Owns, io: FileIO, real_roots: Sequence[str]) -> None:
    """Delete the files a failed attempt wrote (only the table's own; one that is gone is fine), locally
    without following a link on the way (``jobs.unlink_beneath``)."""
    from irc_proxy.handling.maintenance.jobs import OutsideRoots, unlink_beneath  # jobs imports us

    for path in paths:
        if not owns(path):
            continue
        local = local_path(path)
        try:
            if local is not None:
                unlink_beneath(os.path.realpath(local), real_roots)
            else:
                io.delete(path)
        except (FileNotFoundError, OutsideRoots):
            continue
        except Exception:  # noqa: S112  # an orphan then, which remove-orphan-files deletes later
            continue


def current_manifests(snapshot: Snapshot, read: Read, owns: Owns) -> list[ManifestFile]:
    """The snapshot's manifest list, read through the bounded reader. Raises Unprocessable, CatalogError."""
    path = snapshot.manifest_list
    if not owns(path):
        raise Unprocessable(f"The manifest list {redact(path)} lies outside the table's locations: not read")
    data = read(path, "manifest list")
    try:
        return list(read_manifest_list(MemoryInputFile(path, data)))
    except Exception as exc:  # not Avro, not a manifest list
        raise Unprocessable(f"Cannot read manifest list {redact(path)}: unreadable") from exc


def target_bytes(metadata: TableMetadata) -> int:
    """The table's ``commit.manifest.target-size-bytes`` (Java's default when unset or not a positive number)."""
    try:
        value = int(metadata.properties.get(MANIFEST_TARGET_SIZE, MANIFEST_TARGET_SIZE_DEFAULT))
    except ValueError:
        return MANIFEST_TARGET_SIZE_DEFAULT
    return value if value > 0 else MANIFEST_TARGET_SIZE_DEFAULT


# The job ---------------------------------------------------------------------------------------------------
SYSTEM_PRINCIPAL = "irc-proxy"


@dataclass(frozen=True)
class Prepared:
    """One attempt, written and ready to commit: the table as planned from and what was written for it."""

    metadata_location: str
    metadata: TableMetadata
    current: Snapshot
    plan: ManifestPlan
    written: Written
    owns: Owns
    io: FileIO


@dataclass(frozen=True)
class _Planned:
    metadata_location: str
    current: Snapshot
    plan: ManifestPlan
    rewriter: ManifestRewriter
    owns: Owns
    io: FileIO


def _result(rewritten: int, added: int, kept: int, entries: int, **more: Any) -> dict[str, Any]:
    counts = {"manifests-rewritten": rewritten, "manifests-added": added, "manifests-kept": kept}
    return {"status": "succeeded", **counts, "entries-processed": entries, **more}


def _skipped(reason: str) -> dict[str, Any]:
    return {"status": "skipped", "reason": reason}


class RewriteManifests:
    """Merge the small data manifests of ``main``'s current snapshot (see the module)."""

    def __init__(self, job: Job) -> None:
        self.job = job

    async def run(self) -> dict[str, Any]:
        from irc_proxy.handling.maintenance.jobs import COMMIT_ATTEMPTS  # jobs imports this module

        if not self.job.catalog.supports(Capability.TABLE_COMMITS):
            return _skipped("the tables of this catalog are committed by its remote catalog: not implemented yet")
        for _attempt in range(COMMIT_ATTEMPTS):
            prepared = await self.prepare()
            if not isinstance(prepared, Prepared):
                return prepared
            result = await self.attempt(prepared)
            if result is not None:
                return result
        return _skipped(f"the table changed during each of {COMMIT_ATTEMPTS} attempts; no manifest rewritten")

    async def prepare(self) -> Prepared | dict[str, Any]:
        """Plan from the table as it is now and write the new manifests and manifest list; the job's result
        instead when there is nothing to commit (nothing to merge, a dry run, a table this job leaves alone)."""
        planned = await self._plan()
        if not isinstance(planned, _Planned):
            return planned
        plan = planned.plan
        if self.job.dry_run:
            counts = (len(plan.replaced), len(plan.bins), len(plan.kept), plan.live_entries)
            return _result(*counts, truncated=plan.truncated, **{"dry-run": True})
        metadata, owns, io = planned.rewriter.metadata, planned.owns, planned.io
        written = Written()
        try:
            await self.job.threads.run(planned.rewriter.write, planned.current, planned.plan, written)
        except (CatalogError, OSError, ValueError) as exc:
            await self._discard(written, owns, io, metadata)
            message = exc.message if isinstance(exc, CatalogError) else f"cannot write the manifests: {exc}"
            return {"status": "failed", "error": message}
        except BaseException:
            await self._discard(written, owns, io, metadata)
            raise
        return Prepared(planned.metadata_location, metadata, planned.current, planned.plan, written, owns, io)

    async def _plan(self) -> _Planned | dict[str, Any]:
        """The table opened and its rewrite planned, or the job's result when nothing is to be written."""
        job = self.job
        context = RequestContext(request_id=f"maintenance-{uuid.uuid4().hex}", principal=SYSTEM_PRINCIPAL)
        opened = await job.catalog.open_table(context, job.ident)
        metadata = opened.load.metadata
        if metadata.format_version >= 3:
            return _skipped(V3_NEEDS_SPARK)
        main = metadata.refs.get(MAIN_BRANCH)
        current = metadata.snapshot_by_id(main.snapshot_id) if main is not None else None
        if current is None:
            return _result(0, 0, 0, 0, note="the table has no snapshot")
        read, owns = opened.files(metadata)
        io = job.catalog.tables.files.reader.file_io(metadata.location)
        target = target_bytes(metadata)
        rewriter = ManifestRewriter(metadata, read, owns, io, target, job.limits.max_files)
        if not rewriter.confined():
            return _skipped("the table's metadata directory lies outside its locations: nothing can be written")
        try:
            manifests = await job.threads.run(current_manifests, current, read, owns)
        except CatalogError as exc:
            return {"status": "failed", "error": exc.message}
        plan = plan_rewrite(manifests, target, job.limits.max_files)
        if not plan.bins:
            return _result(0, 0, len(manifests), 0, truncated=plan.truncated)
        return _Planned(opened.load.location, current, plan, rewriter, owns, io)

    async def attempt(self, prepared: Prepared) -> dict[str, Any] | None:
        """Commit a prepared rewrite: the job's result, or None when the table changed since it was planned
        (the attempt's files are deleted then)."""
        written, plan = prepared.written, prepared.plan
        assert written.snapshot is not None
        try:
            await self.commit(prepared)
        except CommitStateUnknown as exc:  # it may have landed: its files stay (orphans at worst)
            return {"status": "failed", "error": exc.message}
        except CommitFailed:
            await self._discard(written, prepared.owns, prepared.io, prepared.metadata)
            return None
        except BaseException:
            await self._discard(written, prepared.owns, prepared.io, prepared.metadata)
            raise
        counts = (len(plan.replaced), len(written.manifests), len(plan.kept), written.entries)
        return _result(*counts, truncated=plan.truncated, **{"snapshot-id": written.snapshot.snapshot_id})

    async def commit(self, prepared: Prepared) -> None:
        """Add the ``replace`` snapshot and move ``main`` to it, only on the metadata file planned from (its
        retention settings kept). Raises CommitFailed when the table changed, and the commit path's errors."""
        metadata, snapshot = prepared.metadata, prepared.written.snapshot
        assert snapshot is not None
        main = metadata.refs[MAIN_BRANCH]
        requirements: list[TableRequirement] = [
            AssertTableUUID(uuid=metadata.table_uuid),
            AssertRefSnapshotId.model_validate({"ref": MAIN_BRANCH, "snapshot-id": prepared.current.snapshot_id}),
        ]
        ref = {
            "ref-name": MAIN_BRANCH,
            "type": SnapshotRefType.BRANCH,
            "snapshot-id": snapshot.snapshot_id,
            "max-ref-age-ms": main.max_ref_age_ms,
            "max-snapshot-age-ms": main.max_snapshot_age_ms,
            "min-snapshots-to-keep": main.min_snapshots_to_keep,
        }
        updates: list[TableUpdate] = [AddSnapshotUpdate(snapshot=snapshot), SetSnapshotRefUpdate.model_validate(ref)]
        change = TableChange(self.job.ident, requirements, updates, base_location=prepared.metadata_location)
        await self.job.catalog.tables.commit(change)

    async def _discard(self, written: Written, owns: Owns, io: FileIO, metadata: TableMetadata) -> None:
        roots = TableFiles(metadata, self.job.catalog.tables.storage.locations).real_roots
        await self.job.threads.run(discard, list(written.paths), owns, io, roots)


async def rewrite_manifests(job: Job) -> dict[str, Any]:
    """The ``rewrite-manifests`` runner (``jobs.RUNNERS``)."""
    return await RewriteManifests(job).run()
