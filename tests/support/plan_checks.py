"""Checks for server-side scan planning with real clients (tests/e2e/test_scan_planning.py).

* :func:`planned` and :func:`sorted_rows`: what pyiceberg planned and read, in a form two plans can be compared by;
* :func:`check_scan_tasks`: a planTableScan / fetchScanTasks answer against the spec's schemas
  (``openapi/rest-catalog-open-api.yaml``) plus the rules the schemas cannot say (references are indices of
  ``delete-files``, every delete file is referenced, partition tuples match their spec);
* :func:`append_partitioned`: pyiceberg's append for specs with transforms (its own needs ``pyiceberg-core``,
  not installed here, for anything but identity);
* :func:`add_equality_deletes`: commits an equality delete file with pyiceberg's low-level manifest API (no
  engine here writes one: Spark's SQL writes position deletes, pyiceberg 0.12 has no API for it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from jsonschema import Draft202012Validator
from pyiceberg.io.pyarrow import write_file
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestWriterV2,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionFieldValue, PartitionKey
from pyiceberg.table import FileScanTask, Table, WriteTask
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
from pyiceberg.typedef import Record
from pyiceberg.types import DateType, TimestampType, TimestamptzType, TimeType
from pyiceberg.utils.datetime import date_to_days, datetime_to_micros, time_to_micros
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC = Path(__file__).resolve().parents[2] / "openapi" / "rest-catalog-open-api.yaml"


# What a plan gave ------------------------------------------------------------------------------------------
def planned(tasks: Iterable[FileScanTask]) -> list[tuple[str, tuple[str, ...]]]:
    """Each task as (data file path, its delete file paths), sorted; duplicates stay visible."""
    return sorted((t.file.file_path, tuple(sorted(d.file_path for d in t.delete_files))) for t in tasks)


def sorted_rows(table: pa.Table) -> list[str]:
    """The rows of ``table`` in a comparable, order-free form (``repr`` keeps NaN equal to NaN)."""
    return sorted(repr(sorted(row.items())) for row in table.to_pylist())


# The spec's schemas ----------------------------------------------------------------------------------------
@cache
def _registry() -> Registry:
    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    # PrimitiveTypeValue is a oneOf of overlapping types (an int is an IntegerTypeValue and a LongTypeValue):
    # being any one of them is what the spec means.
    value = spec["components"]["schemas"]["PrimitiveTypeValue"]
    value["anyOf"] = value.pop("oneOf")
    return Registry().with_resource("urn:spec", Resource.from_contents(spec, default_specification=DRAFT202012))


def conforms(schema: str, body: Any) -> None:
    """``body`` is valid for ``#/components/schemas/<schema>`` of the REST spec."""
    validator = Draft202012Validator({"$ref": f"urn:spec#/components/schemas/{schema}"}, registry=_registry())
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]
    assert not problems, problems


CONTENT_SCHEMA = {
    "data": "DataFile",
    "position-deletes": "PositionDeleteFile",
    "equality-deletes": "EqualityDeleteFile",
}


def check_scan_tasks(body: dict[str, Any], spec_fields: dict[int, int], schema: str = "ScanTasks") -> None:
    """``body`` (a ScanTasks-shaped answer) conforms to ``schema`` and to the rules the schemas leave out.

    ``spec_fields``: partition spec id -> number of partition fields, of the table planned.
    """
    conforms(schema, body)
    deletes = body.get("delete-files", [])
    tasks = body.get("file-scan-tasks", [])
    for task in tasks:
        conforms("FileScanTask", task)
        data = task["data-file"]
        assert data["content"] == "data", data
        conforms("DataFile", data)
        assert len(data["partition"]) == spec_fields[data["spec-id"]], data
        references = task.get("delete-file-references", [])
        assert all(isinstance(i, int) and 0 <= i < len(deletes) for i in references), (references, len(deletes))
        assert len(set(references)) == len(references), references
    referenced = {i for t in tasks for i in t.get("delete-file-references", [])}
    assert referenced == set(range(len(deletes))), "every delete file is referenced by a task"
    for delete in deletes:
        conforms(CONTENT_SCHEMA[delete["content"]], delete)
        assert delete["content"] in {"position-deletes", "equality-deletes"}, delete
        assert len(delete["partition"]) == spec_fields[delete["spec-id"]], delete
        if "content-offset" in delete:
            assert "content-size-in-bytes" in delete, delete
        if delete["content"] == "equality-deletes":
            assert delete.get("equality-ids"), delete
    assert len({t["data-file"]["file-path"] for t in tasks}) == len(tasks), "a data file is planned once"


def _internal(field_type: Any, value: Any) -> Any:
    """A Python value as pyiceberg's transforms take it (dates as days, times and timestamps as microseconds)."""
    if isinstance(field_type, DateType):
        return date_to_days(value)
    if isinstance(field_type, TimestamptzType):
        return datetime_to_micros(value)
    if isinstance(field_type, TimestampType):
        return datetime_to_micros(value)
    if isinstance(field_type, TimeType):
        return time_to_micros(value)
    return value


