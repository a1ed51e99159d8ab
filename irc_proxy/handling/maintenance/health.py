"""How much a table needs maintenance, from its metadata (and, for the exact numbers, its current manifests).

Two measures, because they cost differently:

* :func:`summary_health` reads only the table's metadata: the current snapshot's summary (``total-data-files``,
  ``total-delete-files``, ``total-files-size``, ``total-records``) and the snapshot list. It costs one metadata
  file per table, so a page (or a scheduler) can look at many tables with it;
* :func:`table_health` also counts the live entries of the current snapshot's manifests: small files (smaller
  than ``SMALL_FRACTION`` times the table's ``write.target-file-size-bytes``), position and equality delete files,
  deletion vectors. It reads every manifest of one table: callers bound it (``files`` may stop early, then
  ``complete`` is False).

:func:`attention` turns either measure into the reasons a table needs maintenance, against :class:`Thresholds`
(defaults here; a policy may pass its own). Pure functions: no I/O, no clock (``now_ms`` is given), so the
console, the scheduler and the tests compute the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.table.metadata import TableMetadata

from irc_proxy.handling.maintenance.retention import Retention

TARGET_FILE_SIZE = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024
"""Iceberg Java's default ``write.target-file-size-bytes`` (512 MiB)."""
SMALL_FRACTION = 0.75
"""A data file smaller than this fraction of the target size is small (what compaction would rewrite)."""


@dataclass(frozen=True)
class Thresholds:
    """When a table needs attention; each check is off at 0."""

    min_files_to_compact: int = 5
    """Data files at least, with a small average size, before small files are worth reporting."""
    max_delete_file_ratio: float = 0.1
    """Delete files per data file above which rewriting data files would pay."""
    max_snapshots: int = 500
    """Snapshots above which expiry is overdue whatever their age."""


@dataclass(frozen=True)
class SnapshotFacts:
    count: int
    oldest_age_ms: int | None
    """How old the oldest snapshot is at ``now_ms`` (None: no snapshots)."""
    expiry_age_ms: int
    """The table's ``history.expire.max-snapshot-age-ms`` (Java's default: 5 days)."""


@dataclass(frozen=True)
class SummaryHealth:
    """What the current snapshot's summary says (no manifest read); a count the summary lacks is None."""

    data_files: int | None
    delete_files: int | None
    files_size: int | None
    records: int | None
    target_file_size: int
    snapshots: SnapshotFacts

    @property
    def average_file_size(self) -> int | None:
        if not self.data_files or self.files_size is None:
            return None
        return self.files_size // self.data_files


@dataclass(frozen=True)
class TableHealth:
    """Counted from the live entries of the current snapshot's manifests."""

    data_files: int
    data_bytes: int
    records: int
    small_files: int
    small_bytes: int
    position_delete_files: int
    equality_delete_files: int
    deletion_vectors: int
    delete_bytes: int
    manifests: int
    target_file_size: int
    snapshots: SnapshotFacts
    complete: bool = True
    """False when the entries stopped early (a bound): the counts are then lower bounds."""

    @property
    def small_threshold(self) -> int:
        return int(self.target_file_size * SMALL_FRACTION)

    @property
    def delete_files(self) -> int:
        return self.position_delete_files + self.equality_delete_files + self.deletion_vectors

    @property
    def average_file_size(self) -> int | None:
        return self.data_bytes // self.data_files if self.data_files else None


def target_file_size(properties: Mapping[str, str]) -> int:
    """The table's ``write.target-file-size-bytes``; the default when missing or not a positive number."""
    text = properties.get(TARGET_FILE_SIZE, "")
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_TARGET_FILE_SIZE


def snapshot_facts(metadata: TableMetadata, now_ms: int) -> SnapshotFacts:
    oldest = min((s.timestamp_ms for s in metadata.snapshots), default=None)
    return SnapshotFacts(
        count=len(metadata.snapshots),
        oldest_age_ms=None if oldest is None else max(0, now_ms - oldest),
        expiry_age_ms=Retention.of(metadata.properties).max_snapshot_age_ms,
    )


