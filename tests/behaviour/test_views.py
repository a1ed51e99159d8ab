"""Views over HTTP against the served proxy, shaped like the requests Iceberg Java sends."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
import sqlalchemy as sa

from tests.support.rest import SCHEMA, assert_error, create_namespace, create_table, ns_path

VIEW_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False, "doc": "the id"}],
}


def version(sql: str, dialect: str = "spark", schema_id: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "version-id": 1,
        "timestamp-ms": int(time.time() * 1000),
        "schema-id": schema_id,
        "summary": {"engine-name": "test"},
        "representations": [{"type": "sql", "sql": sql, "dialect": dialect}],
        "default-namespace": ["db"],
    } | extra


def view_url(namespace: tuple[str, ...], name: str) -> str:
    return f"/v1/local/namespaces/{ns_path(*namespace)}/views/{name}"


def create_view(client: httpx.Client, namespace: tuple[str, ...], name: str, **extra: Any) -> httpx.Response:
    body = {"name": name, "schema": VIEW_SCHEMA, "view-version": version("select 1 as id"), "properties": {}} | extra
    return client.post(f"/v1/local/namespaces/{ns_path(*namespace)}/views", json=body)


def replace(
    client: httpx.Client, url: str, sql: str, *, dialects: tuple[str, ...] = ("spark",), **extra: Any
) -> httpx.Response:
    current = client.get(url).json()["metadata"]
    new_version = version(sql, dialects[0], schema_id=-1, **extra)
    new_version["representations"] = [{"type": "sql", "sql": sql, "dialect": d} for d in dialects]
    body = {
        "requirements": [{"type": "assert-view-uuid", "uuid": current["view-uuid"]}],
        "updates": [
            {"action": "add-schema", "schema": VIEW_SCHEMA},
            {"action": "add-view-version", "view-version": new_version},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }
    return client.post(url, json=body)


def test_create_view_writes_gzipped_metadata_file(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    response = create_view(client, (ns_name,), "v")
    assert response.status_code == 200, response.text
    result = response.json()
    metadata = result["metadata"]
    assert metadata["current-version-id"] == 1
    assert metadata["versions"][0]["schema-id"] == 0
    assert len(metadata["version-log"]) == 1
    path = Path(urlparse(result["metadata-location"]).path)
    assert path.name.endswith(".gz.metadata.json")
    on_disk = json.loads(gzip.decompress(path.read_bytes()))
    assert on_disk["view-uuid"] == metadata["view-uuid"]
    loaded = client.get(view_url((ns_name,), "v")).json()
    assert loaded == result
    assert client.head(view_url((ns_name,), "v")).status_code == 204


def test_create_view_errors(client: httpx.Client, ns_name: str) -> None:
    assert_error(create_view(client, (ns_name,), "v"), 404, "NoSuchNamespaceException")
    create_namespace(client, ns_name)
    assert create_view(client, (ns_name,), "v").status_code == 200
    assert_error(
        create_view(client, (ns_name,), "v"), 409, "AlreadyExistsException", f"View already exists: {ns_name}.v"
    )
    create_table(client, (ns_name,), "t")
    assert_error(
        create_view(client, (ns_name,), "t"),
        409,
        "AlreadyExistsException",
        f"Table with same name already exists: {ns_name}.t",
    )
    table = client.post(f"/v1/local/namespaces/{ns_name}/tables", json={"name": "v", "schema": SCHEMA})
    assert_error(table, 409, "AlreadyExistsException", f"View with same name already exists: {ns_name}.v")
    duplicate = version("select 1")
    duplicate["representations"] *= 2
    assert_error(
        create_view(client, (ns_name,), "d", **{"view-version": duplicate}),
        400,
        "IllegalArgumentException",
        "Invalid view version: Cannot add multiple queries for dialect spark",
    )
    no_sql = version("select 1")
    no_sql["representations"] = [{"type": "sql", "dialect": "spark"}]
    assert_error(create_view(client, (ns_name,), "e", **{"view-version": no_sql}), 400, "BadRequestException")
    assert client.head(view_url((ns_name,), "d")).status_code == 404


def test_load_missing_view_and_table_as_view(client: httpx.Client, ns_name: str) -> None:
    response = client.get(view_url((ns_name,), "v"))
    assert_error(response, 404, "NoSuchViewException")
    assert response.json()["error"]["message"] == f"View does not exist: {ns_name}.v"
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    assert_error(client.get(view_url((ns_name,), "t")), 404, "NoSuchViewException")
    create_view(client, (ns_name,), "v")
    assert_error(client.get(f"/v1/local/namespaces/{ns_name}/tables/v"), 404, "NoSuchTableException")


def test_three_replaces_keep_full_history(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_view(client, (ns_name,), "v")
    url = view_url((ns_name,), "v")
    for i in range(2, 5):
        response = replace(client, url, f"select {i} as id")
        assert response.status_code == 200, response.text
        assert response.json()["metadata"]["current-version-id"] == i
    metadata = client.get(url).json()["metadata"]
    assert [v["version-id"] for v in metadata["versions"]] == [1, 2, 3, 4]
    assert [e["version-id"] for e in metadata["version-log"]] == [1, 2, 3, 4]
    assert [v["representations"][0]["sql"] for v in metadata["versions"]] == [f"select {i} as id" for i in (1, 2, 3, 4)]
    assert [s["schema-id"] for s in metadata["schemas"]] == [0]


def test_second_dialect_added_by_replace_reads_back(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_view(client, (ns_name,), "v")
    url = view_url((ns_name,), "v")
    assert replace(client, url, "select 1 as id", dialects=("spark", "trino")).status_code == 200
    current = client.get(url).json()["metadata"]
    head = next(v for v in current["versions"] if v["version-id"] == current["current-version-id"])
    assert sorted(r["dialect"] for r in head["representations"]) == ["spark", "trino"]


def test_identical_version_reuses_its_id(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_view(client, (ns_name,), "v")
    url = view_url((ns_name,), "v")
    replace(client, url, "select 2 as id").raise_for_status()
    again = replace(client, url, "select 2 as id").json()["metadata"]
    assert [v["version-id"] for v in again["versions"]] == [1, 2]


def test_dropping_a_dialect_is_refused_unless_allowed(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_view(client, (ns_name,), "v")
    url = view_url((ns_name,), "v")
    replace(client, url, "select 1 as id", dialects=("spark", "trino")).raise_for_status()
    assert_error(replace(client, url, "select 5 as id"), 400, "BadRequestException", "loss of view dialects")
    allow = {
        "requirements": [],
        "updates": [{"action": "set-properties", "updates": {"replace.drop-dialect.allowed": "true"}}],
    }
    client.post(url, json=allow).raise_for_status()
    assert replace(client, url, "select 5 as id").status_code == 200


def test_history_size_property_trims_versions(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    assert create_view(client, (ns_name,), "v", properties={"version.history.num-entries": "2"}).status_code == 200
    url = view_url((ns_name,), "v")
    for i in range(2, 6):
        replace(client, url, f"select {i} as id").raise_for_status()
    metadata = client.get(url).json()["metadata"]
    assert [v["version-id"] for v in metadata["versions"]] == [4, 5]
    assert [e["version-id"] for e in metadata["version-log"]] == [4, 5]


def test_view_commit_errors(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_view(client, (ns_name,), "v")
    url = view_url((ns_name,), "v")
    wrong_uuid = {"requirements": [{"type": "assert-view-uuid", "uuid": "nope"}], "updates": []}
    assert_error(client.post(url, json=wrong_uuid), 409, "CommitFailedException", "view UUID does not match")
    assert_error(client.post(url, json={"updates": [{"action": "fly"}]}), 400, "BadRequestException", "fly")
    assert_error(
        client.post(url, json={"updates": [{"action": "set-current-view-version", "view-version-id": 9}]}),
        400,
        "BadRequestException",
    )
    assert_error(client.post(view_url((ns_name,), "missing"), json={"updates": []}), 404, "NoSuchViewException")


def test_properties_and_location_updates_keep_versions(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    created = create_view(client, (ns_name,), "v", properties={"a": "1", "b": "2"})
    url = view_url((ns_name,), "v")
    new_location = created.json()["metadata"]["location"] + "-elsewhere"
    body = {
        "updates": [
            {"action": "set-properties", "updates": {"c": "3"}},
            {"action": "remove-properties", "removals": ["a"]},
            {"action": "set-location", "location": new_location},
        ]
    }
    result = client.post(url, json=body).json()
    assert result["metadata"]["properties"] == {"b": "2", "c": "3"}
    assert result["metadata"]["location"] == new_location
    assert result["metadata"]["current-version-id"] == 1 and len(result["metadata"]["version-log"]) == 1
    assert result["metadata-location"].startswith(new_location + "/metadata/00001-")


def test_rename_view_and_errors(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name, "a")
    create_namespace(client, ns_name, "b")
    create_view(client, (ns_name, "a"), "v")
    create_view(client, (ns_name, "b"), "w")
    create_table(client, (ns_name, "b"), "t")

    def rename(src: str, dst_ns: list[str], dst: str) -> httpx.Response:
        body = {"source": {"namespace": [ns_name, "a"], "name": src}, "destination": {"namespace": dst_ns, "name": dst}}
        return client.post("/v1/local/views/rename", json=body)

    assert_error(rename("missing", [ns_name, "b"], "x"), 404, "NoSuchViewException")
    assert_error(
        rename("v", ["non_existing"], "x"), 404, "NoSuchNamespaceException", "Namespace does not exist: non_existing"
    )
    assert_error(rename("v", [ns_name, "b"], "w"), 409, "AlreadyExistsException", "View already exists")
    assert_error(rename("v", [ns_name, "b"], "t"), 409, "AlreadyExistsException", "Table already exists")
    before = client.get(view_url((ns_name, "a"), "v")).json()
    assert rename("v", [ns_name, "b"], "moved").status_code == 204
    after = client.get(view_url((ns_name, "b"), "moved")).json()
    assert after["metadata"] == before["metadata"]
    assert client.head(view_url((ns_name, "a"), "v")).status_code == 404
    table_onto_view = {
        "source": {"namespace": [ns_name, "b"], "name": "t"},
        "destination": {"namespace": [ns_name, "b"], "name": "w"},
    }
    assert_error(
        client.post("/v1/local/tables/rename", json=table_onto_view),
        409,
        "AlreadyExistsException",
        "View already exists",
    )


def test_namespace_holding_a_view_is_not_empty(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_view(client, (ns_name,), "v")
    assert_error(client.delete(f"/v1/local/namespaces/{ns_name}"), 409, "NamespaceNotEmptyException", "is not empty")
    assert client.delete(view_url((ns_name,), "v")).status_code == 204
    assert_error(client.delete(view_url((ns_name,), "v")), 404, "NoSuchViewException")
    assert client.delete(f"/v1/local/namespaces/{ns_name}").status_code == 204


def test_lists_separate_views_from_tables(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    for name in ("v1", "v2", "v3"):
        create_view(client, (ns_name,), name)
    views = client.get(f"/v1/local/namespaces/{ns_name}/views").json()
    assert [i["name"] for i in views["identifiers"]] == ["v1", "v2", "v3"]
    tables = client.get(f"/v1/local/namespaces/{ns_name}/tables").json()
    assert [i["name"] for i in tables["identifiers"]] == ["t"]
    page = client.get(f"/v1/local/namespaces/{ns_name}/views", params={"pageToken": "", "pageSize": 2}).json()
    assert len(page["identifiers"]) == 2 and page["next-page-token"]


def test_register_view_from_its_metadata_file(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    created = create_view(client, (ns_name,), "v").json()
    client.delete(view_url((ns_name,), "v")).raise_for_status()
    body = {"name": "v", "metadata-location": created["metadata-location"]}
    registered = client.post(f"/v1/local/namespaces/{ns_name}/register-view", json=body)
    assert registered.status_code == 200, registered.text
    assert registered.json()["metadata"] == created["metadata"]
    again = client.post(f"/v1/local/namespaces/{ns_name}/register-view", json=body)
    assert_error(again, 409, "AlreadyExistsException", f"View already exists: {ns_name}.v")


@pytest.mark.needs("sqlite_state_file")
def test_versions_record_who_and_when(client: httpx.Client, ns_name: str, proxy: Any) -> None:
    create_namespace(client, ns_name)
    create_view(client, (ns_name,), "v")
    replace(client, view_url((ns_name,), "v"), "select 2 as id").raise_for_status()
    engine = sa.create_engine(f"sqlite:///{proxy.workdir / 'data' / 'state.db'}")
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "select v.version_id, v.created_by, v.created_at from iceberg_view_version v "
                "join iceberg_view w on w.id = v.view_id where w.namespace = :ns order by v.version_id"
            ),
            {"ns": ns_name},
        ).all()
    engine.dispose()
    assert [(r[0], r[1]) for r in rows] == [(1, "anonymous"), (2, "anonymous")]
    assert all(r[2] for r in rows)
