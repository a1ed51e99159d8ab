"""The preview's decoding bounds on crafted files: a deletion vector of a few kilobytes naming 16 million
positions (pyiceberg's own reader lists them all: 4 s and 860 MB measured), a position delete file declaring
more rows than the budget, and a data file whose dictionary expands past it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyroaring import BitMap

from irc_proxy.ui import preview_reads

DATA = "file:///w/t/data/a.parquet"
ANY = preview_reads.Wanted(frozenset(), frozenset({"s"}))


def _delete(file_format: FileFormat) -> DataFile:
    return DataFile.from_args(content=DataFileContent.POSITION_DELETES, file_path="d", file_format=file_format)


def _puffin(referenced: str, bitmap: BitMap) -> bytes:
    """A Puffin file with one deletion-vector-v1 blob (CRC not checked by the readers here)."""
    import json

    vector = (1).to_bytes(8, "little") + (0).to_bytes(4, "little") + bitmap.serialize()
    blob = (len(vector) + 4).to_bytes(4, "big") + bytes.fromhex("d1d33964") + vector + (0).to_bytes(4, "big")
    footer = {
        "blobs": [
            {
                "type": "deletion-vector-v1",
                "fields": [],
                "snapshot-id": -1,
                "sequence-number": -1,
                "offset": 4,
                "length": len(blob),
                "properties": {"referenced-data-file": referenced},
            }
        ]
    }
    payload = json.dumps(footer).encode()
    return b"PFA1" + blob + b"PFA1" + payload + len(payload).to_bytes(4, "little") + bytes(4) + b"PFA1"


def test_a_deletion_vector_naming_16_million_positions_yields_only_those_below_the_rows_kept() -> None:
    huge = BitMap()
    huge.add_range(0, 1 << 24)
    data = _puffin(DATA, huge)
    assert len(data) < 8192
    assert list(preview_reads.deleted_positions(data, _delete(FileFormat.PUFFIN), DATA, 100, 1 << 20)) == list(
        range(100)
    )
    assert list(preview_reads.deleted_positions(data, _delete(FileFormat.PUFFIN), "other", 100, 1 << 20)) == []


def _parquet(table: pa.Table, **options: object) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **options)
    return bytes(sink.getvalue().to_pybytes())


def test_a_position_delete_file_declaring_more_rows_than_the_budget_is_refused() -> None:
    rows = 1_000_000
    deletes = pa.table({"file_path": pa.array([DATA] * rows), "pos": pa.array(range(rows), pa.int64())})
    data = _parquet(deletes)
    with pytest.raises(preview_reads.TooCostly):
        preview_reads.deleted_positions(data, _delete(FileFormat.PARQUET), DATA, 100, 1 << 20)
    assert list(preview_reads.deleted_positions(data, _delete(FileFormat.PARQUET), DATA, 5, 64 << 20)) == list(range(5))
    long_path = pa.DictionaryArray.from_arrays(pa.array([0] * 100, pa.int32()), pa.array(["p" * (8 << 20)]))
    one_huge_path = _parquet(
        pa.table({"file_path": long_path, "pos": pa.array(range(100), pa.int64())}), compression="zstd"
    )
    assert len(one_huge_path) < 64 << 10  # 8 MB of path in a few kilobytes
    with pytest.raises(preview_reads.TooCostly):
        preview_reads.deleted_positions(one_huge_path, _delete(FileFormat.PARQUET), DATA, 100, 1 << 20)


def test_a_data_file_whose_dictionary_expands_past_the_budget_is_cut_to_its_first_rows() -> None:
    column = pa.DictionaryArray.from_arrays(pa.array([0] * 1000, pa.int32()), pa.array(["a" * 100_000]))
    data = _parquet(pa.table({"s": column}), compression="zstd", store_schema=False)
    cut = preview_reads.data_prefix(data, DATA, ANY, 4 << 20, 1000, lambda: None)
    assert cut.over_budget and not cut.whole and 0 < cut.rows < 100 and len(cut.data) < 10 << 20
    assert pq.read_table(pa.BufferReader(cut.data)).num_rows == cut.rows
    whole = preview_reads.data_prefix(data, DATA, ANY, 200 << 20, 1000, lambda: None)
    assert whole.data == data and whole.rows == 1000 and whole.whole and not whole.over_budget
    first = preview_reads.data_prefix(data, DATA, ANY, 200 << 20, 10, lambda: None)
    assert first.rows == 10 and not first.whole and not first.over_budget
    with pytest.raises(preview_reads.TooCostly):
        preview_reads.data_prefix(data, DATA, ANY, 100_000, 1000, lambda: None)


def test_only_the_wanted_columns_of_a_wide_file_are_decoded() -> None:
    """5,000 columns, one shown: picked by field id (or by name in a file written without ids)."""
    fields = [pa.field(f"c{i}", pa.int64(), metadata={b"PARQUET:field_id": str(i).encode()}) for i in range(5000)]
    table = pa.table([pa.array(range(100), pa.int64())] * 5000, schema=pa.schema(fields))
    data = _parquet(table, compression="none")
    wanted = preview_reads.Wanted(frozenset({4999}), frozenset({"none-by-name"}))
    first = preview_reads.data_prefix(data, DATA, wanted, 1 << 30, 10, lambda: None)
    kept = pq.read_table(pa.BufferReader(first.data))
    assert kept.column_names == ["c4999"] and first.rows == 10
    assert kept.schema.field("c4999").metadata[b"PARQUET:field_id"] == b"4999"  # ArrowScan maps by it
    by_name = _parquet(pa.table({"a": [1], "b": [2]}))
    named = preview_reads.data_prefix(
        by_name, DATA, preview_reads.Wanted(frozenset(), frozenset({"b"})), 1 << 30, 1, lambda: None
    )
    assert named.whole and named.rows == 1