# Appends to specs with transforms ---------------------------------------------------------------------------
def append_partitioned(table: Table, rows: pa.Table) -> None:
    """Append ``rows`` in one snapshot, one data file per partition of the default spec (Python transforms)."""
    schema, spec = table.schema(), table.spec()
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index, row in enumerate(rows.to_pylist()):
        key = []
        for partition_field in spec.fields:
            source = schema.find_field(partition_field.source_id)
            value = row[source.name]
            if value is not None:
                value = _internal(source.field_type, value)
            key.append(partition_field.transform.transform(source.field_type)(value))
        groups.setdefault(tuple(key), []).append(index)
    write_uuid = uuid.uuid4()
    tasks = [
        WriteTask(
            write_uuid=write_uuid,
            task_id=task_id,
            schema=schema,
            record_batches=rows.take(indices).cast(schema.as_arrow()).to_batches(),
            partition_key=PartitionKey(
                [PartitionFieldValue(f, v) for f, v in zip(spec.fields, key, strict=True)], spec, schema
            ),
        )
        for task_id, (key, indices) in enumerate(groups.items())
    ]
    files = list(write_file(table.io, table.metadata, iter(tasks)))
    with table.transaction() as transaction, transaction.update_snapshot().fast_append() as append:
        for data_file in files:
            append.append_data_file(data_file)


# Equality deletes with pyiceberg's manifest writer -------------------------------------------------------
class _DeleteManifestWriter(ManifestWriterV2):
    """pyiceberg's v2 manifest writer, writing a delete manifest (pyiceberg only writes data manifests)."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


def add_equality_deletes(table: Table, deleted: pa.Table, partition: Record | None = None) -> DataFile:
    """Commit one equality delete file for ``table``'s current snapshot (format v2, default spec).

    ``deleted``'s columns are the equality columns (names of the table's schema), its rows the deleted keys;
    ``partition`` the delete file's partition tuple (None: the default spec must be unpartitioned).
    Returns the delete file as committed.
    """
    metadata = table.metadata
    assert metadata.format_version == 2, "equality deletes are written for v2 tables here"
    schema, spec = table.schema(), table.spec()
    field_ids = [schema.find_field(name).field_id for name in deleted.column_names]
    with_ids = pa.schema(
        [
            field.with_metadata({b"PARQUET:field_id": str(field_id).encode()})
            for field, field_id in zip(deleted.schema, field_ids, strict=True)
        ]
    )
    io = table.io
    name = uuid.uuid4().hex
    path = f"{table.location()}/data/{name}-eq-deletes.parquet"
    with io.new_output(path).create() as stream:
        pq.write_table(deleted.cast(with_ids), stream)
    delete_file = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition if partition is not None else Record(),
        record_count=deleted.num_rows,
        file_size_in_bytes=len(io.new_input(path)),
        equality_ids=field_ids,
    )
    delete_file.spec_id = spec.spec_id

    parent = table.current_snapshot()
    assert parent is not None, "equality deletes need a snapshot to apply to"
    snapshot_id = metadata.new_snapshot_id()
    sequence = metadata.next_sequence_number()
    manifest_path = f"{table.location()}/metadata/{name}-m0.avro"
    writer = _DeleteManifestWriter(spec, schema, io.new_output(manifest_path), snapshot_id, "deflate")
    with writer:
        writer.add_entry(
            ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, data_file=delete_file)
        )
    manifests = [*parent.manifests(io), writer.to_manifest_file()]
    list_path = f"{table.location()}/metadata/snap-{snapshot_id}-1-{name}.avro"
    with write_manifest_list(
        format_version=2,
        output_file=io.new_output(list_path),
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id,
        sequence_number=sequence,
        avro_compression="deflate",
    ) as manifest_list:
        manifest_list.add_manifests(manifests)
    summary = Summary(
        operation=Operation.DELETE,
        **{
            "added-delete-files": "1",
            "added-equality-delete-files": "1",
            "added-equality-deletes": str(deleted.num_rows),
        },
    )
    snapshot = Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id,
        sequence_number=sequence,
        timestamp_ms=int(time.time() * 1000),
        manifest_list=list_path,
        summary=summary,
        schema_id=schema.schema_id,
    )
    table.catalog.commit_table(
        table,
        requirements=(AssertRefSnapshotId(ref="main", snapshot_id=parent.snapshot_id),),
        updates=(
            AddSnapshotUpdate(snapshot=snapshot),
            SetSnapshotRefUpdate(ref_name="main", type=SnapshotRefType.BRANCH, snapshot_id=snapshot_id),
        ),
    )
    table.refresh()
    return delete_file
