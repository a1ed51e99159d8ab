"""Folded property updates give exactly what pyiceberg gives one by one, in time linear in the commit."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import RemovePropertiesUpdate, SetLocationUpdate, SetPropertiesUpdate, TableUpdate
from pyiceberg.types import LongType, NestedField

from irc_proxy.errors import BadRequest
from irc_proxy.handling.tables import commits
from irc_proxy.handling.tables.property_runs import coalesce_property_runs

KEYS = ["a", "b", "c", "d"]


def _base(properties: dict[str, str]) -> TableMetadata:
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    return new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "file:///w/t", properties)


def _one_by_one(properties: dict[str, str], updates: list[TableUpdate]) -> dict[str, str] | None:
    current = dict(properties)
    for update in updates:
        if isinstance(update, SetPropertiesUpdate):
            current.update(update.updates)
        elif isinstance(update, RemovePropertiesUpdate):
            for key in update.removals:
                if key not in current:
                    return None  # pyiceberg raises KeyError
                del current[key]
    return current


update = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["1", "2"]), max_size=3).map(
        lambda u: SetPropertiesUpdate(updates=u)
    ),
    st.lists(st.sampled_from(KEYS), max_size=2).map(lambda r: RemovePropertiesUpdate(removals=r)),
    st.just(SetLocationUpdate(location="file:///w/t2")),
)


@settings(max_examples=300, deadline=None)
@given(
    properties=st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["0", "1"])),
    updates=st.lists(update, max_size=8),
)
def test_folded_runs_give_the_same_properties_in_the_same_order(
    properties: dict[str, str], updates: list[TableUpdate]
) -> None:
    expected = _one_by_one(properties, updates)
    try:
        folded = coalesce_property_runs(properties, updates)
    except BadRequest:
        assert expected is None
        return
    assert expected is not None
    assert list(_one_by_one(properties, folded).items()) == list(expected.items())  # type: ignore[union-attr]
    changed = any(getattr(u, "updates", None) or getattr(u, "removals", None) for u in updates)
    assert changed == any(getattr(u, "updates", None) or getattr(u, "removals", None) for u in folded)


def test_set_then_remove_still_records_a_change() -> None:
    base = _base({})
    updates: list[TableUpdate] = [SetPropertiesUpdate(updates={"a": "1"}), RemovePropertiesUpdate(removals=["a"])]
    applied = commits.apply_updates(base, updates, "file:///w/t/metadata/00000.json")
    assert applied.properties == {} and applied != base


def _apply_seconds(count: int) -> float:
    base = _base({})
    updates = commits.parse_updates(
        [{"action": "set-properties", "updates": {f"key-{i}": "v"}} for i in range(count)]
        + [{"action": "remove-properties", "removals": [f"key-{i}"]} for i in range(0, count, 2)]
    )
    started = time.thread_time()
    applied = commits.apply_updates(base, updates, None)
    took = time.thread_time() - started
    assert len(applied.properties) == count // 2
    return took


def test_applying_ten_times_the_property_updates_takes_far_less_than_a_hundred_times_as_long() -> None:
    # CPU time of this thread (not wall time): other processes on a busy machine do not count.
    small = min(_apply_seconds(1_000) for _ in range(3))
    large = min(_apply_seconds(10_000) for _ in range(3))
    assert large < 25 * small, f"1k updates: {small:.4f}s, 10k updates: {large:.4f}s (quadratic would be ~100x)"


def _add_schema_seconds(count: int) -> float:
    base = _base({})
    raw = [
        {"action": "add-schema", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": False},
            {"id": 2 + i, "name": f"c{i}", "type": "long", "required": False},
        ]}}
        for i in range(count)
    ]  # fmt: skip
    updates = commits.parse_updates(raw)
    started = time.thread_time()
    applied = commits.apply_updates(base, updates, None)
    took = time.thread_time() - started
    assert len(applied.schemas) == count + 1
    return took


def test_adding_ten_times_the_schemas_takes_far_less_than_a_hundred_times_as_long() -> None:
    small = min(_add_schema_seconds(300) for _ in range(3))
    large = min(_add_schema_seconds(3_000) for _ in range(2))
    assert large < 40 * small, f"300 schemas: {small:.4f}s, 3000 schemas: {large:.4f}s (quadratic would be ~100x)"