def _count(summary: Mapping[str, str], key: str) -> int | None:
    text = summary.get(key)
    return int(text) if text is not None and text.isdigit() else None


def summary_health(metadata: TableMetadata, now_ms: int) -> SummaryHealth:
    """The cheap measure: the current snapshot's summary totals and the snapshot list."""
    snapshot = metadata.current_snapshot()
    summary: Mapping[str, str] = {} if snapshot is None or snapshot.summary is None else snapshot.summary
    empty = 0 if snapshot is None else None  # no snapshot: truly empty; a summary without totals: unknown
    return SummaryHealth(
        data_files=_count(summary, "total-data-files") if snapshot else empty,
        delete_files=_count(summary, "total-delete-files") if snapshot else empty,
        files_size=_count(summary, "total-files-size") if snapshot else empty,
        records=_count(summary, "total-records") if snapshot else empty,
        target_file_size=target_file_size(metadata.properties),
        snapshots=snapshot_facts(metadata, now_ms),
    )


def is_deletion_vector(file: DataFile) -> bool:
    """A format-v3 deletion vector: position deletes stored in a Puffin file."""
    return file.content == DataFileContent.POSITION_DELETES and file.file_format == FileFormat.PUFFIN


def table_health(
    metadata: TableMetadata, files: Iterable[DataFile], now_ms: int, manifests: int = 0, complete: bool = True
) -> TableHealth:
    """The exact measure over ``files``, the live data and delete files of the current snapshot (deletion
    vectors of one Puffin file each count once per data file they cover, as Iceberg counts them)."""
    target = target_file_size(metadata.properties)
    small_below = int(target * SMALL_FRACTION)
    data = data_bytes = records = small = small_bytes = positions = equalities = vectors = delete_bytes = 0
    for file in files:
        size = file.file_size_in_bytes
        if file.content == DataFileContent.DATA:
            data, data_bytes, records = data + 1, data_bytes + size, records + file.record_count
            if size < small_below:
                small, small_bytes = small + 1, small_bytes + size
            continue
        delete_bytes += size
        if is_deletion_vector(file):
            vectors += 1
        elif file.content == DataFileContent.POSITION_DELETES:
            positions += 1
        else:
            equalities += 1
    return TableHealth(
        data_files=data,
        data_bytes=data_bytes,
        records=records,
        small_files=small,
        small_bytes=small_bytes,
        position_delete_files=positions,
        equality_delete_files=equalities,
        deletion_vectors=vectors,
        delete_bytes=delete_bytes,
        manifests=manifests,
        target_file_size=target,
        snapshots=snapshot_facts(metadata, now_ms),
        complete=complete,
    )


def attention(health: SummaryHealth | TableHealth, limits: Thresholds = Thresholds()) -> list[str]:
    """Why the table needs maintenance (empty: it does not), each reason naming the job that helps."""
    reasons = []
    files, average = health.data_files, health.average_file_size
    small_below = int(health.target_file_size * SMALL_FRACTION)
    enough = limits.min_files_to_compact > 0
    if isinstance(health, TableHealth):
        if enough and health.small_files >= limits.min_files_to_compact:
            reasons.append(f"{health.small_files:,} small data files (rewrite-data-files)")
    elif enough and files and files >= limits.min_files_to_compact and average is not None and average < small_below:
        reasons.append(f"{files:,} data files of {average:,} bytes on average (rewrite-data-files)")
    deletes = health.delete_files
    if limits.max_delete_file_ratio and deletes and deletes > limits.max_delete_file_ratio * max(files or 0, 1):
        reasons.append(f"{deletes:,} delete files for {files or 0:,} data files (rewrite-data-files)")
    snapshots = health.snapshots
    if limits.max_snapshots and snapshots.count > limits.max_snapshots:
        reasons.append(f"{snapshots.count:,} snapshots (expire-snapshots)")
    elif snapshots.count > 1 and (snapshots.oldest_age_ms or 0) > snapshots.expiry_age_ms:
        reasons.append("snapshots older than history.expire.max-snapshot-age-ms (expire-snapshots)")
    return reasons
