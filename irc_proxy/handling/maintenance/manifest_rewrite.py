"""Planning and writing a manifest rewrite (``rewrite-manifests``, the job in ``manifests``), as Iceberg Java's
``BaseRewriteManifests`` does it: the small data manifests of a snapshot bin-packed per partition spec up to
``commit.manifest.target-size-bytes``, each live entry written ``EXISTING`` with its snapshot id and sequence
numbers, the new manifests listed before the kept ones in a ``replace`` snapshot whose summary carries Java's
counts. Planning is pure; writing is blocking (run it in a worker thread) and reads through the catalog's
bounded reader, confined to the table, within an entry budget.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

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
from pyiceberg.utils.bin_packing import ListPacker

from irc_proxy.errors import Unprocessable
from irc_proxy.handling.loaded import Owns, Read
from irc_proxy.handling.maintenance.reach import TooManyFiles
from irc_proxy.handling.storage.locations import METADATA_PATH
from irc_proxy.handling.storage.purge import redact
from irc_proxy.memory_files import MemoryFileIO, MemoryInputFile

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


def target_bytes(metadata: TableMetadata, default: int = MANIFEST_TARGET_SIZE_DEFAULT) -> int:
    """The table's ``commit.manifest.target-size-bytes``; ``default`` (the maintenance policy's
    ``manifest_target_size_bytes``, else Java's default) when unset or not a positive number."""
    try:
        value = int(metadata.properties.get(MANIFEST_TARGET_SIZE, default))
    except ValueError:
        return default
    return value if value > 0 else default
