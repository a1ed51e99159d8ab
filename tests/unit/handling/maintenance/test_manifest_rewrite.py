"""``rewrite-manifests``' planning (Java's bin-packing per spec), summary and writer, on real Avro manifests in a
temporary directory (the job's commit and concurrency: tests/integration/test_maintenance_manifests.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
)
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField

from irc_proxy.errors import Unprocessable
from irc_proxy.handling.maintenance.manifest_rewrite import (
    MANIFEST_TARGET_SIZE_DEFAULT,
    FileCountsDiffer,
    ManifestRewriter,
    Written,
    plan_rewrite,
    summary,
    target_bytes,
)
from irc_proxy.handling.maintenance.reach import TooManyFiles

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def manifest(name: str, length: int, spec: int = 0, files: int = 1, content: Any = ManifestContent.DATA) -> Any:
    return ManifestFile.from_args(
        manifest_path=f"file:///t/metadata/{name}.avro",
        manifest_length=length,
        partition_spec_id=spec,
        content=content,
        sequence_number=1,
        min_sequence_number=1,
        added_snapshot_id=1,
        added_files_count=files,
        existing_files_count=0,
        deleted_files_count=0,
    )


FIELDS = (
    *("manifest_path", "manifest_length", "partition_spec_id", "content", "sequence_number", "min_sequence_number"),
    *("added_snapshot_id", "added_files_count", "existing_files_count", "deleted_files_count"),
)


def copy_of(original: ManifestFile, **changes: Any) -> ManifestFile:
    return ManifestFile.from_args(**{**{name: getattr(original, name) for name in FIELDS}, **changes})


def names(manifests: Any) -> list[str]:
    return [m.manifest_path.rsplit("/", 1)[-1].removesuffix(".avro") for m in manifests]


# Planning --------------------------------------------------------------------------------------------------
def test_small_data_manifests_are_packed_per_spec_and_the_rest_is_kept_in_order() -> None:
    listed = [
        manifest("a", 10),
        manifest("big", 100),
        manifest("b", 10),
        manifest("deletes", 5, content=ManifestContent.DELETES),
        manifest("c", 10),
        manifest("s1", 10, spec=1),
        manifest("s1b", 10, spec=1),
        manifest("lone", 10, spec=2),
    ]
    plan = plan_rewrite(listed, target_bytes=100, max_entries=1000)
    assert [names(b) for b in plan.bins] == [["a", "b", "c"], ["s1", "s1b"]]
    assert names(plan.kept) == ["big", "deletes", "lone"]
    assert plan.live_entries == 5 and not plan.truncated


def test_bins_close_at_the_target_and_a_bin_of_one_is_kept() -> None:
    plan = plan_rewrite([manifest(n, 40) for n in "abcde"], target_bytes=90, max_entries=1000)
    assert [names(b) for b in plan.bins] == [["a", "b"], ["c", "d"]]
    assert names(plan.kept) == ["e"]


@pytest.mark.parametrize("listed", [[manifest("a", 10)], [manifest("a", 100), manifest("b", 100)], []])
def test_nothing_to_merge_is_an_empty_plan(listed: list[Any]) -> None:
    plan = plan_rewrite(listed, target_bytes=100, max_entries=1000)
    assert plan.bins == () and names(plan.kept) == names(listed)


def test_bins_past_the_entry_budget_wait_for_the_next_run() -> None:
    listed = [manifest("a", 10, files=3), manifest("b", 10, files=3)]
    listed += [manifest("c", 10, spec=1), manifest("d", 10, spec=1)]
    plan = plan_rewrite(listed, target_bytes=100, max_entries=5)
    assert [names(b) for b in plan.bins] == [["c", "d"]] and plan.truncated
    assert names(plan.kept) == ["a", "b"]


def test_summary_has_javas_counts_and_the_previous_totals() -> None:
    previous = Snapshot.model_validate(
        {
            "snapshot-id": 1,
            "timestamp-ms": 1,
            "manifest-list": "file:///t/metadata/snap-1.avro",
            "summary": {"operation": "append", "total-records": "7", "total-data-files": "3", "added-records": "2"},
        }
    )
    made = summary(previous, created=1, kept=2, replaced=3, entries=4)
    assert made.operation == Operation.REPLACE
    assert made.additional_properties == {
        "manifests-created": "1",
        "manifests-kept": "2",
        "manifests-replaced": "3",
        "entries-processed": "4",
        "total-records": "7",
        "total-data-files": "3",
    }


@pytest.mark.parametrize(
    ("value", "expected"), [(None, MANIFEST_TARGET_SIZE_DEFAULT), ("1024", 1024), ("x", 8388608), ("0", 8388608)]
)
def test_the_target_size_is_the_tables_property_or_javas_default(value: str | None, expected: int) -> None:
    properties = {} if value is None else {"commit.manifest.target-size-bytes": value}
    metadata = new_table_metadata(SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "file:///t", properties)
    assert target_bytes(metadata) == expected


# Writing ---------------------------------------------------------------------------------------------------
class Table:
    """A v2 table in ``tmp_path`` with ``count`` appends, each one manifest of one file (snapshot i, sequence i)."""

    def __init__(self, tmp_path: Path, count: int) -> None:
        self.root = tmp_path
        properties = {"format-version": "2"}
        self.metadata: TableMetadata = new_table_metadata(
            SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, f"file://{tmp_path}", properties
        )
        self.io = PyArrowFileIO()
        (tmp_path / "metadata").mkdir()
        self.manifests = [self._append(i) for i in range(1, count + 1)]
        self.reads: list[str] = []

    def _append(self, i: int) -> ManifestFile:
        location = f"file://{self.root}/metadata/m{i}.avro"
        with write_manifest(2, UNPARTITIONED_PARTITION_SPEC, SCHEMA, self.io.new_output(location), i, "null") as w:
            data_file = DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=f"file://{self.root}/data/{i}.parquet",
                file_format=FileFormat.PARQUET,
                partition=Record(),
                record_count=10,
                file_size_in_bytes=100,
            )
            w.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=i, data_file=data_file))
        made = w.to_manifest_file()
        made.sequence_number = made.min_sequence_number = i  # as the manifest list assigns them
        return made

    def read(self, path: str, what: str) -> bytes:
        self.reads.append(path)
        return Path(path.removeprefix("file://")).read_bytes()

    def owns(self, path: str) -> bool:
        return path.startswith(f"file://{self.root}/")

    def rewriter(self, max_entries: int = 1000) -> ManifestRewriter:
        return ManifestRewriter(self.metadata, self.read, self.owns, self.io, 1 << 20, max_entries)

    def head(self) -> Snapshot:
        return Snapshot.model_validate(
            {
                "snapshot-id": len(self.manifests),
                "sequence-number": len(self.manifests),
                "timestamp-ms": 1,
                "manifest-list": f"file://{self.root}/metadata/snap.avro",
                "summary": Summary(Operation.APPEND),
            }
        )


def test_entries_are_rewritten_existing_with_their_snapshot_ids_and_sequence_numbers(tmp_path: Path) -> None:
    table = Table(tmp_path, 3)
    plan = plan_rewrite(table.manifests, 1 << 20, 1000)
    written = Written()

    table.rewriter().write(table.head(), plan, written)

    assert len(written.manifests) == 1 and written.entries == 3 and written.snapshot is not None
    merged = written.manifests[0]
    assert merged.added_snapshot_id == written.snapshot.snapshot_id and merged.existing_files_count == 3
    entries = merged.fetch_manifest_entry(table.io)
    assert [(e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in entries] == [
        (ManifestEntryStatus.EXISTING, i, i, i) for i in (1, 2, 3)
    ]
    snapshot = written.snapshot
    assert snapshot.sequence_number == table.metadata.next_sequence_number() and snapshot.parent_snapshot_id == 3
    listed = snapshot.manifests(table.io)
    assert [m.manifest_path for m in listed] == [merged.manifest_path]
    assert listed[0].sequence_number == snapshot.sequence_number and listed[0].min_sequence_number == 1
    assert sorted(written.paths) == sorted([merged.manifest_path, snapshot.manifest_list])


def test_counts_that_do_not_match_the_manifest_list_commit_nothing(tmp_path: Path) -> None:
    table = Table(tmp_path, 2)
    table.manifests[0] = copy_of(table.manifests[0], added_files_count=2)  # the manifest holds one
    plan = plan_rewrite(table.manifests, 1 << 20, 1000)
    with pytest.raises(FileCountsDiffer, match="same number of active files"):
        table.rewriter().write(table.head(), plan, Written())


def test_reading_is_bounded_by_the_entry_budget_and_confined(tmp_path: Path) -> None:
    table = Table(tmp_path, 3)
    plan = plan_rewrite(table.manifests, 1 << 20, 1000)
    with pytest.raises(TooManyFiles):
        table.rewriter(max_entries=2).write(table.head(), plan, Written())
    table.manifests[1] = copy_of(table.manifests[1], manifest_path="file:///etc/elsewhere.avro")
    with pytest.raises(Unprocessable, match="outside the table's locations"):
        table.rewriter().write(table.head(), plan_rewrite(table.manifests, 1 << 20, 1000), Written())
    assert "file:///etc/elsewhere.avro" not in table.reads
