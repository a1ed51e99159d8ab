"""Dropped tables and views go to the trash and come back, on every backend whose tables the proxy holds
(a REST-federated catalog's drops happen upstream). Expiry, purge and replicas: tests/integration/test_trash.py."""

from __future__ import annotations

import httpx
import pytest

from tests.behaviour.test_views import create_view, replace, view_url
from tests.support.rest import assert_error, commit, create_namespace, create_table, snapshot, table_url

TRASH = "/management/v1/catalogs/local/trash"


def entry_of(client: httpx.Client, namespace: str, name: str) -> dict[str, object]:
    entries = client.get(TRASH, params={"namespace": namespace}).json()["entries"]
    found = [e for e in entries if e["identifier"] == {"namespace": [namespace], "name": name}]
    assert len(found) == 1, entries
    return found[0]


@pytest.mark.needs("trash")
def test_a_dropped_table_is_kept_and_restored_with_its_history(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    created = create_table(client, (ns_name,), "t")
    url = table_url((ns_name,), "t")
    location = created["metadata"]["location"]
    commit(
        client,
        url,
        {"action": "add-snapshot", "snapshot": snapshot(1, None, 1, location)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1},
    )
    committed = client.get(url).json()
    assert client.delete(url, params={"purgeRequested": "true"}).status_code == 204
    assert client.head(url).status_code == 404
    entry = entry_of(client, ns_name, "t")
    assert entry["metadata-location"] == committed["metadata-location"]
    assert entry["purge-requested"] is True and entry["kind"] == "table"

    create_table(client, (ns_name,), "t")  # the name is free at once; restoring over it is a conflict
    assert_error(client.post(f"{TRASH}/{entry['id']}/restore", json={}), 409, "AlreadyExistsException")
    target = {"identifier": {"namespace": [ns_name], "name": "back"}}
    restored = client.post(f"{TRASH}/{entry['id']}/restore", json=target)
    assert restored.status_code == 200, restored.text
    loaded = client.get(table_url((ns_name,), "back")).json()
    assert loaded["metadata-location"] == committed["metadata-location"]
    assert loaded["metadata"]["refs"]["main"]["snapshot-id"] == 1
    assert client.get(TRASH, params={"namespace": ns_name}).json()["entries"] == []


@pytest.mark.needs("trash")
def test_trash_errors(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    assert client.delete(table_url((ns_name,), "t")).status_code == 204
    entry = entry_of(client, ns_name, "t")
    missing = {"identifier": {"namespace": [f"{ns_name}_missing"], "name": "t"}}
    assert_error(client.post(f"{TRASH}/{entry['id']}/restore", json=missing), 404, "NoSuchNamespaceException")
    assert_error(client.post(f"{TRASH}/nope/restore", json={}), 404, "NotFoundException")
    assert client.delete(f"{TRASH}/{entry['id']}").status_code == 204
    assert_error(client.delete(f"{TRASH}/{entry['id']}"), 404, "NotFoundException")
    assert_error(client.get("/management/v1/catalogs/nope/trash"), 404, "NoSuchWarehouseException")


@pytest.mark.needs("trash")
def test_a_dropped_view_is_kept_and_restored_with_every_version(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    assert create_view(client, (ns_name,), "v").status_code == 200
    url = view_url((ns_name,), "v")
    assert replace(client, url, "select 2 as id").status_code == 200
    before = client.get(url).json()
    assert client.delete(url).status_code == 204
    assert_error(client.get(url), 404, "NoSuchViewException")
    entry = entry_of(client, ns_name, "v")
    assert entry["kind"] == "view" and entry["metadata-location"] == before["metadata-location"]

    assert create_view(client, (ns_name,), "v").status_code == 200  # the name is free at once
    assert_error(client.post(f"{TRASH}/{entry['id']}/restore", json={}), 409, "AlreadyExistsException")
    assert client.delete(url).status_code == 204
    restored = client.post(f"{TRASH}/{entry['id']}/restore", json={})
    assert restored.status_code == 200, restored.text
    assert restored.json()["kind"] == "view"
    assert client.get(url).json() == before


@pytest.mark.needs("trash")
def test_non_ascii_digits_in_paging_are_a_400_not_a_500(client: httpx.Client) -> None:
    for params in ({"page-size": "\u00b2"}, {"page-token": "\u00b2"}, {"page-size": "\u0663"}):
        assert_error(client.get(TRASH, params=params), 400, "BadRequestException", "page-size")
    for limit in ("\u00b2", "1" * 5000):  # int() refuses more than 4,300 digits
        assert_error(client.get("/management/v1/audit", params={"limit": limit}), 400, "BadRequestException")
