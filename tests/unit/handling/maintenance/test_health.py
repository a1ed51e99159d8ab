"""A table's health numbers (``handling.maintenance.health``) from metadata and manifest entries."""

from __future__ import annotations

from typing import Any

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.table.metadata import TableMetadataUtil

from irc_proxy.handling.maintenance.health import (
    DEFAULT_TARGET_FILE_SIZE,
    Thresholds,
    attention,
    summary_health,
    table_health,
    target_file_size,
)

DAY = 24 * 3600 * 1000
NOW = 100 * DAY
MIB = 1024 * 1024


def metadata(summary: dict[str, str] | None, properties: dict[str, str] | None = None, snapshots: int = 3) -> Any:
    """Snapshots 1..n a day apart (the last is current, at day 99), its summary ``summary``."""
    listed = [
        {
            "snapshot-id": i,
            "parent-snapshot-id": i - 1 if i > 1 else None,
            "timestamp-ms": (100 - snapshots + i - 1) * DAY,
            "manifest-list": f"file:///w/t/metadata/snap-{i}.avro",
            "sequence-number": i,
            "summary": {"operation": "append", **(summary if i == snapshots and summary else {})},
        }
        for i in range(1, snapshots + 1)
    ]
    return TableMetadataUtil.parse_obj(
        {
            "format-version": 2,
            "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "file:///w/t",
            "last-sequence-number": snapshots,
            "last-updated-ms": NOW,
            "last-column-id": 1,
            "current-schema-id": 0,
            "schemas": [
                {
                    "type": "struct",
                    "schema-id": 0,
                    "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}],
                }
            ],
            "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999,
            "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": properties or {},
            "current-snapshot-id": snapshots if snapshots else None,
            "snapshots": listed,
            "refs": {"main": {"snapshot-id": snapshots, "type": "branch"}} if snapshots else {},
        }
    )


def file(content: DataFileContent, size: int, fmt: FileFormat = FileFormat.PARQUET, records: int = 10) -> DataFile:
    return DataFile.from_args(
        content=content,
        file_path=f"file:///w/t/data/{size}-{content}.{fmt}",
        file_format=fmt,
        partition={},
        record_count=records,
        file_size_in_bytes=size,
    )


def test_target_size_is_the_property_or_512_mib() -> None:
    assert target_file_size({}) == DEFAULT_TARGET_FILE_SIZE == 512 * MIB
    assert target_file_size({"write.target-file-size-bytes": str(8 * MIB)}) == 8 * MIB
    assert target_file_size({"write.target-file-size-bytes": "-1"}) == DEFAULT_TARGET_FILE_SIZE
    assert target_file_size({"write.target-file-size-bytes": "lots"}) == DEFAULT_TARGET_FILE_SIZE


def test_table_health_counts_small_files_below_three_quarters_of_the_target_and_each_kind_of_delete() -> None:
    table = metadata({}, {"write.target-file-size-bytes": str(100)})
    files = [
        file(DataFileContent.DATA, 74),  # small: below 75
        file(DataFileContent.DATA, 75),  # not small
        file(DataFileContent.DATA, 200, records=5),
        file(DataFileContent.POSITION_DELETES, 7),
        file(DataFileContent.POSITION_DELETES, 9, FileFormat.PUFFIN),  # a deletion vector
        file(DataFileContent.EQUALITY_DELETES, 11),
    ]
    health = table_health(table, files, NOW, manifests=2)
    assert (health.data_files, health.data_bytes, health.records) == (3, 349, 25)
    assert (health.small_files, health.small_bytes, health.small_threshold) == (1, 74, 75)
    assert (health.position_delete_files, health.deletion_vectors, health.equality_delete_files) == (1, 1, 1)
    assert (health.delete_files, health.delete_bytes, health.manifests) == (3, 27, 2)
    assert health.average_file_size == 116
    assert health.snapshots.count == 3 and health.snapshots.oldest_age_ms == 3 * DAY
    assert health.complete


def test_summary_health_reads_the_current_snapshots_totals_only() -> None:
    totals = {"total-data-files": "40", "total-delete-files": "2", "total-files-size": "4000", "total-records": "9"}
    health = summary_health(metadata(totals), NOW)
    assert (health.data_files, health.delete_files, health.files_size, health.records) == (40, 2, 4000, 9)
    assert health.average_file_size == 100
    unknown = summary_health(metadata({}), NOW)
    assert unknown.data_files is None and unknown.average_file_size is None
    empty = summary_health(metadata(None, snapshots=0), NOW)
    assert empty.data_files == 0 and empty.snapshots.count == 0 and empty.snapshots.oldest_age_ms is None


def test_attention_names_the_job_for_small_files_deletes_and_old_or_many_snapshots() -> None:
    small = {"total-data-files": "40", "total-delete-files": "0", "total-files-size": str(40 * MIB)}
    assert attention(summary_health(metadata(small), NOW)) == [
        "40 data files of 1,048,576 bytes on average (rewrite-data-files)"
    ]
    big = {"total-data-files": "40", "total-delete-files": "5", "total-files-size": str(40 * 500 * MIB)}
    assert attention(summary_health(metadata(big), NOW)) == ["5 delete files for 40 data files (rewrite-data-files)"]
    old = metadata(big | {"total-delete-files": "0"}, snapshots=7)  # the oldest is 7 days old: past 5 days
    assert attention(summary_health(old, NOW)) == [
        "snapshots older than history.expire.max-snapshot-age-ms (expire-snapshots)"
    ]
    kept_longer = metadata(big | {"total-delete-files": "0"}, {"history.expire.max-snapshot-age-ms": str(30 * DAY)}, 7)
    assert attention(summary_health(kept_longer, NOW)) == []
    assert attention(summary_health(old, NOW), Thresholds(max_snapshots=3)) == ["7 snapshots (expire-snapshots)"]
    table = metadata({}, {"write.target-file-size-bytes": "100"})
    exact = table_health(table, [file(DataFileContent.DATA, 10) for _ in range(5)], NOW)
    assert attention(exact) == ["5 small data files (rewrite-data-files)"]
    assert attention(exact, Thresholds(min_files_to_compact=0)) == []
