"""What the preview decodes of one data file and its deletes, bounded by what they decode to, not their bytes.

A file's bytes are bounded by ``server.ui_preview_max_bytes``, but Parquet compresses and dictionary-encodes:
a 300-byte file can hold 1,000 rows of one 1 MB string (1 GB decoded, measured: 1.7 GB of RSS), and a
deletion vector of a few hundred bytes can name four billion positions (which pyiceberg would turn into a
Python list). So the preview decodes a data file in small batches, counting what the batches decode to, and
keeps only the first rows that fit in ``max_decoded`` bytes (a file that fits whole is read as it is);
a single column chunk declaring more than that is not decoded at all. Deletes are read only for the rows
kept: a position delete file is refused when its declared rows could not fit, and only its positions for
this data file below the rows kept are taken (one linear pass, whatever the number of files it names); a
deletion vector's bitmap is intersected with those rows before a position is listed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.manifest import DataFile, FileFormat
from pyiceberg.table.puffin import PuffinFile
from pyroaring import BitMap

from irc_proxy.errors import BadRequest

MAX_BATCH_ROWS = 1024
"""Rows decoded at a time at most while measuring a data file (fewer when its row groups are large)."""
POSITION_BYTES = 16
"""What one row of a position delete file costs decoded, at most (an int64 position, a dictionary index)."""
DV_BLOB = "deletion-vector-v1"
REFERENCED = "referenced-data-file"


class TooCostly(BadRequest):
    """A file decodes to more than the preview's budget; its rows are not shown, and the page says why."""


def _decoded_size(batch: pa.RecordBatch) -> int:
    """What the batch costs once pyiceberg casts it to the table's types (dictionaries expanded)."""
    size = 0
    for column in batch.columns:
        size += column.dictionary_decode().nbytes if pa.types.is_dictionary(column.type) else column.nbytes
    return size


def first_live(deleted: BitMap, rows: int, wanted: int) -> list[int]:
    """The first ``wanted`` of positions ``0..rows-1`` that are not ``deleted`` (compact, whatever their number)."""
    live = BitMap()
    live.add_range(0, rows)
    return list(islice(live - deleted, wanted))


@dataclass(frozen=True)
class Prefix:
    """A data file as the preview reads it: ``data`` (the original bytes when the whole file was measured and
    fits, else a Parquet file of its first ``rows``), and ``over_budget``: it stopped at the decoded budget."""

    data: bytes
    rows: int
    whole: bool
    over_budget: bool


@dataclass(frozen=True)
class Wanted:
    """The top-level columns the preview shows: their field ids, and the names a file without ids may use."""

    field_ids: frozenset[int]
    names: frozenset[str]


def _field_id(field: pa.Field) -> int | None:
    raw = (field.metadata or {}).get(b"PARQUET:field_id")
    return int(raw) if raw is not None and raw.isdigit() else None


def _chosen(schema: pa.Schema, wanted: Wanted) -> list[str]:
    """The file's top-level columns the preview reads (by field id; by name in a file written without ids)."""
    if any(_field_id(field) is not None for field in schema):
        return [field.name for field in schema if _field_id(field) in wanted.field_ids]
    return [field.name for field in schema if field.name in wanted.names]


