"""Reading a writer's data files for a rewrite without decoding more than the rewrite's buffer at once.

Parquet dictionary-encodes: a file of a few hundred bytes can hold 300 rows of one 1 MB string, 300 MB once
decoded, and a scan decodes a whole batch (up to 131,072 rows) at once. Measured before this module: a
compaction of five such files (1.5 KB on storage) took the server's peak memory up by 1.7 GB; a few thousand
rows per file would have killed it, and with it every replica that took the run over after it. So a rewrite
reads every string and binary column of a file (nested ones too) as dictionary arrays, which stay as small as
the file; measures what a batch decodes to without decoding it; and decodes it in row slices of at most the
buffer (a single row is decoded whatever its size: its values are no larger than the dictionary page they are
in).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


class _DictionaryNotice(logging.Filter):
    """pyiceberg warns for each dictionary column of each file it reads as one ("Iceberg does not have a
    dictionary type"): here that is asked for, so the warning would fill the log with one line per file."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Iceberg does not have a dictionary type")


logging.getLogger("pyiceberg.io.pyarrow").addFilter(_DictionaryNotice())

OFFSET_BYTES = 8
"""What one decoded string or binary value costs besides its bytes (its offset), at most."""


def byte_array_columns(footer: pq.ParquetFile) -> tuple[str, ...]:
    """The dotted paths of a Parquet file's string and binary leaf columns (``t.s``, ``l.list.element``), from its
    footer alone."""
    schema = footer.schema
    return tuple(schema.column(i).path for i in range(len(schema)) if schema.column(i).physical_type == "BYTE_ARRAY")


def _entries(array: pa.MapArray) -> tuple[pa.Array, pa.Array]:
    """The keys and items of ``array``'s own rows. ``MapArray.keys`` and ``.items`` are the whole batch's whatever
    the slice (``flatten`` has no kernel for dictionary keys): measured by them, every slice of a map column
    weighed the whole batch and ``decoded_slices`` halved it down to single rows, each measuring it all again
    (20,000 rows of a 1 KB map value: 20,000 pieces, 18.5 s)."""
    offsets = array.offsets
    start = offsets[0].as_py() if len(offsets) else 0
    end = offsets[-1].as_py() if len(offsets) else 0
    return array.keys.slice(start, end - start), array.items.slice(start, end - start)


def decoded_size(array: pa.Array) -> int:
    """What ``array`` takes once its dictionaries are decoded, computed without decoding them."""
    return _decoded(array, _dictionary_size)


def batch_decoded_size(batch: pa.RecordBatch) -> int:
    return sum(decoded_size(column) for column in batch.columns)


def decoded_bound(array: pa.Array) -> int:
    """At least what ``array`` decodes to (``decoded_size``), from sizes alone: each dictionary index counted as
    the whole dictionary. Three compute kernels less per dictionary column, which a compaction of thousands of
    small files felt; the exact size is measured only when this bound passes the budget."""
    return _decoded(array, _dictionary_bound)


def _dictionary_size(array: pa.DictionaryArray) -> int:
    lengths = pc.binary_length(array.dictionary)
    total = pc.sum(pc.take(lengths, array.indices)).as_py() or 0
    return int(total) + OFFSET_BYTES * len(array)


def _dictionary_bound(array: pa.DictionaryArray) -> int:
    return len(array) * (int(array.dictionary.nbytes) + OFFSET_BYTES)


def _decoded(array: pa.Array, dictionary: Callable[[pa.DictionaryArray], int]) -> int:
    """``array``'s decoded size, each dictionary array (nested ones too) measured by ``dictionary``."""
    kind = array.type
    if pa.types.is_dictionary(kind):
        assert isinstance(array, pa.DictionaryArray)
        return dictionary(array)
    if pa.types.is_struct(kind):
        assert isinstance(array, pa.StructArray)
        return len(array) + sum(_decoded(child, dictionary) for child in array.flatten())
    if pa.types.is_map(kind):
        assert isinstance(array, pa.MapArray)
        keys, items = _entries(array)
        return OFFSET_BYTES * len(array) + _decoded(keys, dictionary) + _decoded(items, dictionary)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        assert isinstance(array, pa.ListArray | pa.LargeListArray)
        return OFFSET_BYTES * len(array) + _decoded(array.flatten(), dictionary)
    return int(array.nbytes)


def _plain(kind: pa.DataType) -> pa.DataType:
    """``kind`` with every dictionary type replaced by its value type."""
    if pa.types.is_dictionary(kind):
        assert isinstance(kind, pa.DictionaryType)
        return _plain(kind.value_type)
    if pa.types.is_struct(kind):
        assert isinstance(kind, pa.StructType)
        return pa.struct([field.with_type(_plain(field.type)) for field in kind])
    if pa.types.is_map(kind):
        assert isinstance(kind, pa.MapType)
        key, item = kind.key_field, kind.item_field
        return pa.map_(key.with_type(_plain(key.type)), item.with_type(_plain(item.type)))
    if pa.types.is_list(kind):
        assert isinstance(kind, pa.ListType)
        return pa.list_(kind.value_field.with_type(_plain(kind.value_type)))
    if pa.types.is_large_list(kind):
        assert isinstance(kind, pa.LargeListType)
        return pa.large_list(kind.value_field.with_type(_plain(kind.value_type)))
    return kind


def decoded_slices(batch: pa.RecordBatch, max_bytes: int) -> Iterator[pa.RecordBatch]:
    """``batch`` decoded (no dictionary left), in row slices that each decode to at most ``max_bytes`` (a
    single row whatever it takes)."""
    if (
        batch.num_rows > 1
        and sum(decoded_bound(column) for column in batch.columns) > max_bytes
        and batch_decoded_size(batch) > max_bytes
    ):
        half = batch.num_rows // 2
        yield from decoded_slices(batch.slice(0, half), max_bytes)
        yield from decoded_slices(batch.slice(half), max_bytes)
        return
    schema = pa.schema([field.with_type(_plain(field.type)) for field in batch.schema], metadata=batch.schema.metadata)
    yield batch if schema.equals(batch.schema) else batch.cast(schema)
