"""Format version 3 tables over the REST API: create, upgrade, row lineage, encryption keys, v3 types."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.rest import assert_error, commit, create_namespace, create_table, snapshot, table_url


def append(snapshot_id: int, parent: int | None, sequence: int, location: str, **lineage: int) -> list[dict[str, Any]]:
    """add-snapshot and set main to it."""
    return [
        {"action": "add-snapshot", "snapshot": snapshot(snapshot_id, parent, sequence, location, **lineage)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id},
    ]


def test_create_v3_table_starts_row_lineage_at_zero(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    created = create_table(client, (ns_name,), "t", properties={"format-version": "3"})
    metadata = created["metadata"]
    assert metadata["format-version"] == 3
    assert metadata["next-row-id"] == 0
    assert "format-version" not in metadata["properties"]
    loaded = client.get(table_url((ns_name,), "t")).json()
    assert loaded["metadata"] == metadata
    assert loaded["metadata-location"] == created["metadata-location"]


def test_new_tables_default_to_zstd_unless_the_request_sets_a_codec(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    default = create_table(client, (ns_name,), "d")["metadata"]["properties"]
    chosen = create_table(client, (ns_name,), "c", properties={"write.parquet.compression-codec": "snappy"})
    assert default["write.parquet.compression-codec"] == "zstd"
    assert chosen["metadata"]["properties"]["write.parquet.compression-codec"] == "snappy"


def test_next_row_id_advances_by_added_rows_on_every_branch(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    location = create_table(client, (ns_name,), "t", properties={"format-version": "3"})["metadata"]["location"]
    url = table_url((ns_name,), "t")
    metadata = commit(client, url, *append(1, None, 1, location, first_row_id=0, added_rows=5))
    assert metadata["next-row-id"] == 5
    assert metadata["snapshots"][0]["first-row-id"] == 0
    assert metadata["snapshots"][0]["added-rows"] == 5
    branch = {"action": "add-snapshot", "snapshot": snapshot(2, 1, 2, location, first_row_id=5, added_rows=3)}
    set_branch = {"action": "set-snapshot-ref", "ref-name": "b", "type": "branch", "snapshot-id": 2}
    metadata = commit(client, url, branch, set_branch)
    assert metadata["next-row-id"] == 8  # a branch's rows take ids too: main's next rows never share them
    metadata = commit(client, url, *append(3, 1, 3, location, first_row_id=8, added_rows=2))
    assert metadata["next-row-id"] == 10
    assert client.get(url).json()["metadata"]["next-row-id"] == 10


def test_stale_first_row_id_is_409_so_clients_retry(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    location = create_table(client, (ns_name,), "t", properties={"format-version": "3"})["metadata"]["location"]
    url = table_url((ns_name,), "t")
    commit(client, url, *append(1, None, 1, location, first_row_id=0, added_rows=5))
    stale = {"requirements": [], "updates": append(2, 1, 2, location, first_row_id=3, added_rows=1)}
    assert_error(client.post(url, json=stale), 409, "CommitFailedException", "first-row-id is behind")
    missing = {"requirements": [], "updates": append(2, 1, 2, location, added_rows=1)}
    assert_error(client.post(url, json=missing), 400, "BadRequestException", "first-row-id")
    backwards = {"requirements": [], "updates": append(2, 1, 2, location, first_row_id=5, added_rows=-3)}
    assert_error(client.post(url, json=backwards), 400, "BadRequestException", "added-rows")
    overflow = {"requirements": [], "updates": append(2, 1, 2, location, first_row_id=2**63 - 2, added_rows=2)}
    assert_error(client.post(url, json=overflow), 400, "BadRequestException", "added-rows")
    assert client.get(url).json()["metadata"]["next-row-id"] == 5


def test_upgrade_to_v3_keeps_history_and_starts_row_ids_at_zero(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    location = create_table(client, (ns_name,), "t")["metadata"]["location"]
    url = table_url((ns_name,), "t")
    commit(client, url, *append(1, None, 1, location))
    upgraded = commit(client, url, {"action": "upgrade-format-version", "format-version": 3})
    assert upgraded["format-version"] == 3
    assert upgraded["next-row-id"] == 0
    assert [s["snapshot-id"] for s in upgraded["snapshots"]] == [1]
    metadata = commit(client, url, *append(2, 1, 2, location, first_row_id=0, added_rows=7))
    assert metadata["next-row-id"] == 7
    downgrade = {"requirements": [], "updates": [{"action": "upgrade-format-version", "format-version": 2}]}
    assert_error(client.post(url, json=downgrade), 400, "BadRequestException", "Cannot downgrade v3 table to v2")
    beyond = {"requirements": [], "updates": [{"action": "upgrade-format-version", "format-version": 4}]}
    assert_error(client.post(url, json=beyond), 400, "BadRequestException", "unsupported format version: v4")


def test_upgrade_and_append_in_one_commit(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    location = create_table(client, (ns_name,), "t", properties={"format-version": "1"})["metadata"]["location"]
    url = table_url((ns_name,), "t")
    upgrade = {"action": "upgrade-format-version", "format-version": 3}
    metadata = commit(client, url, upgrade, *append(1, None, 1, location, first_row_id=0, added_rows=4))
    assert (metadata["format-version"], metadata["next-row-id"]) == (3, 4)


def test_encryption_keys_and_snapshot_key_ids_are_kept(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    location = create_table(client, (ns_name,), "t", properties={"format-version": "3"})["metadata"]["location"]
    url = table_url((ns_name,), "t")
    key = {"key-id": "k1", "encrypted-key-metadata": "AAEC", "properties": {"kms": "x"}}
    metadata = commit(client, url, {"action": "add-encryption-key", "encryption-key": key})
    assert metadata["encryption-keys"] == [key]
    keyed = append(1, None, 1, location, first_row_id=0, added_rows=1)
    keyed[0]["snapshot"]["key-id"] = "k1"
    commit(client, url, *keyed)
    loaded = client.get(url).json()["metadata"]
    assert loaded["encryption-keys"] == [key]
    assert loaded["snapshots"][0]["key-id"] == "k1"
    metadata = commit(client, url, {"action": "remove-encryption-key", "key-id": "k1"})
    assert "encryption-keys" not in metadata or metadata["encryption-keys"] == []


def test_encryption_keys_need_v3(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    body = {
        "requirements": [],
        "updates": [
            {"action": "add-encryption-key", "encryption-key": {"key-id": "k", "encrypted-key-metadata": "AA"}}
        ],
    }
    assert_error(client.post(table_url((ns_name,), "t"), json=body), 400, "BadRequestException")


V3_FIELDS = [
    {"id": 1, "name": "id", "type": "long", "required": True},
    {"id": 2, "name": "ts", "type": "timestamp_ns", "required": False},
    {"id": 3, "name": "tstz", "type": "timestamptz_ns", "required": False},
    {"id": 4, "name": "u", "type": "unknown", "required": False},
    {"id": 5, "name": "g", "type": "geometry", "required": False},
    {"id": 6, "name": "n", "type": "int", "required": False, "initial-default": 7, "write-default": 8},
    {"id": 7, "name": "geo", "type": "geography", "required": False},
]


def test_v3_types_and_defaults_round_trip(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    schema = {"type": "struct", "schema-id": 0, "fields": V3_FIELDS}
    created = create_table(client, (ns_name,), "t", schema=schema, properties={"format-version": "3"})
    assert created["metadata"]["schemas"][0]["fields"] == V3_FIELDS
    added = {"id": 8, "name": "s", "type": "string", "required": False, "initial-default": "x", "write-default": "y"}
    evolved = {"type": "struct", "schema-id": 1, "fields": [*V3_FIELDS, added]}
    url = table_url((ns_name,), "t")
    metadata = commit(
        client, url, {"action": "add-schema", "schema": evolved}, {"action": "set-current-schema", "schema-id": -1}
    )
    assert metadata["schemas"][1]["fields"][-1] == added
    assert client.get(url).json()["metadata"]["schemas"] == metadata["schemas"]


def test_register_a_v3_metadata_file(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    location = create_table(client, (ns_name,), "t", properties={"format-version": "3"})["metadata"]["location"]
    url = table_url((ns_name,), "t")
    metadata = commit(client, url, *append(1, None, 1, location, first_row_id=0, added_rows=5))
    metadata_location = client.get(url).json()["metadata-location"]
    assert client.delete(url).status_code == 204
    body = {"name": "t", "metadata-location": metadata_location}
    registered = client.post(f"/v1/local/namespaces/{ns_name}/register", json=body)
    assert registered.status_code == 200, registered.text
    assert registered.json()["metadata"] == metadata


def test_stale_blind_append_on_v3_is_409_not_rebased(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    location = create_table(client, (ns_name,), "t", properties={"format-version": "3"})["metadata"]["location"]
    url = table_url((ns_name,), "t")
    commit(client, url, *append(1, None, 1, location, first_row_id=0, added_rows=5))
    blind = {"requirements": [], "updates": append(2, None, 2, location, first_row_id=5, added_rows=1)}
    assert_error(client.post(url, json=blind), 409, "CommitFailedException", "not rebased")
    metadata = client.get(url).json()["metadata"]
    assert (metadata["current-snapshot-id"], metadata["next-row-id"]) == (1, 5)


def test_a_variant_column_is_a_clear_400(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    schema = {"type": "struct", "fields": [{"id": 1, "name": "v", "type": "variant", "required": False}]}
    body = {"name": "t", "schema": schema, "properties": {"format-version": "3"}}
    response = client.post(f"/v1/local/namespaces/{ns_name}/tables", json=body)
    assert_error(response, 400, "BadRequestException")


DEFAULTS = [
    ("boolean", True),
    ("int", 1),
    ("long", 2),
    ("float", 1.5),
    ("double", 2.5),
    ("decimal(9, 2)", "12.34"),
    ("date", "2024-01-02"),
    ("time", "12:00:00"),
    ("timestamp", "2024-01-02T03:04:05.000006"),
    ("timestamptz", "2024-01-02T03:04:05.000006+00:00"),
    ("timestamp_ns", "2024-01-02T03:04:05.000000001"),
    ("timestamptz_ns", "2024-01-02T03:04:05.000000001+00:00"),
    ("string", "x"),
    ("uuid", "f79c3e09-677c-4d9d-9a86-9e9b3d6f1e5e"),
    ("fixed[2]", "0a0b"),
    ("binary", "0a0b"),
]


def test_every_primitive_type_keeps_its_defaults_on_create_and_add_schema(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    columns: list[dict[str, Any]] = [
        {"id": i + 2, "name": f"c{i}", "type": t, "required": False, "initial-default": v, "write-default": v}
        for i, (t, v) in enumerate(DEFAULTS)
    ]
    id_column = {"id": 1, "name": "id", "type": "long", "required": False}
    schema = {"type": "struct", "schema-id": 0, "fields": [id_column, *columns]}
    created = create_table(client, (ns_name,), "t", schema=schema, properties={"format-version": "3"})
    assert created["metadata"]["schemas"][0]["fields"][1:] == columns
    plain = create_table(client, (ns_name,), "p", properties={"format-version": "3"})["metadata"]["schemas"][0]
    first = len(plain["fields"])
    added = [column | {"id": column["id"] + first - 1, "name": f"a{column['id']}"} for column in columns]
    evolved = {"type": "struct", "schema-id": 1, "fields": [*plain["fields"], *added]}
    url = table_url((ns_name,), "p")
    metadata = commit(
        client, url, {"action": "add-schema", "schema": evolved}, {"action": "set-current-schema", "schema-id": -1}
    )
    assert metadata["schemas"][1]["fields"][first:] == added
    assert client.get(url).json()["metadata"]["schemas"][1]["fields"][first:] == added


def test_encryption_keys_count_against_the_metadata_adds_limit(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t", properties={"format-version": "3"})
    keys = [{"key-id": f"k{i}", "encrypted-key-metadata": "AA"} for i in range(1001)]  # server.max_commit_metadata_adds
    body = {"requirements": [], "updates": [{"action": "add-encryption-key", "encryption-key": k} for k in keys]}
    assert_error(
        client.post(table_url((ns_name,), "t"), json=body), 413, "RequestEntityTooLargeException", "encryption key"
    )