def data_prefix(
    data: bytes, location: str, wanted: Wanted, max_decoded: int, enough: int, check: Callable[[], None]
) -> Prefix:
    """The first rows of a data file's ``wanted`` columns, at most ``enough`` and at most what decodes within
    ``max_decoded`` bytes (a 20,000-column file is not decoded whole for 50 columns).

    A row group is decoded in batches small enough that one batch cannot pass the budget by much: a value is
    no larger than its column chunk (a page, or its dictionary), so a batch of ``n`` rows decodes to at most
    ``n`` times the group's declared uncompressed size. Raises TooCostly when not even the first row fits."""
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        metadata = parquet.metadata
        columns = _chosen(parquet.schema_arrow, wanted)
        leaves = [
            i
            for i in range(metadata.num_columns)
            if any((path := metadata.schema.column(i).path) == name or path.startswith(name + ".") for name in columns)
        ]
        kept: list[pa.RecordBatch] = []
        size = rows = 0
        over = False
        for group in range(metadata.num_row_groups):
            check()
            declared = metadata.row_group(group)
            one_row = sum(declared.column(c).total_uncompressed_size for c in leaves)
            if one_row > max_decoded:
                over = True
                break
            batch_rows = max(1, min(MAX_BATCH_ROWS, enough - rows, max_decoded // max(one_row, 1)))
            for batch in parquet.iter_batches(batch_rows, row_groups=[group], columns=columns, use_threads=False):
                check()
                size += _decoded_size(batch)
                if size > max_decoded:
                    over = True
                    break
                kept.append(batch)
                rows += batch.num_rows
                if rows >= enough:
                    break
            if over or rows >= enough:
                break
        whole = not over and rows == metadata.num_rows
    except (OSError, pa.ArrowException) as exc:
        raise BadRequest(f"A data file could not be read ({type(exc).__name__})") from exc
    if whole:
        return Prefix(data, rows, True, False)
    if not rows:
        raise TooCostly(f"the first rows of {location} decode to more than {max_decoded:,} bytes")
    sink = pa.BufferOutputStream()
    chosen = pa.schema([parquet.schema_arrow.field(name) for name in columns])
    pq.write_table(pa.Table.from_batches(kept, chosen), sink, compression="none")
    return Prefix(sink.getvalue().to_pybytes(), rows, False, over)


def deleted_positions(data: bytes, delete: DataFile, data_path: str, rows: int, max_decoded: int) -> BitMap:
    """The positions below ``rows`` that ``delete`` (a position delete file or a deletion vector) deletes from
    the data file at ``data_path``. Raises TooCostly past the budget, BadRequest for a format it cannot read."""
    try:
        if delete.file_format == FileFormat.PUFFIN:
            return _vector_positions(data, data_path, rows)
        if delete.file_format == FileFormat.PARQUET:
            return _parquet_positions(data, data_path, rows, max_decoded)
    except (OSError, ValueError, KeyError, IndexError, pa.ArrowException) as exc:
        raise BadRequest(f"A delete file could not be read ({type(exc).__name__})") from exc
    raise BadRequest(f"The preview cannot apply a {delete.file_format} delete file")


def _parquet_positions(data: bytes, data_path: str, rows: int, max_decoded: int) -> BitMap:
    parquet = pq.ParquetFile(pa.BufferReader(data), read_dictionary=["file_path"])
    metadata = parquet.metadata
    declared = metadata.num_rows
    if declared * POSITION_BYTES > max_decoded:
        raise TooCostly(f"a position delete file declares {declared:,} rows, too many to apply")
    groups = (metadata.row_group(g) for g in range(metadata.num_row_groups))
    if sum(group.total_byte_size for group in groups) > max_decoded:  # one huge path in a tiny dictionary page
        raise TooCostly("a position delete file decodes to more than the preview's budget")
    table = parquet.read(columns=["file_path", "pos"], use_threads=False)
    mine = table.filter(pc.and_(pc.equal(table["file_path"], data_path), pc.less(table["pos"], rows)))
    positions = BitMap()
    for chunk in mine["pos"].chunks:
        positions.update(chunk.to_pylist())
    return positions


def _vector_positions(data: bytes, data_path: str, rows: int) -> BitMap:
    """Key 0's bitmap (positions below 2**32) of this data file's deletion vectors, cut to the rows kept."""
    puffin = PuffinFile(data)
    wanted = BitMap()
    wanted.add_range(0, min(rows, 1 << 32))
    positions = BitMap()
    for blob in puffin.footer.blobs:
        if blob.type != DV_BLOB or blob.properties.get(REFERENCED) != data_path:
            continue
        payload = puffin.get_blob_payload(blob)
        vector = payload[8 : 4 + int.from_bytes(payload[0:4], "big")]
        if int.from_bytes(vector[0:8], "little") and int.from_bytes(vector[8:12], "little") == 0:
            positions |= BitMap.deserialize(vector[12:]) & wanted
    return positions
