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
