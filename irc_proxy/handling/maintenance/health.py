"""How much a table needs maintenance, measured: from its metadata, and for the exact numbers its current manifests.

Two measures, because they cost differently:

* :func:`summary_health` reads only the table's metadata: the current snapshot's summary (``total-data-files``,
  ``total-delete-files``, ``total-files-size``, ``total-records``) and the snapshot list. It costs one metadata
  file per table, so a page (or a scheduler) can look at many tables with it;
* :func:`table_health` also counts the live entries of the current snapshot's manifests: small files, position
  and equality delete files, deletion vectors. It reads every manifest of one table: callers bound it (``files``
  may stop early, then ``complete`` is False).

What "small" means (``small_file_ratio`` times ``target_file_size_bytes``) and how long snapshots are kept come from
the table's maintenance policy (``policy.Policy``), never from defaults here. Whether the numbers call for
maintenance is ``attention.reasons``' to say, the one judge the scheduler, the management API and the console
share. Pure functions: no I/O, no clock (``now_ms`` is given).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.table.metadata import TableMetadata

from irc_proxy.handling.maintenance.policy import Policy


@dataclass(frozen=True)
class SnapshotFacts:
    count: int
    oldest_age_ms: int | None
    """How old the oldest snapshot is at ``now_ms`` (None: no snapshots)."""
    expiry_age_ms: int
    """How long the policy's retention keeps a branch's ancestors (``max_snapshot_age``, or Iceberg's
    ``history.expire.max-snapshot-age-ms`` when the table sets it)."""


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
    small_threshold: int
    """A data file smaller than this many bytes is small (the policy's ``small_file_ratio`` of the target)."""
    snapshots: SnapshotFacts
    complete: bool = True
    """False when the entries stopped early (a bound): the counts are then lower bounds."""

    @property
    def delete_files(self) -> int:
        return self.position_delete_files + self.equality_delete_files + self.deletion_vectors

    @property
    def average_file_size(self) -> int | None:
        return self.data_bytes // self.data_files if self.data_files else None


def summary_total(summary: Mapping[str, str] | None, key: str) -> int | None:
    """A snapshot summary's total (``total-data-files``, ...): None when missing or not a count. Any writer fills
    the summary, so a negative number, a fraction or a non-ASCII digit (``"²".isdigit()`` is true, ``int`` refuses
    it) is not a count."""
    text = None if summary is None else summary.get(key)
    return int(text) if text is not None and text.isascii() and text.isdigit() else None


def small_threshold(policy: Policy) -> int:
    """The size in bytes below which a data file is small under ``policy``."""
    return int(policy.settings.target_file_size_bytes * policy.settings.small_file_ratio)


def snapshot_facts(metadata: TableMetadata, now_ms: int, policy: Policy) -> SnapshotFacts:
    oldest = min((s.timestamp_ms for s in metadata.snapshots), default=None)
    return SnapshotFacts(
        count=len(metadata.snapshots),
        oldest_age_ms=None if oldest is None else max(0, now_ms - oldest),
        expiry_age_ms=policy.retention.max_snapshot_age_ms,
    )


def summary_health(metadata: TableMetadata, now_ms: int, policy: Policy) -> SummaryHealth:
    """The cheap measure: the current snapshot's summary totals and the snapshot list."""
    snapshot = metadata.current_snapshot()
    summary = None if snapshot is None else snapshot.summary
    empty = 0 if snapshot is None else None  # no snapshot: truly empty; a summary without totals: unknown

    def total(key: str) -> int | None:
        return summary_total(summary, key) if snapshot is not None else empty

    return SummaryHealth(
        data_files=total("total-data-files"),
        delete_files=total("total-delete-files"),
        files_size=total("total-files-size"),
        records=total("total-records"),
        target_file_size=policy.settings.target_file_size_bytes,
        snapshots=snapshot_facts(metadata, now_ms, policy),
    )


def is_deletion_vector(file: DataFile) -> bool:
    """A format-v3 deletion vector: position deletes stored in a Puffin file."""
    return file.content == DataFileContent.POSITION_DELETES and file.file_format == FileFormat.PUFFIN


def table_health(
    metadata: TableMetadata,
    files: Iterable[DataFile],
    now_ms: int,
    policy: Policy,
    manifests: int = 0,
    complete: bool = True,
) -> TableHealth:
    """The exact measure over ``files``, the live data and delete files of the current snapshot (deletion
    vectors of one Puffin file each count once per data file they cover, as Iceberg counts them)."""
    small_below = small_threshold(policy)
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
        target_file_size=policy.settings.target_file_size_bytes,
        small_threshold=small_below,
        snapshots=snapshot_facts(metadata, now_ms, policy),
        complete=complete,
    )
