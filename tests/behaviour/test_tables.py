"""Tables over HTTP against the served proxy: create, load, ETags, register, rename, drop, errors."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import httpx

from tests.support.rest import SCHEMA, assert_error, create_namespace, create_table, ns_path, table_url


def test_create_table_reassigns_ids_and_writes_metadata(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    schema = {
        "type": "struct",
        "schema-id": 7,
        "fields": [
            {"id": 10, "name": "id", "type": "long", "required": True},
            {"id": 20, "name": "ts", "type": "timestamp", "required": False},
        ],
    }
    spec = {"spec-id": 0, "fields": [{"source-id": 20, "field-id": 1000, "name": "ts_day", "transform": "day"}]}
    result = create_table(client, (ns_name,), "events", schema=schema, **{"partition-spec": spec})
    metadata = result["metadata"]
    assert [f["id"] for f in metadata["schemas"][0]["fields"]] == [1, 2]
    assert metadata["partition-specs"][0]["fields"][0]["source-id"] == 2
    assert Path(urlparse(result["metadata-location"]).path).is_file()
    loaded = client.get(table_url((ns_name,), "events"))
    assert loaded.json()["metadata"]["table-uuid"] == metadata["table-uuid"]
    assert loaded.headers["etag"]


def test_requested_location_is_honoured(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    warehouse = create_table(client, (ns_name,), "first")["metadata"]["location"].rsplit("/", 2)[0]
    location = f"{warehouse}/custom/{ns_name}"
    result = create_table(client, (ns_name,), "t", location=location)
    assert result["metadata"]["location"] == location
    assert result["metadata-location"].startswith(location + "/metadata/")


def test_create_in_missing_namespace_is_404(client: httpx.Client, ns_name: str) -> None:
    response = client.post(f"/v1/local/namespaces/{ns_name}/tables", json={"name": "t", "schema": SCHEMA})
    assert_error(response, 404, "NoSuchNamespaceException", f"Namespace does not exist: {ns_name}")


def test_create_existing_table_is_409(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    response = client.post(f"/v1/local/namespaces/{ns_name}/tables", json={"name": "t", "schema": SCHEMA})
    assert_error(response, 409, "AlreadyExistsException", f"Table already exists: {ns_name}.t")


def test_stage_create_writes_nothing_until_commit(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    staged = client.post(
        f"/v1/local/namespaces/{ns_name}/tables", json={"name": "t", "schema": SCHEMA, "stage-create": True}
    ).json()
    assert staged["metadata-location"] is None
    assert client.head(table_url((ns_name,), "t")).status_code == 404
    metadata = staged["metadata"]
    updates = [
        {"action": "assign-uuid", "uuid": metadata["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": metadata["schemas"][0]},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": metadata["location"]},
        {"action": "set-properties", "updates": {"created-by": "test"}},
    ]
    body = {"requirements": [{"type": "assert-create"}], "updates": updates}
    committed = client.post(table_url((ns_name,), "t"), json=body)
    assert committed.status_code == 200, committed.text
    assert committed.json()["metadata"]["properties"]["created-by"] == "test"
    again = client.post(table_url((ns_name,), "t"), json=body)
    assert_error(again, 409, "CommitFailedException", "Requirement failed: table already exists")


def test_etag_and_if_none_match_give_304(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    first = client.get(table_url((ns_name,), "t"))
    tag = first.headers["etag"]
    assert client.get(table_url((ns_name,), "t"), headers={"If-None-Match": tag}).status_code == 304
    refs = client.get(table_url((ns_name,), "t"), params={"snapshots": "refs"})
    assert refs.status_code == 200 and refs.headers["etag"] != tag
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    client.post(table_url((ns_name,), "t"), json=commit).raise_for_status()
    after = client.get(table_url((ns_name,), "t"), headers={"If-None-Match": tag})
    assert after.status_code == 200 and after.headers["etag"] != tag


def test_metadata_table_probe_is_404_no_such_table(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    response = client.get(f"/v1/local/namespaces/{ns_path(ns_name, 't')}/tables/snapshots")
    assert_error(response, 404, "NoSuchTableException")


def test_load_table_in_missing_namespace_is_no_such_table(client: httpx.Client, ns_name: str) -> None:
    response = client.get(table_url((ns_name,), "tbl"))
    assert_error(response, 404, "NoSuchTableException")
    assert response.json()["error"]["message"] == f"Table does not exist: {ns_name}.tbl"
    assert client.head(table_url((ns_name,), "tbl")).status_code == 404


def test_list_tables_pages(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    names = [f"t{i}" for i in range(5)]
    for name in names:
        create_table(client, (ns_name,), name)
    everything = client.get(f"/v1/local/namespaces/{ns_name}/tables").json()
    assert sorted(i["name"] for i in everything["identifiers"]) == names
    assert everything["next-page-token"] is None
    seen, token = [], ""
    while token is not None:
        page = client.get(f"/v1/local/namespaces/{ns_name}/tables", params={"pageToken": token, "pageSize": 2}).json()
        assert len(page["identifiers"]) <= 2
        assert all(i["namespace"] == [ns_name] for i in page["identifiers"])
        seen += [i["name"] for i in page["identifiers"]]
        token = page["next-page-token"]
    assert sorted(seen) == names


def test_rename_table_across_namespaces(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name, "src")
    create_namespace(client, ns_name, "dst")
    created = create_table(client, (ns_name, "src"), "t")
    body = {
        "source": {"namespace": [ns_name, "src"], "name": "t"},
        "destination": {"namespace": [ns_name, "dst"], "name": "u"},
    }
    assert client.post("/v1/local/tables/rename", json=body).status_code == 204
    moved = client.get(table_url((ns_name, "dst"), "u")).json()
    assert moved["metadata"]["table-uuid"] == created["metadata"]["table-uuid"]
    assert client.head(table_url((ns_name, "src"), "t")).status_code == 404


def test_rename_errors(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "a")
    create_table(client, (ns_name,), "b")

    def rename(src: str, dst_ns: list[str], dst: str) -> httpx.Response:
        body = {"source": {"namespace": [ns_name], "name": src}, "destination": {"namespace": dst_ns, "name": dst}}
        return client.post("/v1/local/tables/rename", json=body)

    assert_error(rename("missing", [ns_name], "x"), 404, "NoSuchTableException", "Table does not exist")
    assert_error(
        rename("a", ["non_existing"], "x"), 404, "NoSuchNamespaceException", "Namespace does not exist: non_existing"
    )
    assert_error(rename("a", [ns_name], "b"), 409, "AlreadyExistsException", "Table already exists")


def test_register_dropped_table_restores_it(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    created = create_table(client, (ns_name,), "t")
    assert client.delete(table_url((ns_name,), "t")).status_code == 204
    body = {"name": "t", "metadata-location": created["metadata-location"]}
    registered = client.post(f"/v1/local/namespaces/{ns_name}/register", json=body)
    assert registered.status_code == 200, registered.text
    assert registered.json()["metadata"]["table-uuid"] == created["metadata"]["table-uuid"]
    again = client.post(f"/v1/local/namespaces/{ns_name}/register", json=body)
    assert_error(again, 409, "AlreadyExistsException", f"Table already exists: {ns_name}.t")
    missing = client.post(
        f"/v1/local/namespaces/{ns_name}/register",
        json={"name": "u", "metadata-location": created["metadata"]["location"] + "-gone/x.metadata.json"},
    )
    assert_error(missing, 404, "NotFoundException")


def test_drop_frees_the_name_at_once_and_a_purge_waits_for_the_retention(client: httpx.Client, ns_name: str) -> None:
    """Drops go to the trash (default retention P7D): the name is free at once, the files stay, even with
    purgeRequested (the purge runs when the retention ends; tests/integration/test_trash.py)."""
    create_namespace(client, ns_name)
    kept = Path(urlparse(create_table(client, (ns_name,), "kept")["metadata-location"]).path)
    purged = Path(urlparse(create_table(client, (ns_name,), "purged")["metadata-location"]).path)
    assert client.delete(table_url((ns_name,), "kept")).status_code == 204
    assert client.delete(table_url((ns_name,), "purged"), params={"purgeRequested": "true"}).status_code == 204
    assert kept.is_file()
    assert purged.is_file()
    assert client.head(table_url((ns_name,), "purged")).status_code == 404
    assert_error(client.delete(table_url((ns_name,), "kept")), 404, "NoSuchTableException")
    create_table(client, (ns_name,), "kept")  # the name is free at once


def test_unregister_returns_metadata_and_keeps_files(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    created = create_table(client, (ns_name,), "t")
    response = client.post(table_url((ns_name,), "t") + "/unregister", headers={"Content-Type": "application/json"})
    assert response.status_code == 200
    assert response.json()["metadata-location"] == created["metadata-location"]
    assert Path(urlparse(created["metadata-location"]).path).is_file()
    assert client.head(table_url((ns_name,), "t")).status_code == 404


def test_metrics_report_is_204_and_404_for_missing_table(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    report = {"report-type": "scan-report", "table-name": f"{ns_name}.t", "snapshot-id": -1}
    assert client.post(table_url((ns_name,), "t") + "/metrics", json=report).status_code == 204
    missing = client.post(table_url((ns_name,), "missing") + "/metrics", json=report)
    assert_error(missing, 404, "NoSuchTableException")


def test_table_names_with_odd_characters_round_trip(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    for name in ("ta.ble", "with space", "sl/ash", "plus+sign"):
        create_table(client, (ns_name,), name)
        assert client.head(table_url((ns_name,), name)).status_code == 204, name
    listed = client.get(f"/v1/local/namespaces/{ns_name}/tables").json()["identifiers"]
    assert sorted(i["name"] for i in listed) == sorted(["ta.ble", "with space", "sl/ash", "plus+sign"])
