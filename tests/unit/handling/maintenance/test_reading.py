"""``reading.GroupReader``: a group's files read together give exactly what pyiceberg's per-file scan gives (the
reference), whatever their schemas: files written before and after a schema change (an added column, a rename, an
int promoted to long), a file without field ids (read by the table's name mapping), a file that holds its
identity-partition column only in its partition tuple, and files of different schemas interleaved. The rows come
in file order, gathered up to the buffer, and each batch says how many input bytes it stands for."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.fileformat import FileFormatFactory
from pyiceberg.io.pyarrow import ArrowScan, _to_requested_schema
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema, sanitize_column_names
from pyiceberg.table import FileScanTask, Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BooleanType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)

from irc_proxy.handling.maintenance import reading
from irc_proxy.handling.maintenance.reading import GroupReader

SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "note", StringType(), required=False),
    NestedField(4, "tags", StructType(NestedField(5, "k", StringType(), required=False)), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))


def rows(start: int, count: int, schema: pa.Schema) -> pa.Table:
    values = {
        "id": pa.array(range(start, start + count), schema.field("id").type),
        "region": pa.array(["eu"] * count),
        "note": pa.array([f"n{i % 3}" for i in range(start, start + count)]),
        "remark": pa.array([f"r{i % 3}" for i in range(start, start + count)]),
        "extra": pa.array([f"x{i}" for i in range(start, start + count)]),
        "tags": pa.array([{"k": f"k{i}"} for i in range(start, start + count)], schema.field("tags").type),
    }
    return pa.table({field.name: values[field.name] for field in schema}, schema=schema)


@pytest.fixture
def table(tmp_path: Path) -> Table:
    catalog = SqlCatalog("reading", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=tmp_path.as_uri())
    catalog.create_namespace("ns")
    return catalog.create_table(("ns", "t"), schema=SCHEMA, partition_spec=SPEC)


def live(table: Table) -> list[DataFile]:
    return [task.file for task in table.scan().plan_files()]


def reference(table: Table, files: list[DataFile]) -> pa.Table:
    """pyiceberg's per-file scan onto the current schema, then onto the written schema with field ids."""
    metadata = table.metadata
    schema = metadata.schema()
    scan = ArrowScan(metadata, table.io, schema, AlwaysTrue())
    batches = scan._record_batches_from_scan_tasks_and_deletes([FileScanTask(f) for f in files], {})
    model = FileFormatFactory.get(FileFormat.PARQUET)
    written = sanitize_column_names(schema)
    out = [_to_requested_schema(written, schema, b, include_field_ids=True, format_model=model) for b in batches]
    return pa.Table.from_batches(out)


def read(table: Table, files: list[DataFile], buffer_bytes: int = 1 << 20) -> tuple[pa.Table, list[int]]:
    found = list(GroupReader(table.metadata, table.io, buffer_bytes).batches(files))
    return pa.Table.from_batches([batch for batch, _ in found]), [size for _, size in found]


def without_ids(table: Table, directory: Path, start: int) -> DataFile:
    """A Parquet file another engine wrote (no field ids), added with ``add_files``."""
    path = directory / f"foreign-{start}.parquet"
    pq.write_table(rows(start, 5, table.schema().as_arrow()), path)
    table.add_files([path.as_uri()])
    return next(f for f in live(table) if f.file_path.endswith(path.name))


def without_partition_column(table: Table, directory: Path, start: int) -> DataFile:
    """A file holding every column but ``region`` (field id 2): its region is its partition tuple's (Hive-style)."""
    kept = [field.name for field in table.schema().fields if field.field_id != 2]
    arrow = rows(start, 4, table.schema().as_arrow()).select(kept)
    model = FileFormatFactory.get(FileFormat.PARQUET)
    with_ids = _to_requested_schema(
        sanitize_column_names(table.schema().select(*kept)),
        table.schema().select(*kept),
        arrow.to_batches()[0],
        include_field_ids=True,
        format_model=model,
    )
    path = directory / f"hive-{start}.parquet"
    pq.write_table(pa.Table.from_batches([with_ids]), path)
    data_file = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path.as_uri(),
        file_format=FileFormat.PARQUET,
        partition=Record("eu"),
        record_count=4,
        file_size_in_bytes=path.stat().st_size,
    )
    data_file.spec_id = table.metadata.default_spec_id
    return data_file


def test_files_of_every_schema_read_together_match_the_per_file_scan(table: Table, tmp_path: Path) -> None:
    table.append(rows(0, 10, table.schema().as_arrow()))
    table.append(rows(10, 10, table.schema().as_arrow()))
    with table.update_schema() as update:
        update.add_column("extra", StringType())
        update.rename_column("note", "remark")
        update.update_column("id", LongType())
    first = live(table)
    table.append(rows(20, 10, table.schema().as_arrow()))
    written_after = [f for f in live(table) if f not in first]
    foreign = without_ids(table, tmp_path, 100)
    hive = without_partition_column(table, tmp_path, 200)
    # Interleaved: old schema, new schema, old schema, no ids, partition-only column, old schema again.
    files = [first[0], *written_after, first[1], foreign, hive, first[0]]
    expected = reference(table, files)
    got, sizes = read(table, files)
    assert got.schema.equals(GroupReader(table.metadata, table.io, 1).arrow_schema, check_metadata=True)
    assert [(f.name, f.metadata) for f in got.schema] == [(f.name, f.metadata) for f in expected.schema]  # field ids
    assert got.to_pylist() == expected.to_pylist()
    assert [row["region"] for row in got.to_pylist()[-14:-10]] == ["eu"] * 4  # from the partition tuple
    assert sum(sizes) == pytest.approx(sum(f.file_size_in_bytes for f in files), abs=len(files) * 2)


