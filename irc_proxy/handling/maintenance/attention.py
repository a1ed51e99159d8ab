"""Whether a table needs maintenance, from what its metadata says alone (no manifest is read).

The current snapshot's summary carries the table's totals (``total-data-files``, ``total-delete-files``,
``total-files-size``); the snapshot list its count and oldest snapshot. Small files are estimated: the data
files beyond the count that bin-packing ``total-files-size`` into ``target_file_size_bytes`` would give, when
the average file is below ``small_file_ratio`` of the target. A summary without totals (some writers leave
them out) makes only the snapshot thresholds count.
"""

from __future__ import annotations

import math

from pyiceberg.table.metadata import TableMetadata

from irc_proxy.handling.maintenance.policy import Policy
from irc_proxy.handling.maintenance.retention import plan_expiry


def _total(metadata: TableMetadata, key: str) -> int | None:
    snapshot = metadata.current_snapshot()
    if snapshot is None or snapshot.summary is None:
        return None
    raw = snapshot.summary.get(key)
    try:
        return None if raw is None else int(raw)
    except ValueError:
        return None


def small_files(metadata: TableMetadata, policy: Policy) -> int | None:
    """The estimated count of small data files (see the module); None when the summary has no totals."""
    files, size = _total(metadata, "total-data-files"), _total(metadata, "total-files-size")
    if files is None or size is None or files == 0:
        return None
    target = policy.settings.target_file_size_bytes
    if size / files >= policy.settings.small_file_ratio * target:
        return 0
    return max(files - math.ceil(size / target), 0)


def reasons(metadata: TableMetadata, policy: Policy, now_ms: int) -> list[str]:
    """Why the table needs attention under ``policy`` (empty: it does not)."""
    own, found = policy.settings, list[str]()
    small = small_files(metadata, policy)
    if small is not None and small >= own.small_files:
        found.append(f"about {small} small data files (threshold {own.small_files})")
    deletes = _total(metadata, "total-delete-files")
    if deletes is not None and deletes >= own.delete_files:
        found.append(f"{deletes} delete files (threshold {own.delete_files})")
    if len(metadata.snapshots) >= own.snapshots:
        found.append(f"{len(metadata.snapshots)} snapshots (threshold {own.snapshots})")
    oldest = min((s.timestamp_ms for s in metadata.snapshots), default=None)
    age_ms = own.oldest_snapshot_age.total_seconds() * 1000
    if oldest is not None and now_ms - oldest > age_ms and plan_expiry(metadata, now_ms, policy.retention).snapshot_ids:
        found.append(f"snapshots older than {own.oldest_snapshot_age} that the retention expires")
    return found
