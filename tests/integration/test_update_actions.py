"""Every table update action real Spark sends (../shared/NOTES.md) applied through the commit endpoint."""

from __future__ import annotations

import httpx

from tests.support.rest import assert_error, commit, create_namespace, create_table, snapshot, table_url


def test_all_update_actions(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    created = create_table(client, (ns_name,), "t", properties={"format-version": "1"})
    url = table_url((ns_name,), "t")
    location = created["metadata"]["location"]
    assert created["metadata"]["format-version"] == 1

    meta = commit(
        client,
        url,
        {"action": "assign-uuid", "uuid": created["metadata"]["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": 2},
    )
    assert meta["format-version"] == 2

    extra = {
        "type": "struct",
        "schema-id": 1,
        "fields": [*meta["schemas"][0]["fields"], {"id": 3, "name": "z", "type": "int", "required": False}],
    }
    meta = commit(
        client, url, {"action": "add-schema", "schema": extra}, {"action": "set-current-schema", "schema-id": -1}
    )
    assert meta["current-schema-id"] == 1
    meta = commit(client, url, {"action": "set-current-schema", "schema-id": 0})
    meta = commit(client, url, {"action": "remove-schemas", "schema-ids": [1]})
    assert [s["schema-id"] for s in meta["schemas"]] == [0]

    spec = {"spec-id": 1, "fields": [{"source-id": 1, "field-id": 1000, "name": "id_bucket", "transform": "bucket[4]"}]}
    meta = commit(client, url, {"action": "add-spec", "spec": spec}, {"action": "set-default-spec", "spec-id": -1})
    assert meta["default-spec-id"] == 1
    meta = commit(client, url, {"action": "set-default-spec", "spec-id": 0})
    meta = commit(client, url, {"action": "remove-partition-specs", "spec-ids": [1]})
    assert [s["spec-id"] for s in meta["partition-specs"]] == [0]

    order = {
        "order-id": 1,
        "fields": [{"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}],
    }
    meta = commit(
        client,
        url,
        {"action": "add-sort-order", "sort-order": order},
        {"action": "set-default-sort-order", "sort-order-id": -1},
    )
    assert meta["default-sort-order-id"] == 1

    meta = commit(
        client,
        url,
        {"action": "add-snapshot", "snapshot": snapshot(101, None, 1, location)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 101},
        requirements=[{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
    )
    assert meta["current-snapshot-id"] == 101
    meta = commit(
        client,
        url,
        {"action": "add-snapshot", "snapshot": snapshot(102, 101, 2, location)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 102},
        {"action": "set-snapshot-ref", "ref-name": "v1", "type": "tag", "snapshot-id": 101, "max-ref-age-ms": 1000},
        requirements=[{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 101}],
    )
    assert meta["refs"]["v1"] == {"snapshot-id": 101, "type": "tag", "max-ref-age-ms": 1000}

    stats = {
        "snapshot-id": 101,
        "statistics-path": f"{location}/metadata/stats.puffin",
        "file-size-in-bytes": 10,
        "file-footer-size-in-bytes": 5,
        "blob-metadata": [],
    }
    partition_stats = {
        "snapshot-id": 101,
        "statistics-path": f"{location}/metadata/pstats.parquet",
        "file-size-in-bytes": 10,
    }
    meta = commit(
        client,
        url,
        {"action": "set-statistics", "statistics": stats},
        {"action": "set-partition-statistics", "partition-statistics": partition_stats},
    )
    assert len(meta["statistics"]) == 1 and len(meta["partition-statistics"]) == 1
    meta = commit(client, url, {"action": "remove-partition-statistics", "snapshot-id": 101})
    assert meta.get("partition-statistics", []) == []

    meta = commit(client, url, {"action": "remove-snapshot-ref", "ref-name": "v1"})
    assert "v1" not in meta["refs"]
    # Spark's expire_snapshots: remove-snapshots then remove-statistics for the same snapshot.
    meta = commit(
        client,
        url,
        {"action": "remove-snapshots", "snapshot-ids": [101]},
        {"action": "remove-statistics", "snapshot-id": 101},
    )
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [102]
    assert meta.get("statistics", []) == []

    meta = commit(
        client,
        url,
        {"action": "set-properties", "updates": {"a": "1", "b": "2"}},
        {"action": "remove-properties", "removals": ["a"]},
        {"action": "set-location", "location": location + "_moved"},
    )
    assert meta["properties"]["b"] == "2" and "a" not in meta["properties"]
    assert meta["location"] == location + "_moved"
    assert client.get(url).json()["metadata"]["location"] == location + "_moved"


def test_snapshots_refs_mode_returns_only_referenced_snapshots(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    created = create_table(client, (ns_name,), "t")
    url = table_url((ns_name,), "t")
    location = created["metadata"]["location"]
    commit(client, url, {"action": "add-snapshot", "snapshot": snapshot(1, None, 1, location)})
    commit(
        client,
        url,
        {"action": "add-snapshot", "snapshot": snapshot(2, 1, 2, location)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 2},
    )
    commit(client, url, {"action": "add-snapshot", "snapshot": snapshot(3, None, 3, location)})
    everything = client.get(url).json()["metadata"]
    refs_only = client.get(url, params={"snapshots": "refs"}).json()["metadata"]
    assert sorted(s["snapshot-id"] for s in everything["snapshots"]) == [1, 2, 3]
    assert sorted(s["snapshot-id"] for s in refs_only["snapshots"]) == [1, 2]
    assert_error(client.get(url, params={"snapshots": "some"}), 400, "BadRequestException")
