"""View commit semantics, as Iceberg Java's ViewMetadata.Builder defines them."""

from __future__ import annotations

from typing import Any

import pytest
from pyiceberg.view.metadata import ViewMetadata

from irc_proxy.errors import BadRequest, CommitFailed
from irc_proxy.handling.views import view_commits as vc

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "type": "int", "required": False}]}
OTHER_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "y", "type": "long", "required": False}]}


def version(sql: str, *dialects: str, schema_id: int = -1, version_id: int = 1) -> dict[str, Any]:
    return {
        "version-id": version_id,
        "schema-id": schema_id,
        "timestamp-ms": 1,
        "summary": {},
        "representations": [{"type": "sql", "sql": sql, "dialect": d} for d in (dialects or ("spark",))],
        "default-namespace": ["db"],
    }


def updates(*raw: dict[str, Any]) -> list[vc.ViewUpdate]:
    return vc.parse_view_updates(list(raw))


def create(properties: dict[str, str] | None = None) -> ViewMetadata:
    return vc.apply_view_updates(
        None,
        updates(
            {"action": "assign-uuid", "uuid": "u-1"},
            {"action": "set-location", "location": "file:///v"},
            {"action": "set-properties", "updates": properties or {}},
            {"action": "add-schema", "schema": SCHEMA},
            {"action": "add-view-version", "view-version": version("select 1")},
            {"action": "set-current-view-version", "view-version-id": -1},
        ),
    )


def replace(base: ViewMetadata, sql: str, *dialects: str, schema: dict[str, Any] = SCHEMA) -> ViewMetadata:
    return vc.apply_view_updates(
        base,
        updates(
            {"action": "add-schema", "schema": schema},
            {"action": "add-view-version", "view-version": version(sql, *dialects)},
            {"action": "set-current-view-version", "view-version-id": -1},
        ),
    )


def test_create_assigns_version_one_and_schema_zero() -> None:
    view = create()
    assert view.current_version_id == 1
    assert [s.schema_id for s in view.schemas] == [0]
    assert [e.version_id for e in view.version_log] == [1]


def test_replace_adds_version_and_reuses_identical_schema() -> None:
    view = replace(create(), "select 2")
    assert view.current_version_id == 2
    assert [s.schema_id for s in view.schemas] == [0]
    changed = replace(view, "select 3", schema=OTHER_SCHEMA)
    assert [s.schema_id for s in changed.schemas] == [0, 1]
    assert changed.versions[-1].schema_id == 1


def test_identical_version_reuses_id() -> None:
    view = replace(create(), "select 2")
    again = replace(view, "select 2")
    assert [v.version_id for v in again.versions] == [1, 2]


def test_history_size_expires_oldest_versions() -> None:
    view = create({"version.history.num-entries": "2"})
    for i in range(2, 6):
        view = replace(view, f"select {i}")
    assert [v.version_id for v in view.versions] == [4, 5]
    assert [e.version_id for e in view.version_log] == [4, 5]


def test_dropping_a_dialect_needs_permission() -> None:
    view = replace(create(), "select 1", "spark", "trino")
    with pytest.raises(BadRequest, match="loss of view dialects"):
        replace(view, "select 2", "spark")
    allowed = vc.apply_view_updates(
        view, updates({"action": "set-properties", "updates": {"replace.drop-dialect.allowed": "true"}})
    )
    assert replace(allowed, "select 2", "spark").current_version_id == 3


def test_duplicate_dialect_in_one_version_is_rejected() -> None:
    with pytest.raises(BadRequest, match="multiple queries for dialect spark"):
        replace(create(), "select 2", "spark", "SPARK")


def test_last_added_without_an_added_version_is_rejected() -> None:
    with pytest.raises(BadRequest):
        vc.apply_view_updates(create(), updates({"action": "set-current-view-version", "view-version-id": -1}))


def test_assert_view_uuid() -> None:
    view = create()
    vc.check_view_requirements(vc.parse_view_requirements([{"type": "assert-view-uuid", "uuid": "u-1"}]), view)
    with pytest.raises(CommitFailed, match="view UUID does not match"):
        vc.check_view_requirements(vc.parse_view_requirements([{"type": "assert-view-uuid", "uuid": "u-2"}]), view)


@pytest.mark.parametrize(
    "raw",
    [[{"action": "nope"}], [{"action": "set-properties", "updates": {"a": 1}}], ["x"], {"action": "set-location"}],
)
def test_bad_updates_are_bad_requests(raw: Any) -> None:
    with pytest.raises(BadRequest):
        vc.parse_view_updates(raw)
