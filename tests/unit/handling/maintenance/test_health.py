"""A table's health numbers (``handling.maintenance.health``) from metadata and manifest entries, measured with
the table's policy's target size, small-file ratio and retention."""

from __future__ import annotations

from typing import Any

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.table.metadata import TableMetadataUtil

from irc_proxy.handling.maintenance.health import small_threshold, summary_health, summary_total, table_health
from irc_proxy.handling.maintenance.policy import Policy, resolve
from irc_proxy.settings import CatalogMaintenanceSettings

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


def policy(table: Any, **catalog: Any) -> Policy:
    """The table's policy under a catalog with ``catalog``'s keys (no namespace overrides)."""
    return resolve(CatalogMaintenanceSettings(**catalog), [], table.properties)


def test_small_is_the_policys_ratio_of_its_target_and_the_tables_iceberg_property_wins() -> None:
    assert small_threshold(policy(metadata({}))) == int(512 * MIB * 0.75)
    assert small_threshold(policy(metadata({}), target_file_size_bytes=8 * MIB, small_file_ratio=0.5)) == 4 * MIB
    own = metadata({}, {"write.target-file-size-bytes": str(2 * MIB)})
    assert small_threshold(policy(own, target_file_size_bytes=8 * MIB)) == int(2 * MIB * 0.75)
    garbage = metadata({}, {"write.target-file-size-bytes": "lots"})  # ignored with a warning: the catalog's
    assert small_threshold(policy(garbage, target_file_size_bytes=8 * MIB)) == 6 * MIB


def test_table_health_counts_small_files_below_the_policys_threshold_and_each_kind_of_delete() -> None:
    table = metadata({}, {"write.target-file-size-bytes": "4000"})
    files = [
        file(DataFileContent.DATA, 2999),  # small: below 3000
        file(DataFileContent.DATA, 3000),  # not small
        file(DataFileContent.DATA, 8000, records=5),
        file(DataFileContent.POSITION_DELETES, 7),
        file(DataFileContent.POSITION_DELETES, 9, FileFormat.PUFFIN),  # a deletion vector
        file(DataFileContent.EQUALITY_DELETES, 11),
    ]
    health = table_health(table, files, NOW, policy(table), manifests=2)
    assert (health.data_files, health.data_bytes, health.records) == (3, 13999, 25)
    assert (health.small_files, health.small_bytes, health.small_threshold) == (1, 2999, 3000)
    assert (health.position_delete_files, health.deletion_vectors, health.equality_delete_files) == (1, 1, 1)
    assert (health.delete_files, health.delete_bytes, health.manifests) == (3, 27, 2)
    assert health.average_file_size == 4666
    assert health.snapshots.count == 3 and health.snapshots.oldest_age_ms == 3 * DAY
    assert health.snapshots.expiry_age_ms == 5 * DAY and health.complete


def test_summary_health_reads_the_current_snapshots_totals_and_the_policys_retention() -> None:
    totals = {"total-data-files": "40", "total-delete-files": "2", "total-files-size": "4000", "total-records": "9"}
    health = summary_health(metadata(totals), NOW, policy(metadata({})))
    assert (health.data_files, health.delete_files, health.files_size, health.records) == (40, 2, 4000, 9)
    assert health.average_file_size == 100
    kept = metadata(totals, {"history.expire.max-snapshot-age-ms": str(30 * DAY)})
    assert summary_health(kept, NOW, policy(kept)).snapshots.expiry_age_ms == 30 * DAY
    catalogs = summary_health(metadata(totals), NOW, policy(metadata({}), max_snapshot_age="P2D"))
    assert catalogs.snapshots.expiry_age_ms == 2 * DAY
    unknown = summary_health(metadata({}), NOW, policy(metadata({})))
    assert unknown.data_files is None and unknown.average_file_size is None
    empty = summary_health(metadata(None, snapshots=0), NOW, policy(metadata({})))
    assert empty.data_files == 0 and empty.snapshots.count == 0 and empty.snapshots.oldest_age_ms is None


def test_a_summary_total_is_a_plain_non_negative_count_or_none() -> None:
    assert summary_total({"total-data-files": "40"}, "total-data-files") == 40
    assert summary_total({"total-data-files": "0"}, "total-data-files") == 0
    for garbage in ("-1", "1.5", "1e3", " 3", "lots", "", "\u00b2", "\u0663"):  # superscript two, Arabic-Indic three
        assert summary_total({"total-data-files": garbage}, "total-data-files") is None, garbage
    assert summary_total({}, "total-data-files") is None and summary_total(None, "total-data-files") is None
