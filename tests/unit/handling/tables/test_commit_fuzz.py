"""Property-based: whatever JSON a client sends as a commit, parsing and applying it against real
table metadata either works or raises a domain error that the HTTP layer answers with a 4xx."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from irc_proxy.errors import CatalogError
from irc_proxy.handling.tables import commits
from irc_proxy.http.errors import classify

LOCATION = "file:///warehouse/db/t"
ACTIONS = [
    "assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema", "add-spec", "set-default-spec",
    "add-sort-order", "set-default-sort-order", "add-snapshot", "set-snapshot-ref", "remove-snapshots",
    "remove-snapshot-ref", "set-location", "set-properties", "remove-properties", "set-statistics",
    "remove-statistics", "set-partition-statistics", "remove-partition-statistics", "remove-partition-specs",
    "remove-schemas", "add-encryption-key", "nonsense",
]  # fmt: skip
REQUIREMENTS = [
    "assert-create", "assert-table-uuid", "assert-ref-snapshot-id", "assert-last-assigned-field-id",
    "assert-current-schema-id", "assert-last-assigned-partition-id", "assert-default-spec-id",
    "assert-default-sort-order-id", "assert-nothing",
]  # fmt: skip
TYPES = [
    "long", "string", "decimal(999999999999,2)", "decimal(10,2)", "decimal(-1,2)", "fixed[-1]", "fixed[4]",
    "timestamp_ns", "blob", "", "list", {"type": "list"}, {"type": "map", "key-id": 5}, {"type": "struct"},
]  # fmt: skip
TRANSFORMS = ["identity", "bucket[-1]", "bucket[0]", "bucket[16]", "truncate[abc]", "truncate[4]", "year",
              "void", "zorder", "bucket[99999999999999999999999]", "", "bucket["]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**63, -(2**63) - 1, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
junk = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)  # fmt: skip
ids = st.one_of(st.integers(min_value=-2, max_value=3), st.just(10**30), junk)
field = st.fixed_dictionaries(
    {"id": ids, "name": st.one_of(st.text(max_size=4), junk), "type": st.one_of(st.sampled_from(TYPES), junk),
     "required": st.one_of(st.booleans(), junk)}
)  # fmt: skip
schema = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("struct"), "schema-id": ids, "fields": st.lists(field, max_size=3)},
        optional={"identifier-field-ids": st.lists(ids, max_size=2)},
    ),
    junk,
)
spec = st.one_of(
    st.fixed_dictionaries(
        {
            "spec-id": ids,
            "fields": st.lists(
                st.fixed_dictionaries(
                    {"source-id": ids, "field-id": st.one_of(st.integers(999, 1002), junk), "name": st.text(max_size=3),
                     "transform": st.one_of(st.sampled_from(TRANSFORMS), junk)}
                ),
                max_size=2,
            ),
        }
    ),
    junk,
)  # fmt: skip
sort_order = st.fixed_dictionaries(
    {
        "order-id": ids,
        "fields": st.lists(
            st.fixed_dictionaries(
                {"source-id": ids, "transform": st.one_of(st.sampled_from(TRANSFORMS), junk),
                 "direction": st.sampled_from(["asc", "desc", "up"]),
                 "null-order": st.sampled_from(["nulls-first", "nulls-last", "?"])}
            ),
            max_size=2,
        ),
    }
)  # fmt: skip
snapshot = st.fixed_dictionaries(
    {"snapshot-id": ids, "timestamp-ms": st.one_of(st.integers(-1, 2**64), junk),
     "manifest-list": st.one_of(st.just(LOCATION + "/metadata/snap.avro"), junk),
     "summary": st.one_of(st.just({"operation": "append"}), st.just({"operation": "explode"}), junk)},
    optional={"parent-snapshot-id": ids, "sequence-number": ids, "schema-id": ids},
)  # fmt: skip
statistics = st.fixed_dictionaries(
    {"snapshot-id": ids, "statistics-path": st.one_of(st.just(LOCATION + "/s.puffin"), junk),
     "file-size-in-bytes": ids, "file-footer-size-in-bytes": ids, "blob-metadata": st.one_of(st.just([]), junk)}
)  # fmt: skip
fields = {
    "schema": schema, "spec": spec, "sort-order": sort_order, "snapshot": snapshot, "statistics": statistics,
    "partition-statistics": statistics,
    "updates": st.one_of(st.dictionaries(st.text(max_size=3), st.text(max_size=3)), junk),
    "removals": st.one_of(st.lists(st.sampled_from(["a", "b", "owner"]), max_size=3), junk),
    "schema-id": ids, "spec-id": ids, "sort-order-id": ids, "snapshot-id": ids,
    "snapshot-ids": st.lists(ids, max_size=3),
    "ref-name": st.one_of(st.sampled_from(["main", "b"]), junk), "type": st.sampled_from(["branch", "tag", "x"]),
    "format-version": st.one_of(st.integers(-1, 4), st.just(99), junk), "uuid": st.one_of(st.uuids().map(str), junk),
    "location": st.one_of(st.just(LOCATION + "2"), junk), "spec-ids": st.lists(ids, max_size=2),
    "schema-ids": st.lists(ids, max_size=2), "last-column-id": ids,
}  # fmt: skip


def _update(action: str) -> st.SearchStrategy[dict[str, Any]]:
    chosen = st.sets(st.sampled_from(sorted(fields)), max_size=4)
    return chosen.flatmap(
        lambda keys: st.fixed_dictionaries({k: fields[k] for k in keys}).map(lambda d: {"action": action, **d})
    )


updates = st.lists(st.one_of(st.sampled_from(ACTIONS).flatmap(_update), junk), max_size=5)
requirements = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"type": st.sampled_from(REQUIREMENTS)},
            optional={k: ids for k in ("current-schema-id", "last-assigned-field-id", "default-spec-id",
                                       "last-assigned-partition-id", "default-sort-order-id", "snapshot-id")}
            | {"ref": st.sampled_from(["main", "b"]), "uuid": st.one_of(st.uuids().map(str), junk)},
        ),
        junk,
    ),
    max_size=3,
)  # fmt: skip


def _base() -> TableMetadata:
    table_schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType()))
    spec = PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=IdentityTransform(), name="id"))
    return new_table_metadata(table_schema, spec, UNSORTED_SORT_ORDER, LOCATION, {"owner": "alice"})


BASE = _base()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(raw_requirements=st.one_of(requirements, junk), raw_updates=st.one_of(updates, junk), create=st.booleans())
def test_any_commit_body_is_applied_or_refused_with_a_4xx(
    raw_requirements: Any, raw_updates: Any, create: bool
) -> None:
    try:
        parsed_requirements = commits.parse_requirements(raw_requirements)
        parsed_updates = commits.parse_updates(raw_updates)
        base = None if create else BASE
        commits.check_requirements(parsed_requirements, base)
        commits.apply_updates(base, parsed_updates, None if create else LOCATION + "/metadata/00000.json")
    except CatalogError as exc:
        status, _ = classify(exc)
        assert 400 <= status < 500, f"{type(exc).__name__} would be a {status}: {exc.message}"
        assert len(exc.message) < 2000
