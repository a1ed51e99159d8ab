"""Reading a rewrite group's data files onto the table's current schema, paying pyiceberg's per-file work once per
file schema and once per buffer of rows instead of once per file.

Why: compaction's inputs are small files by definition. Read one at a time through pyiceberg's ``ArrowScan``, each
file paid ~2.5 ms before its first row: the scan's configuration read from the environment, the conversion of the
file's Arrow schema to an Iceberg schema (and the name mapping, for files without field ids), the column pruning,
and two projections by field id (onto the table's schema, then onto the schema written with field ids), each a walk
of the schema per batch. Warm Spark compacted 1,000 small files in ~1 s where this took ~2.5 s. Files written by
one writer share a schema, so here:

- each file is opened once (its footer read once, for both its byte-array columns and its schema);
- what a file schema needs (its Iceberg schema, the columns to read) is worked out once per distinct Arrow schema
  (field ids included) and partition spec;
- rows of consecutive files with the same schema are gathered, decoded (``decoding.decoded_slices``), up to
  ``COMBINE_BYTES`` and projected together, through pyiceberg's own ``_to_requested_schema``: the projection rules
  (added columns as nulls, promotions, renames by field id, timestamps) stay pyiceberg's.

A file that misses an identity-partitioned column of the table (a file added with its partition only in its path)
takes pyiceberg's whole per-file path: the column's value comes from the file's partition tuple.

Memory: at most ``COMBINE_BYTES`` (or the rewrite's buffer, if smaller) of decoded rows are gathered (each batch
counted with ``FIELD_BYTES`` a field besides its values' bytes: a wide schema's one-row files), plus one
slice of at most the buffer, plus their projected copy, before they reach the output's buffer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io import FileIO
from pyiceberg.io.fileformat import FileFormatFactory
from pyiceberg.io.pyarrow import (
    ArrowScan,
    _to_requested_schema,
    pyarrow_to_schema,
    schema_to_pyarrow,
)
from pyiceberg.manifest import DataFile, FileFormat
from pyiceberg.schema import Schema, prune_columns, sanitize_column_names
from pyiceberg.table import DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE, FileScanTask
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import EMPTY_DICT
from pyiceberg.types import ListType, MapType
from pyiceberg.utils.config import Config

from irc_proxy.handling.maintenance.decoding import byte_array_columns, decoded_slices

COMBINE_BYTES = 16 * 1024**2
"""Decoded rows of consecutive files gathered before one projection: enough for thousands of small files, small
beside the rewrite's buffer (and far from the 2 GiB of a string column's offsets)."""
COMBINE_BATCHES = 4096
"""Batches gathered at most: each costs memory its ``nbytes`` does not show (a writer's files of one row each)."""
FIELD_BYTES = 1024
"""What one field of a gathered batch costs besides its values, counted against ``COMBINE_BYTES``: each file's
batches come with their own schema (a ``Field`` and its field-id metadata a column) and arrays, ~1.1 KB a column
measured, where ``nbytes`` shows a byte or two for a row of booleans. Uncounted, 1,000 one-row files of 1,000
boolean columns (~2 KB of ``nbytes`` each) gathered 1.2 GB."""
SHAPES_KEPT = 64
"""File schemas remembered (a writer could add a million files of a million schemas): past it, forgotten."""


@dataclass(frozen=True)
class _FileShape:
    """What reading files of one Arrow schema needs, worked out once."""

    columns: list[str]
    """The file's top-level columns holding a field of the table's schema."""
    projected: Schema
    """The file's schema pruned to those fields (what ``_to_requested_schema`` projects from)."""
    dictionaries: tuple[str, ...]
    """Its string and binary leaf columns, read as dictionaries (``decoding``)."""
    overhead: int
    """What a batch of these columns costs gathered besides its ``nbytes`` (``FIELD_BYTES`` a field, nested ones
    included)."""


@dataclass
class _Gathered:
    """Decoded rows of consecutive files of one shape, waiting for their projection."""

    shape: _FileShape | None = None
    batches: list[pa.RecordBatch] = field(default_factory=list)
    nbytes: int = 0
    input_bytes: int = 0


class GroupReader:
    """The rows of a group's data files on the table's current schema, with field ids, as the writer wants them.
    Blocking."""

    def __init__(self, metadata: TableMetadata, io: FileIO, buffer_bytes: int) -> None:
        self.metadata, self.io, self.buffer_bytes = metadata, io, buffer_bytes
        self.schema = metadata.schema()
        self.write_schema = sanitize_column_names(self.schema)
        large = schema_to_pyarrow(self.write_schema, include_field_ids=True)
        self.arrow_schema = pa.schema([f.with_type(_narrow(f.type)) for f in large], metadata=large.metadata)
        """What every batch comes as: field ids in its fields' metadata, and the 32-bit offsets a file's string
        column decodes to (what the files rewritten before this module were written with)."""
        self.combine_bytes = min(buffer_bytes, COMBINE_BYTES)
        self._model = FileFormatFactory.get(FileFormat.PARQUET)
        self._name_mapping = metadata.name_mapping()
        downcast = Config().get_bool(DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE)
        self._downcast = downcast if downcast is not None else metadata.format_version <= 2
        self._field_ids = {
            i for i in self.schema.field_ids if not isinstance(self.schema.find_type(i), (MapType, ListType))
        }
        self._shapes: dict[tuple[bytes, int], _FileShape | None] = {}

    def batches(self, files: Sequence[DataFile]) -> Iterator[tuple[pa.RecordBatch, int]]:
        """The files' rows in order, in batches of at most about the buffer once decoded; each with the bytes of
        input (on storage) it stands for."""
        gathered = _Gathered()
        for data_file in files:
            per_row = data_file.file_size_in_bytes / max(data_file.record_count, 1)
            with self.io.new_input(data_file.file_path).open() as source:
                footer = pq.ParquetFile(source)
                shape = self._shape(footer, data_file)
                if shape is None:  # needs the file's partition values: pyiceberg's per-file path
                    yield from self._flush(gathered)
                    for batch in self._scanned(data_file, byte_array_columns(footer)):
                        yield batch, int(per_row * batch.num_rows)
                    continue
                # pre_buffer: a row group's column chunks in coalesced reads (pyiceberg's scan does it too): on an
                # object store, a few ranged GETs per file rather than one per column chunk
                reader = pq.ParquetFile(
                    source, metadata=footer.metadata, read_dictionary=shape.dictionaries, pre_buffer=True
                )
                for batch in _row_group_batches(reader, shape.columns):
                    for piece in decoded_slices(batch.replace_schema_metadata(None), self.buffer_bytes):
                        if gathered.batches and (
                            gathered.shape is not shape
                            or gathered.nbytes + piece.nbytes + shape.overhead > self.combine_bytes
                            or len(gathered.batches) >= COMBINE_BATCHES
                        ):
                            yield from self._flush(gathered)
                        gathered.shape = shape
                        gathered.batches.append(piece)
                        gathered.nbytes += piece.nbytes + shape.overhead
                        gathered.input_bytes += int(per_row * piece.num_rows)
        yield from self._flush(gathered)

    def _shape(self, footer: pq.ParquetFile, data_file: DataFile) -> _FileShape | None:
        physical = footer.schema_arrow
        # The schema's exact bytes, every field's metadata whole: ``to_string`` truncates metadata values (a field
        # id padded with zeros past it) and prints names as they are (a name holding a newline and a field), so
        # two files of different field ids printed alike and the second was read under the first's ids.
        key = (physical.remove_metadata().serialize().to_pybytes(), data_file.spec_id)
        if key not in self._shapes:
            if len(self._shapes) >= SHAPES_KEPT:
                self._shapes.clear()
            file_schema = pyarrow_to_schema(
                physical,
                self._name_mapping,
                downcast_ns_timestamp_to_us=self._downcast,
                format_version=self.metadata.format_version,
            )
            missing = self.schema.field_ids - file_schema.field_ids
            spec = self.metadata.specs()[data_file.spec_id]
            from_partition = any(
                isinstance(p.transform, IdentityTransform) for i in missing for p in spec.fields_by_source_id(i)
            )
            projected = prune_columns(file_schema, self._field_ids, select_full_types=False)
            columns = [c.name for c in projected.columns]
            chosen = set(columns)
            overhead = FIELD_BYTES * sum(_field_count(f.type) for f in physical if f.name in chosen)
            self._shapes[key] = (
                None if from_partition else _FileShape(columns, projected, byte_array_columns(footer), overhead)
            )
        return self._shapes[key]

    def _flush(self, gathered: _Gathered) -> Iterator[tuple[pa.RecordBatch, int]]:
        batches, shape, input_bytes = gathered.batches, gathered.shape, gathered.input_bytes
        gathered.shape, gathered.batches, gathered.nbytes, gathered.input_bytes = None, [], 0, 0
        if not batches or shape is None:
            return
        rows = batches[0] if len(batches) == 1 else pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
        on_table = _to_requested_schema(
            self.schema,
            shape.projected,
            rows,
            downcast_ns_timestamp_to_us=self._downcast,
            projected_missing_fields=EMPTY_DICT,
            allow_timestamp_tz_mismatch=True,
        )
        yield self._for_writer(on_table), input_bytes

    def _scanned(self, data_file: DataFile, dictionaries: tuple[str, ...]) -> Iterator[pa.RecordBatch]:
        scan = ArrowScan(self.metadata, self.io, self.schema, AlwaysTrue(), dictionary_columns=dictionaries)
        for batch in scan._record_batches_from_scan_tasks_and_deletes([FileScanTask(data_file)], {}):
            for piece in decoded_slices(batch, self.buffer_bytes):
                yield self._for_writer(piece)

    def _for_writer(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` on the written schema, as ``arrow_schema``: a string column a file lacks comes from pyiceberg
        as ``large_string`` nulls where one read from a file (as a dictionary) decodes to ``string``, and an
        output's batches must share one schema."""
        written = _to_requested_schema(
            self.write_schema, self.schema, batch, include_field_ids=True, format_model=self._model
        )
        return written if written.schema.equals(self.arrow_schema) else written.cast(self.arrow_schema)


def _row_group_batches(reader: pq.ParquetFile, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """``reader``'s batches of ``columns``, one row group at a time: read across row groups, a string column nested
    in a list or map and read as a dictionary fails ("Nested data conversions not implemented for chunked array
    outputs": each row group has its own dictionary), which failed the compaction of any file of two row groups
    with a ``list<string>`` column."""
    for index in range(reader.num_row_groups):
        yield from reader.iter_batches(row_groups=[index], columns=columns, use_threads=False)


def _field_count(kind: pa.DataType) -> int:
    """Fields a column of type ``kind`` is made of, itself and its nested ones."""
    return 1 + sum(_field_count(kind.field(i).type) for i in range(kind.num_fields))


def _narrow(kind: pa.DataType) -> pa.DataType:
    """``kind`` with 32-bit offsets for its strings, binaries and lists (a batch is at most the buffer, within
    reach of them), each field's metadata kept."""
    if pa.types.is_large_string(kind):
        return pa.string()
    if pa.types.is_large_binary(kind):
        return pa.binary()
    if pa.types.is_struct(kind):
        assert isinstance(kind, pa.StructType)
        return pa.struct([field.with_type(_narrow(field.type)) for field in kind])
    if pa.types.is_map(kind):
        assert isinstance(kind, pa.MapType)
        key, item = kind.key_field, kind.item_field
        return pa.map_(key.with_type(_narrow(key.type)), item.with_type(_narrow(item.type)))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        assert isinstance(kind, pa.ListType | pa.LargeListType)
        return pa.list_(kind.value_field.with_type(_narrow(kind.value_type)))
    return kind
