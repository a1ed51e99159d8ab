"""Whether a table needs maintenance: the one judge the scheduler, the management API and the console share.

The thresholds, the target file size and the retention are the table's resolved policy (``policy.resolve``:
defaults, the catalog's settings, its namespaces' and its own ``irc-proxy.maintenance.*`` properties, Iceberg's
own properties winning), so a threshold a user sets changes what every one of them says.

From the metadata alone (what the scheduler and the API read; the console's "needing attention" page too): the
current snapshot's summary carries the table's totals (``total-data-files``, ``total-delete-files``,
``total-files-size``); the snapshot list its count and oldest snapshot. Small files are estimated: the data
files beyond the count that bin-packing ``total-files-size`` into ``target_file_size_bytes`` would give, when
the average file is below ``small_file_ratio`` of the target. A summary without totals (some writers leave
them out) makes only the snapshot thresholds count.

A table's health page has also counted its current manifests (``health.table_health``): that exact count of
small files (below ``small_file_ratio`` times the target) and delete files replaces the estimate and the summary's
total, against the same thresholds. Each reason names the job that helps, in parentheses at its end.
"""

from __future__ import annotations

import math
from datetime import timedelta

from pydantic import TypeAdapter
from pyiceberg.table.metadata import TableMetadata

from irc_proxy.handling.maintenance.health import TableHealth, summary_total
from irc_proxy.handling.maintenance.policy import Policy
from irc_proxy.handling.maintenance.retention import plan_expiry

_DURATION = TypeAdapter(timedelta)


def _total(metadata: TableMetadata, key: str) -> int | None:
    snapshot = metadata.current_snapshot()
    return None if snapshot is None else summary_total(snapshot.summary, key)


def small_files(metadata: TableMetadata, policy: Policy) -> int | None:
    """The estimated count of small data files (see the module); None when the summary has no totals."""
    files, size = _total(metadata, "total-data-files"), _total(metadata, "total-files-size")
    if files is None or size is None or files == 0:
        return None
    target = policy.settings.target_file_size_bytes
    if size / files >= policy.settings.small_file_ratio * target:
        return 0
    return max(files - math.ceil(size / target), 0)


def _judged(from_summary: int | None, word: str, counted: TableHealth | None, exact: int) -> tuple[int | None, str]:
    """The count to judge by and the word before it: the manifests' count when they were all read; when the count
    stopped early it is a lower bound, used if it is at least the summary's figure."""
    if counted is None or (not counted.complete and from_summary is not None and from_summary > exact):
        return from_summary, word
    return exact, "" if counted.complete else "at least "


def reasons(metadata: TableMetadata, policy: Policy, now_ms: int, counted: TableHealth | None = None) -> list[str]:
    """Why the table needs attention under ``policy`` (empty: it does not), each naming the job that helps;
    ``counted``: the manifests' exact counts, when a caller read them (see the module)."""
    own, found = policy.settings, list[str]()
    exact_small, exact_deletes = (0, 0) if counted is None else (counted.small_files, counted.delete_files)
    small, word = _judged(small_files(metadata, policy), "about ", counted, exact_small)
    if small is not None and small >= own.small_files:
        found.append(f"{word}{small:,} small data files, threshold {own.small_files:,} (rewrite-data-files)")
    deletes, word = _judged(_total(metadata, "total-delete-files"), "", counted, exact_deletes)
    if deletes is not None and deletes >= own.delete_files:
        found.append(f"{word}{deletes:,} delete files, threshold {own.delete_files:,} (rewrite-data-files)")
    if len(metadata.snapshots) >= own.snapshots:
        found.append(f"{len(metadata.snapshots):,} snapshots, threshold {own.snapshots:,} (expire-snapshots)")
    oldest = min((s.timestamp_ms for s in metadata.snapshots), default=None)
    age_ms = own.oldest_snapshot_age.total_seconds() * 1000
    if oldest is not None and now_ms - oldest > age_ms and plan_expiry(metadata, now_ms, policy.retention).snapshot_ids:
        age = _DURATION.dump_python(own.oldest_snapshot_age, mode="json")
        found.append(f"snapshots older than {age} that the retention expires (expire-snapshots)")
    return found
