"""Iceberg Java's expiry rules (``RemoveSnapshots``) as ``plan_expiry`` applies them."""

from __future__ import annotations

from typing import Any

from pyiceberg.table.metadata import TableMetadataUtil

from irc_proxy.handling.maintenance.retention import DEFAULT_MAX_SNAPSHOT_AGE_MS, Retention, plan_expiry

DAY = 24 * 3600 * 1000
NOW = 100 * DAY


def metadata(refs: dict[str, Any], properties: dict[str, str] | None = None, chain: int = 6) -> Any:
    """Snapshots 1..chain, each a day after its parent (snapshot i at day 90 + i), plus an unreferenced 99."""
    snapshots = [
        {
            "snapshot-id": i,
            "parent-snapshot-id": i - 1 if i > 1 else None,
            "timestamp-ms": (90 + i) * DAY,
            "manifest-list": f"file:///w/t/metadata/snap-{i}.avro",
            "sequence-number": i,
            "summary": {"operation": "append"},
        }
        for i in range(1, chain + 1)
    ]
    snapshots.append(
        {
            "snapshot-id": 99,
            "timestamp-ms": 99 * DAY,
            "manifest-list": "file:///w/t/metadata/snap-99.avro",
            "sequence-number": 99,
            "summary": {"operation": "append"},
        }
    )
    return TableMetadataUtil.parse_obj(
        {
            "format-version": 2,
            "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "file:///w/t",
            "last-sequence-number": 99,
            "last-updated-ms": NOW,
            "last-column-id": 1,
            "current-schema-id": 0,
            "schemas": [
                {
                    "type": "struct",
                    "schema-id": 0,
                    "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}],
                }
            ],
            "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999,
            "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": properties or {},
            "current-snapshot-id": chain,
            "snapshots": snapshots,
            "refs": refs,
        }
    )


def test_defaults_keep_five_days_of_main_and_young_unreferenced_snapshots() -> None:
    plan = plan_expiry(metadata({"main": {"snapshot-id": 6, "type": "branch"}}), NOW)
    assert Retention().max_snapshot_age_ms == DEFAULT_MAX_SNAPSHOT_AGE_MS
    # Day 91..96; older than day 95 goes, 99 is unreferenced and young.
    assert plan.snapshot_ids == (1, 2, 3, 4) and plan.refs == ()


def test_min_snapshots_to_keep_and_ref_overrides_win_over_age() -> None:
    refs = {
        "main": {"snapshot-id": 6, "type": "branch", "min-snapshots-to-keep": 3},
        "old-tag": {"snapshot-id": 1, "type": "tag", "max-ref-age-ms": DAY},
        "kept-tag": {"snapshot-id": 2, "type": "tag"},
    }
    plan = plan_expiry(metadata(refs, {"history.expire.max-snapshot-age-ms": "1"}), NOW)
    assert plan.refs == ("old-tag",)
    assert set(plan.snapshot_ids) == {1, 3, 99}  # main keeps 6, 5, 4; the tag keeps 2
    assert plan.kept_refs == {"main": 6, "kept-tag": 2}


def test_table_max_ref_age_removes_old_branches_but_never_main() -> None:
    refs = {"main": {"snapshot-id": 1, "type": "branch"}, "dev": {"snapshot-id": 2, "type": "branch"}}
    plan = plan_expiry(metadata(refs, {"history.expire.max-ref-age-ms": str(DAY)}, chain=2), NOW)
    assert plan.refs == ("dev",) and 1 not in plan.snapshot_ids and 2 in plan.snapshot_ids
