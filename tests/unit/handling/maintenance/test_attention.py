"""When a table needs attention (the one judge): from its metadata alone (summary totals and the snapshot list), or
with its manifests' exact counts, always against the table's policy; each reason names the job that helps."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.table.metadata import TableMetadataV2

from irc_proxy.handling.maintenance.attention import reasons, small_files
from irc_proxy.handling.maintenance.health import table_health
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
    assert found == ["about 196 small data files, threshold 100 (rewrite-data-files)"]


def test_delete_files_snapshot_count_and_an_old_snapshot_the_retention_expires() -> None:
    now = int(time.time() * 1000)
    assert reasons(metadata(3, {"total-delete-files": "5"}), policy(delete_files=5, snapshots=3), now) == [
        "5 delete files, threshold 5 (rewrite-data-files)",
        "3 snapshots, threshold 3 (expire-snapshots)",
    ]
    old = metadata(2, {}, age_ms=10 * DAY_MS)
    assert reasons(old, policy(oldest_snapshot_age=timedelta(days=7)), now) == [
        "snapshots older than P7D that the retention expires (expire-snapshots)"
    ]
    kept = policy(oldest_snapshot_age=timedelta(days=7), min_snapshots_to_keep=2)
    assert reasons(old, kept, now) == []  # old, but the retention keeps it: nothing to do
    assert reasons(metadata(0, {}), policy(), now) == []


def test_totals_that_are_no_counts_are_not_judged() -> None:
    now = int(time.time() * 1000)
    negative = metadata(1, {"total-data-files": "-200", "total-files-size": "-1", "total-delete-files": "-9"})
    assert small_files(negative, policy()) is None
    assert reasons(negative, policy(delete_files=1, small_files=1), now) == []


def data_files(sizes: list[int]) -> list[DataFile]:
    return [
        DataFile.from_args(
            content=DataFileContent.DATA,
            file_path=f"file:///w/t/data/{i}.parquet",
            file_format=FileFormat.PARQUET,
            partition={},
            record_count=1,
            file_size_in_bytes=size,
        )
        for i, size in enumerate(sizes)
    ]


def test_the_manifests_exact_count_replaces_the_estimate_against_the_same_threshold() -> None:
    now = int(time.time() * 1000)
    # 10 files: 6 of 1 MiB and 4 of 60 MiB. The summary's average (24.6 MiB) is below 0.75 x 64 MiB, so the
    # estimate is 10 - ceil(246 / 64) = 6; the manifests say 6 files are below 48 MiB.
    sizes = [MB] * 6 + [60 * MB] * 4
    table = metadata(1, {"total-data-files": "10", "total-files-size": str(sum(sizes)), "total-delete-files": "0"})
    judged = policy(target_file_size_bytes=64 * MB, small_files=6)
    assert reasons(table, judged, now) == ["about 6 small data files, threshold 6 (rewrite-data-files)"]
    counted = table_health(table, data_files(sizes), now, judged)
    assert reasons(table, judged, now, counted) == ["6 small data files, threshold 6 (rewrite-data-files)"]
    # the same files under a larger target: the estimate finds none small, the manifests all ten
    larger = policy(target_file_size_bytes=1024 * MB, small_files=6)
    assert small_files(table, larger) == 10 - 1
    assert reasons(table, larger, now, table_health(table, data_files(sizes), now, larger)) == [
        "10 small data files, threshold 6 (rewrite-data-files)"
    ]
    assert reasons(table, policy(target_file_size_bytes=64 * MB, small_files=7), now, counted) == []


def test_a_count_that_stopped_early_is_a_lower_bound() -> None:
    now = int(time.time() * 1000)
    sizes = [MB] * 6 + [60 * MB] * 4
    table = metadata(1, {"total-data-files": "10", "total-files-size": str(sum(sizes))})
    judged = policy(target_file_size_bytes=64 * MB, small_files=3)
    partial = replace(table_health(table, data_files(sizes[:4]), now, judged), complete=False)
    assert reasons(table, judged, now, partial) == ["about 6 small data files, threshold 3 (rewrite-data-files)"]
    few = replace(table_health(table, data_files(sizes[:4]), now, judged), complete=False, small_files=8)
    assert reasons(table, judged, now, few) == ["at least 8 small data files, threshold 3 (rewrite-data-files)"]
