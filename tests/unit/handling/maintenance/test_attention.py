"""When a table needs attention, from its metadata alone: summary totals and the snapshot list."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from pyiceberg.table.metadata import TableMetadataV2

from irc_proxy.handling.maintenance.attention import reasons, small_files
from irc_proxy.handling.maintenance.policy import resolve
from irc_proxy.settings import CatalogMaintenanceSettings

DAY_MS = 24 * 3600 * 1000
MB = 1 << 20


def metadata(snapshots: int, summary: dict[str, str], age_ms: int = 0) -> TableMetadataV2:
    now = int(time.time() * 1000)
    entries: list[dict[str, Any]] = [
        {
            "snapshot-id": i + 1,
            "parent-snapshot-id": i or None,
            "sequence-number": i + 1,
            "timestamp-ms": now - age_ms + i,
            "manifest-list": f"file:///w/t/metadata/snap-{i}.avro",
            "summary": {"operation": "append", **summary},
            "schema-id": 0,
        }
        for i in range(snapshots)
    ]
    return TableMetadataV2.model_validate(
        {
            "location": "file:///w/t",
            "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "last-updated-ms": now,
            "last-column-id": 1,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "current-schema-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}],
            "default-spec-id": 0,
            "last-partition-id": 999,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "default-sort-order-id": 0,
            "snapshots": entries,
            "current-snapshot-id": snapshots or None,
            "refs": {"main": {"snapshot-id": snapshots, "type": "branch"}} if snapshots else {},
            "last-sequence-number": snapshots,
        }
    )


def policy(**keys: Any) -> Any:
    return resolve(CatalogMaintenanceSettings(**keys), [], {})


def test_small_files_are_the_files_beyond_the_bin_packed_count_when_the_average_is_small() -> None:
    many_small = metadata(1, {"total-data-files": "200", "total-files-size": str(200 * MB)})
    assert small_files(many_small, policy(target_file_size_bytes=64 * MB)) == 200 - 4
    big = metadata(1, {"total-data-files": "10", "total-files-size": str(10 * 60 * MB)})
    assert small_files(big, policy(target_file_size_bytes=64 * MB)) == 0
    assert small_files(metadata(1, {}), policy()) is None  # no totals: not estimated
    found = reasons(many_small, policy(target_file_size_bytes=64 * MB, small_files=100), int(time.time() * 1000))
    assert found == ["about 196 small data files (threshold 100)"]


def test_delete_files_snapshot_count_and_an_old_snapshot_the_retention_expires() -> None:
    now = int(time.time() * 1000)
    assert reasons(metadata(3, {"total-delete-files": "5"}), policy(delete_files=5, snapshots=3), now) == [
        "5 delete files (threshold 5)",
        "3 snapshots (threshold 3)",
    ]
    old = metadata(2, {}, age_ms=10 * DAY_MS)
    assert len(reasons(old, policy(oldest_snapshot_age=timedelta(days=7)), now)) == 1
    kept = policy(oldest_snapshot_age=timedelta(days=7), min_snapshots_to_keep=2)
    assert reasons(old, kept, now) == []  # old, but the retention keeps it: nothing to do
    assert reasons(metadata(0, {}), policy(), now) == []
