"""What the console computes from metadata: flattened schemas, schema history, view version diffs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, ListType, LongType, MapType, NestedField, StringType, StructType
from pyiceberg.view.metadata import ViewMetadata

from irc_proxy.ui import models

NESTED = Schema(
    NestedField(1, "id", LongType(), required=True, doc="the key"),
    NestedField(2, "point", StructType(NestedField(3, "x", IntegerType(), required=False)), required=False),
    NestedField(4, "tags", ListType(5, StringType(), element_required=False), required=False),
    NestedField(6, "attrs", MapType(7, StringType(), 8, LongType(), value_required=False), required=False),
    schema_id=0,
)


def test_nested_fields_are_expanded_depth_first_with_dotted_paths() -> None:
    rows = list(models.iter_field_rows(NESTED))
    assert [(r.field_id, r.path, r.type, r.depth) for r in rows] == [
        (1, "id", "long", 0),
        (2, "point", "struct", 0),
        (3, "point.x", "int", 1),
        (4, "tags", "list", 0),
        (5, "tags.element", "string", 1),
        (6, "attrs", "map", 0),
        (7, "attrs.key", "string", 1),
        (8, "attrs.value", "long", 1),
    ]
    assert rows[0].required and rows[0].doc == "the key"


def test_schema_history_names_added_removed_renamed_and_retyped_fields() -> None:
    first = Schema(NestedField(1, "id", IntegerType(), required=True), NestedField(2, "a", StringType()), schema_id=0)
    second = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "b", StringType()),
        NestedField(3, "c", StringType()),
        schema_id=1,
    )
    third = Schema(NestedField(1, "id", LongType(), required=True), schema_id=2)
    history = models.schema_history([third, first, second])
    assert [h.schema_id for h in history] == [0, 1, 2]
    assert history[0].added == ["a", "id"] and not history[0].removed
    assert history[1].added == ["c"]
    assert history[1].changed == ["id: type int -> long", "b: renamed a -> b"]
    assert history[2].removed == ["b", "c"] and not history[2].added


def view(*sqls: str) -> ViewMetadata:
    return ViewMetadata.model_validate(
        {
            "view-uuid": "4a1d2c7e-6a15-4e4b-9f3a-2f6f1f0c7a11",
            "format-version": 1,
            "location": "file:///v",
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "current-version-id": len(sqls),
            "versions": [
                {
                    "version-id": i + 1,
                    "schema-id": 0,
                    "timestamp-ms": 1_700_000_000_000 + i,
                    "summary": {},
                    "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
                    "default-namespace": ["db"],
                }
                for i, sql in enumerate(sqls)
            ],
            "version-log": [],
        }
    )


def test_a_view_diff_marks_removed_and_added_lines_per_dialect() -> None:
    diff = models.version_diff(view("select a\nfrom t", "select a, b\nfrom t"), 1, 2)
    assert [(line.kind, line.text) for line in diff["spark"]] == [
        ("removed", "select a"),
        ("added", "select a, b"),
        ("same", "from t"),
    ]
    with pytest.raises(KeyError):
        models.version_diff(view("select 1"), 1, 7)


def test_a_very_long_view_is_not_compared_line_by_line() -> None:
    long_sql = "\n".join(f"select {i}" for i in range(models.MAX_DIFF_LINES))
    diff = models.version_diff(view(long_sql, long_sql + "\nunion all select 0"), 1, 2)
    assert len(diff["spark"]) == 1 and "too long to compare" in diff["spark"][0].text


def test_moments_are_utc_seconds_and_never_raise() -> None:
    assert models.moment(1_700_000_000_123) == "2023-11-14T22:13:20Z"
    assert models.moment(-5) == "1970-01-01T00:00:00Z"
    assert models.moment(10**20).startswith("9999-12-31")


def test_schema_history_names_doc_default_and_requiredness_changes() -> None:
    first = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "a", StringType()), schema_id=0)
    second = Schema(
        NestedField(1, "id", LongType(), required=True, doc="the key"),
        NestedField(2, "a", StringType(), initial_default="x", write_default="y"),
        schema_id=1,
    )
    third = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "a", StringType()), schema_id=2)
    history = models.schema_history([first, second, third])
    assert history[1].changed == [
        "id: optional -> required, doc set to 'the key'",
        "a: initial default set to 'x', write default set to 'y'",
    ]
    assert history[2].changed == [
        "id: doc removed (was 'the key')",
        "a: initial default removed (was 'x'), write default removed (was 'y')",
    ]


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (7 * 86_400, "7 days"),
        (3 * 3600, "3 hours"),
        (86_400 + 7200 + 5, "1 day 2 hours"),
        (1, "1 second"),
        (0, "no time"),
    ],
)
def test_durations_are_said_in_their_two_largest_units(seconds: int, said: str) -> None:
    assert models.duration(timedelta(seconds=seconds)) == said


def test_a_metadata_file_is_named_by_its_last_part() -> None:
    assert models.file_name("s3://b/t/metadata/00001-x.metadata.json") == "00001-x.metadata.json"
    assert models.file_name("plain") == "plain"
