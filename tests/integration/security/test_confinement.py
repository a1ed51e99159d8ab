"""Guarantee 1: every path a client names is normalised and confined to the catalog's allowed locations
before any I/O — table and view locations, write paths, namespace locations, registered metadata files,
statistics files and manifest lists. Refusals are 400/403 in the spec's shape, name the location, and
write nothing."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.integration.security.conftest import SECRET_TEXT, Target
from tests.support.rest import SCHEMA, assert_error, create_namespace, create_table, ns_path, table_url


def tables_url(ns: str) -> str:
    return f"/v1/local/namespaces/{ns_path(ns)}/tables"


def commit(client: httpx.Client, ns: str, table: str, *updates: dict[str, object]) -> httpx.Response:
    return client.post(table_url((ns,), table), json={"requirements": [], "updates": list(updates)})


def snapshot_of(outside: Path) -> list[str]:
    return sorted(str(p) for p in outside.rglob("*"))


@pytest.mark.parametrize(
    "location",
    ["{outside}/t", "{warehouse}/../outside/t", "{warehouse}/a/%2E%2E/%2E%2E/outside/t", "{warehouse}2/t"],
)
def test_create_outside_the_allowed_locations_is_403_and_writes_nothing(
    target: Target, client: httpx.Client, ns: str, location: str
) -> None:
    before = snapshot_of(target.outside)
    wanted = location.format(outside=target.outside.as_uri(), warehouse=target.warehouse.as_uri())
    response = client.post(tables_url(ns), json={"name": "t", "schema": SCHEMA, "location": wanted})
    assert response.status_code in (400, 403), response.text
    assert response.json()["error"]["type"] in ("ForbiddenException", "BadRequestException")
    assert snapshot_of(target.outside) == before
    assert client.head(table_url((ns,), "t")).status_code == 404


@pytest.mark.parametrize(
    ("location", "status"),
    [
        ("relative/path", 400),
        ("/tmp/no-scheme", 400),
        ("file:///", 400),
        ("s3://", 400),
        ("gs://bucket/t", 400),
        ("abfs://container@account.dfs.core.windows.net/t", 400),
        ("http://127.0.0.1:9/t", 400),
        ("file:///tmp/a\x01b", 400),
    ],
)
def test_malformed_or_unconfigured_locations_are_refused_before_any_io(
    client: httpx.Client, ns: str, location: str, status: int
) -> None:
    started = time.monotonic()
    response = client.post(tables_url(ns), json={"name": "t", "schema": SCHEMA, "location": location})
    assert_error(response, status, "BadRequestException")
    assert time.monotonic() - started < 5  # no storage call with the server's ambient credentials


def test_stage_create_outside_is_403(target: Target, client: httpx.Client, ns: str) -> None:
    body = {"name": "t", "schema": SCHEMA, "location": (target.outside / "staged").as_uri(), "stage-create": True}
    assert_error(client.post(tables_url(ns), json=body), 403, "ForbiddenException", "outside the allowed locations")
    assert not (target.outside / "staged").exists()


@pytest.mark.parametrize(
    "update",
    [
        {"action": "set-location", "location": "{outside}/moved"},
        {"action": "set-properties", "updates": {"write.data.path": "{outside}/data"}},
        {"action": "set-properties", "updates": {"write.metadata.path": "{outside}/metadata"}},
        {"action": "set-properties", "updates": {"write.object-storage.path": "{outside}/objects"}},
    ],
)
def test_commit_moving_files_outside_is_403(target: Target, client: httpx.Client, ns: str, update: dict) -> None:
    create_table(client, (ns,), "t")
    text = json.dumps(update).replace("{outside}", target.outside.as_uri())
    response = commit(client, ns, "t", json.loads(text))
    assert_error(response, 403, "ForbiddenException", target.outside.as_uri())
    assert snapshot_of(target.outside) == [str(target.secret)]
    loaded = client.get(table_url((ns,), "t")).json()["metadata"]
    assert not any(target.outside.as_uri() in str(v) for v in loaded["properties"].values())


def test_set_location_empty_is_400_and_nothing_written_at_the_root(client: httpx.Client, ns: str) -> None:
    create_table(client, (ns,), "t")
    assert_error(commit(client, ns, "t", {"action": "set-location", "location": ""}), 400, "BadRequestException")
    assert not Path("/metadata").exists()


def test_statistics_and_manifest_lists_outside_are_403(target: Target, client: httpx.Client, ns: str) -> None:
    create_table(client, (ns,), "t")
    snapshot = {
        "snapshot-id": 1,
        "timestamp-ms": 1_700_000_000_000,
        "manifest-list": target.secret.as_uri(),
        "summary": {"operation": "append"},
        "schema-id": 0,
    }
    response = commit(client, ns, "t", {"action": "add-snapshot", "snapshot": snapshot})
    assert_error(response, 403, "ForbiddenException", "Manifest list")
    snapshot["manifest-list"] = f"{target.warehouse.as_uri()}/{ns}/t/metadata/snap-1.avro"
    assert commit(client, ns, "t", {"action": "add-snapshot", "snapshot": snapshot}).status_code == 200
    statistics = {
        "snapshot-id": 1,
        "statistics-path": target.secret.as_uri(),
        "file-size-in-bytes": 10,
        "file-footer-size-in-bytes": 5,
        "blob-metadata": [],
    }
    response = commit(client, ns, "t", {"action": "set-statistics", "snapshot-id": 1, "statistics": statistics})
    assert_error(response, 403, "ForbiddenException", "Statistics file")
    partition = {"snapshot-id": 1, "statistics-path": target.secret.as_uri(), "file-size-in-bytes": 10}
    response = commit(client, ns, "t", {"action": "set-partition-statistics", "partition-statistics": partition})
    assert_error(response, 403, "ForbiddenException", "Partition statistics file")


def test_namespace_location_outside_is_403(target: Target, client: httpx.Client) -> None:
    name = f"nsloc_{uuid.uuid4().hex[:8]}"
    body = {"namespace": [name], "properties": {"location": (target.outside / "ns").as_uri()}}
    assert_error(client.post("/v1/local/namespaces", json=body), 403, "ForbiddenException")
    assert client.head(f"/v1/local/namespaces/{name}").status_code == 404
    create_namespace(client, name)
    update = {"updates": {"location": (target.outside / "ns").as_uri()}}
    response = client.post(f"/v1/local/namespaces/{name}/properties", json=update)
    assert_error(response, 403, "ForbiddenException")
    inside = f"{target.warehouse.as_uri()}/custom-{name}"
    assert client.post(f"/v1/local/namespaces/{name}/properties", json={"updates": {"location": inside}}).is_success
    assert create_table(client, (name,), "t")["metadata"]["location"] == f"{inside}/t"


def test_view_locations_outside_are_403(target: Target, client: httpx.Client, ns: str) -> None:
    view = {
        "name": "v",
        "schema": SCHEMA,
        "location": (target.outside / "v").as_uri(),
        "view-version": {
            "version-id": 1,
            "timestamp-ms": 1_700_000_000_000,
            "schema-id": 0,
            "summary": {},
            "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}],
            "default-namespace": [ns],
        },
    }
    views = f"/v1/local/namespaces/{ns}/views"
    assert_error(client.post(views, json=view), 403, "ForbiddenException")
    assert client.post(views, json={k: v for k, v in view.items() if k != "location"}).status_code == 200
    body = {"updates": [{"action": "set-location", "location": (target.outside / "v").as_uri()}]}
    assert_error(client.post(f"{views}/v", json=body), 403, "ForbiddenException")
    assert snapshot_of(target.outside) == [str(target.secret)]


@pytest.mark.parametrize("location", ["{secret}", "file:///etc/passwd", "file:///dev/zero"])
def test_register_outside_is_403_and_never_reads_the_file(
    target: Target, client: httpx.Client, ns: str, location: str
) -> None:
    wanted = location.format(secret=target.secret.as_uri())
    response = client.post(f"/v1/local/namespaces/{ns}/register", json={"name": "r", "metadata-location": wanted})
    assert_error(response, 403, "ForbiddenException", "outside the allowed locations")
    assert "do-not-leak" not in response.text and "root:" not in response.text
    view = client.post(f"/v1/local/namespaces/{ns}/register-view", json={"name": "rv", "metadata-location": wanted})
    assert view.status_code == 403, view.text
    assert SECRET_TEXT.strip() not in view.text


@pytest.mark.parametrize(
    "location", ["http://127.0.0.1:9/v.metadata.json", "abfs://c@a.dfs.core.windows.net/x.json", "gs://b/x.json"]
)
def test_register_of_unconfigured_schemes_is_400(client: httpx.Client, ns: str, location: str) -> None:
    for route in ("register", "register-view"):
        response = client.post(f"/v1/local/namespaces/{ns}/{route}", json={"name": "r", "metadata-location": location})
        assert_error(response, 400, "BadRequestException", "not configured")


@pytest.mark.parametrize("version", ["99", "0", "abc", "-1"])
def test_create_with_an_unknown_format_version_is_400(client: httpx.Client, ns: str, version: str) -> None:
    body = {"name": "t", "schema": SCHEMA, "properties": {"format-version": version}}
    assert_error(client.post(tables_url(ns), json=body), 400, "BadRequestException", "Cannot create table")