def test_rows_of_many_small_files_are_gathered_within_the_buffer(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    for start in range(0, 200, 10):
        table.append(rows(start, 10, table.schema().as_arrow()))
    files = sorted(live(table), key=lambda f: f.file_path)
    expected = reference(table, files)
    got, _ = read(table, files)
    assert got.num_rows == 200 and got.to_pylist() == expected.to_pylist()
    assert got.num_rows == 200 and len(got.to_batches()) == 1  # twenty files, one projection
    monkeypatch.setattr(reading, "COMBINE_BYTES", 2_000)
    monkeypatch.setattr(reading, "FIELD_BYTES", 0)  # the values' bytes alone here
    small, sizes = read(table, files)
    assert small.to_pylist() == expected.to_pylist()
    assert 1 < len(small.to_batches()) < 20 and len(sizes) == len(small.to_batches())


def test_one_row_files_of_a_wide_schema_are_gathered_by_what_their_fields_cost(tmp_path: Path) -> None:
    """Hostile review: one-row files of 1,000 boolean columns show ~2 KB of ``nbytes`` a batch but cost ~1.1 KB a
    column gathered (each file's batch comes with its own schema and arrays): 1,000 such files gathered 1.2 GB
    (peak RSS growth, 166 MB read one by one before ``GroupReader``), 4,096 would gather ~5 GB. Counted at
    ``FIELD_BYTES`` a field, about ``COMBINE_BYTES / (1,000 * FIELD_BYTES)`` are gathered: 48 MB for 300 files
    where uncounted took 367 MB."""
    width = 1_000
    schema = Schema(*[NestedField(i + 1, f"c{i}", BooleanType(), required=False) for i in range(width)])
    catalog = SqlCatalog("wide", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=tmp_path.as_uri())
    catalog.create_namespace("ns")
    table = catalog.create_table(("ns", "wide"), schema=schema)
    arrow = table.schema().as_arrow()
    one_row = pa.table({field.name: pa.array([True], field.type) for field in arrow}, schema=arrow)
    paths = [tmp_path / f"wide-{i}.parquet" for i in range(40)]
    for path in paths:
        pq.write_table(one_row, path)
    table.add_files([path.as_uri() for path in paths])  # one commit (each costs ~1 s at this width)
    files = sorted(live(table), key=lambda f: f.file_path)
    reader = GroupReader(table.metadata, table.io, 64 * 1024**2)
    most = reader.combine_bytes // (width * 1_024)  # ~1.1 KB a field measured
    found = [batch for batch, _ in reader.batches(files)]
    assert sum(batch.num_rows for batch in found) == 40
    assert max(batch.num_rows for batch in found) <= most, [batch.num_rows for batch in found]


def test_a_file_of_many_row_groups_with_strings_in_lists_and_maps_reads_like_the_per_file_scan(
    tmp_path: Path,
) -> None:
    """Hostile review: read across row groups, a string nested in a list or map read as a dictionary failed
    (``ArrowNotImplementedError``: nested data conversions for chunked array outputs), so the compaction of any
    file of two row groups and a ``list<string>`` column failed where the per-file scan read it."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "tags", ListType(3, StringType(), element_required=False), required=False),
        NestedField(4, "attrs", MapType(5, StringType(), 6, StringType(), value_required=False), required=False),
    )
    catalog = SqlCatalog("nested", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=tmp_path.as_uri())
    catalog.create_namespace("ns")
    table = catalog.create_table(("ns", "nested"), schema=schema)
    arrow = table.schema().as_arrow()
    for start in (0, 100):
        data = pa.Table.from_pylist(
            [
                {
                    "id": i,
                    "tags": None if i % 5 == 0 else [f"t{i % 3}"] * (i % 4),
                    "attrs": None if i % 7 == 0 else [(f"k{i % 2}", None if i % 3 == 0 else f"v{i}")],
                }
                for i in range(start, start + 50)
            ],
            schema=arrow,
        )
        path = tmp_path / f"nested-{start}.parquet"
        pq.write_table(data, path, row_group_size=8)
        table.add_files([path.as_uri()])
    files = sorted(live(table), key=lambda f: f.file_path)
    assert pq.ParquetFile(str(tmp_path / "nested-0.parquet")).num_row_groups == 7
    got, _ = read(table, files, buffer_bytes=300)
    assert got.to_pylist() == reference(table, files).to_pylist()
