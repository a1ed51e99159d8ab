"""The v3 metadata model against real metadata written by Iceberg Java (Spark 3.5.9 + Iceberg 1.10.2).

The files in ``data/spark_v3`` were written by Spark's own ``hadoop`` catalog (no proxy) with the statements
of ``tests/support/spark_v3_reference.py`` (``python -m tests.support.spark_v3_reference DIR`` writes them again):
``mor`` is a partitioned merge-on-read table after inserts, a DELETE and an UPDATE (deletion vectors), a branch
commit and ``rewrite_data_files``; ``upgraded`` is a v2 table with data right after its upgrade to v3, and
``upgraded-then-written`` the same after an append and two deletes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.table.metadata import TableMetadataUtil

from irc_proxy.errors import BadRequest, CommitFailed
from irc_proxy.handling.tables import commits
from irc_proxy.handling.tables.format_v3 import ServedTableMetadata, TableMetadataV3, as_served

DATA = Path(__file__).parent / "data" / "spark_v3"
FILES = sorted(DATA.glob("*.metadata.json"))


def normalised(document: dict[str, Any]) -> dict[str, Any]:
    """What pyiceberg's models write differently from Java without changing the meaning (also for v1/v2):
    an empty ``identifier-field-ids`` list is written, a ``current-snapshot-id`` of -1 is left out."""
    copy = json.loads(json.dumps(document))
    for schema in copy["schemas"]:
        schema.setdefault("identifier-field-ids", [])
    if copy.get("current-snapshot-id") == -1:
        del copy["current-snapshot-id"]
    return copy


@pytest.mark.parametrize("path", FILES, ids=[p.name.split(".")[0] for p in FILES])
def test_java_v3_metadata_round_trips_field_for_field(path: Path) -> None:
    written_by_java = json.loads(path.read_text())
    metadata = ServedTableMetadata.model_validate_json(path.read_bytes()).root
    assert isinstance(metadata, TableMetadataV3)
    ours = metadata.model_dump_json()
    assert json.loads(ours) == normalised(written_by_java)
    assert ServedTableMetadata.model_validate_json(ours).root == metadata
    assert TableMetadataUtil.parse_raw(ours).next_row_id == written_by_java["next-row-id"]  # type: ignore[union-attr]  # pyiceberg clients


def load(name: str) -> TableMetadataV3:
    metadata = ServedTableMetadata.model_validate_json((DATA / f"{name}.metadata.json").read_bytes()).root
    assert isinstance(metadata, TableMetadataV3)
    return metadata


def add_snapshot(metadata: TableMetadataV3, first_row_id: int, added_rows: int) -> list[Any]:
    current = metadata.current_snapshot()
    assert current is not None
    snapshot = {
        "snapshot-id": 4242,
        "parent-snapshot-id": current.snapshot_id,
        "sequence-number": metadata.last_sequence_number + 1,
        "timestamp-ms": metadata.last_updated_ms + 1,
        "manifest-list": f"{metadata.location}/metadata/snap-4242.avro",
        "summary": {"operation": "append"},
        "schema-id": metadata.current_schema_id,
        "first-row-id": first_row_id,
        "added-rows": added_rows,
    }
    return commits.parse_updates([{"action": "add-snapshot", "snapshot": snapshot}])


def test_an_append_on_javas_table_advances_next_row_id() -> None:
    base = load("mor")
    updated = commits.apply_updates(base, add_snapshot(base, base.next_row_id, 4), "file:///m/v8.metadata.json")
    assert isinstance(updated, TableMetadataV3)
    assert updated.next_row_id == base.next_row_id + 4
    assert json.loads(updated.model_dump_json())["snapshots"][-1]["first-row-id"] == base.next_row_id


def test_a_first_row_id_behind_javas_next_row_id_is_a_conflict() -> None:
    base = load("mor")
    with pytest.raises(CommitFailed, match="first-row-id is behind table next-row-id: 12 < 13"):
        commits.apply_updates(base, add_snapshot(base, base.next_row_id - 1, 1), None)


def test_an_upgraded_table_starts_where_java_starts_it() -> None:
    assert load("upgraded").next_row_id == 0
    v2 = json.loads((DATA / "upgraded.metadata.json").read_text())
    v2.update({"format-version": 2})
    del v2["next-row-id"]
    base = ServedTableMetadata.model_validate(v2).root
    upgrade = commits.parse_updates([{"action": "upgrade-format-version", "format-version": 3}])
    upgraded = commits.apply_updates(base, upgrade, None)
    assert isinstance(upgraded, TableMetadataV3)
    assert upgraded.next_row_id == 0
    assert [s.snapshot_id for s in upgraded.snapshots] == [s.snapshot_id for s in base.snapshots]
    assert json.loads(upgraded.model_dump_json())["snapshots"] == json.loads(base.model_dump_json())["snapshots"]


def test_v3_metadata_without_next_row_id_is_invalid() -> None:
    document = json.loads((DATA / "mor.metadata.json").read_text())
    del document["next-row-id"]
    with pytest.raises(ValueError, match="next-row-id"):
        ServedTableMetadata.model_validate(document)


def test_downgrade_is_refused() -> None:
    downgrade = commits.parse_updates([{"action": "upgrade-format-version", "format-version": 2}])
    with pytest.raises(BadRequest, match="Cannot downgrade v3 table to v2"):
        commits.apply_updates(load("mor"), downgrade, None)


def test_as_served_leaves_v1_and_v2_alone() -> None:
    v2 = json.loads((DATA / "upgraded.metadata.json").read_text())
    v2.update({"format-version": 2})
    base = ServedTableMetadata.model_validate(v2).root
    assert as_served(base) is base
