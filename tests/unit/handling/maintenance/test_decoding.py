"""``decoding``: what a batch of dictionary columns (nested ones too) decodes to is measured without decoding it,
and it is decoded in slices of at most the budget, with the same rows."""

from __future__ import annotations

import pyarrow as pa

from irc_proxy.handling.maintenance.decoding import batch_decoded_size, decoded_bound, decoded_size, decoded_slices

VALUE = "a" * 10_000
ROWS = 100


def bomb() -> pa.RecordBatch:
    """A top-level, a struct's and a list's dictionary columns, each row naming one 10 KB value."""
    plain = pa.DictionaryArray.from_arrays(pa.array([0] * ROWS, pa.int32()), pa.array([VALUE]))
    struct = pa.StructArray.from_arrays([plain], names=["s"])
    offsets = pa.array(list(range(ROWS + 1)), pa.int32())
    listed = pa.ListArray.from_arrays(offsets, plain)
    return pa.RecordBatch.from_arrays([plain, struct, listed], names=["d", "t", "l"])


def test_the_decoded_size_is_measured_without_decoding_and_slices_keep_to_the_budget() -> None:
    batch = bomb()
    assert batch.nbytes < 40_000  # three 10 KB dictionaries and their indices
    assert batch_decoded_size(batch) >= 3 * ROWS * len(VALUE)
    budget = 100_000
    slices = list(decoded_slices(batch, budget))
    assert len(slices) > 1
    assert all(piece.nbytes <= budget or piece.num_rows == 1 for piece in slices)
    assert not any(pa.types.is_dictionary(field.type) for piece in slices for field in piece.schema)
    whole = pa.Table.from_batches(slices)
    assert whole.num_rows == ROWS
    assert whole.column("t").to_pylist()[-1] == {"s": VALUE}
    assert whole.column("l").to_pylist()[0] == [VALUE]


def test_a_batch_within_the_budget_is_decoded_whole_and_a_plain_one_passes_as_it_is() -> None:
    batch = bomb().slice(0, 2)
    assert [piece.num_rows for piece in decoded_slices(batch, 1 << 20)] == [2]
    plain = pa.RecordBatch.from_arrays([pa.array([1, 2])], names=["n"])
    assert list(decoded_slices(plain, 1 << 20)) == [plain]


def test_the_bound_is_never_below_the_decoded_size() -> None:
    """``decoded_slices`` measures exactly only when the cheap bound passes the budget: it must never be lower."""
    batch = bomb()
    for start, length in ((0, ROWS), (0, 1), (37, 20), (ROWS - 1, 1)):
        part = batch.slice(start, length)
        for column in part.columns:
            assert decoded_bound(column) >= decoded_size(column)


def test_a_slice_of_a_map_column_is_measured_by_its_own_entries() -> None:
    """Hostile review: ``MapArray.keys`` and ``.items`` are the whole batch's, whatever the slice. Measured by
    them, every slice of a map column weighed the whole batch, so ``decoded_slices`` halved a batch down to single
    rows: a 4.9 KB file of 20,000 rows of one dictionary-encoded 1 KB map value (20.5 MB decoded) took 20,000
    pieces and 18.5 s of CPU at a 4 MB budget, the time growing with the square of the rows (65,536 to a batch)."""
    value = pa.array(["v" * 1_000]).dictionary_encode()
    key = pa.array(["k"]).dictionary_encode()
    rows = 20_000
    indices = pa.array([0] * rows, pa.int32())
    maps = pa.MapArray.from_arrays(
        pa.array(range(rows + 1), pa.int32()),
        pa.DictionaryArray.from_arrays(indices, key.dictionary),
        pa.DictionaryArray.from_arrays(indices, value.dictionary),
    )
    batch = pa.record_batch([maps], names=["m"])
    one = batch.slice(5, 1)
    assert decoded_size(one.column(0)) < 2_000 and decoded_bound(one.column(0)) < 4_000
    assert decoded_bound(batch.column(0)) >= decoded_size(batch.column(0)) > 20_000_000
    pieces = list(decoded_slices(batch, 4 * 1024**2))
    assert sum(piece.num_rows for piece in pieces) == rows
    assert len(pieces) <= 16, len(pieces)
    assert pa.Table.from_batches(pieces).column("m").to_pylist()[7] == [("k", "v" * 1_000)]
