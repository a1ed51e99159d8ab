"""Guarantee 3: no two live tables or views of a catalog share storage, without new errors in common flows
(a taken default location gets a unique suffix; drop-then-register of a table's own metadata works)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.security.conftest import Target
from tests.support.in_process import ServeInProcess
from tests.support.rest import SCHEMA, assert_error, create_namespace, create_table, table_url
from tests.support.server import ProxyProcess

VIEW_VERSION = {
    "version-id": 1,
    "timestamp-ms": 1_700_000_000_000,
    "schema-id": 0,
    "summary": {},
    "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}],
    "default-namespace": [],
}


def create(client: httpx.Client, ns: str, name: str, location: str) -> httpx.Response:
    return client.post(f"/v1/local/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA, "location": location})


def register(client: httpx.Client, ns: str, name: str, metadata_location: str, kind: str = "") -> httpx.Response:
    body = {"name": name, "metadata-location": metadata_location}
    return client.post(f"/v1/local/namespaces/{ns}/register{kind}", json=body)


@pytest.mark.parametrize("where", ["same", "inside", "containing"])
def test_create_overlapping_a_live_table_is_400(client: httpx.Client, ns: str, where: str) -> None:
    first = create_table(client, (ns,), "first")["metadata"]["location"]
    location = create(client, ns, "t", f"{first}-group/t").json()["metadata"]["location"]
    wanted = {"same": location, "inside": f"{location}/data/x", "containing": f"{first}-group"}[where]
    response = create(client, ns, "u", wanted)
    assert_error(response, 400, "BadRequestException", "overlaps the storage of another table or view")
    assert client.head(table_url((ns,), "u")).status_code == 404


def test_register_of_another_tables_metadata_is_refused_and_its_files_survive(
    target: Target, client: httpx.Client, ns: str
) -> None:
    created = create_table(client, (ns,), "victim")
    metadata_file = Path(created["metadata-location"].removeprefix("file://"))
    assert_error(register(client, ns, "copy", created["metadata-location"]), 400, "BadRequestException")
    stray = f"{created['metadata']['location']}/metadata/planted.metadata.json"
    assert_error(register(client, ns, "copy2", stray), 400, "BadRequestException", "overlaps")
    assert client.delete(table_url((ns,), "copy"), params={"purgeRequested": "true"}).status_code == 404
    assert metadata_file.is_file()
    assert client.get(table_url((ns,), "victim")).status_code == 200


def test_commit_moving_into_another_tables_location_is_400(client: httpx.Client, ns: str) -> None:
    victim = create_table(client, (ns,), "victim")["metadata"]["location"]
    create_table(client, (ns,), "mover")
    for update in (
        {"action": "set-location", "location": victim},
        {"action": "set-properties", "updates": {"write.data.path": f"{victim}/data"}},
    ):
        response = client.post(table_url((ns,), "mover"), json={"requirements": [], "updates": [update]})
        assert_error(response, 400, "BadRequestException", "overlaps")


def test_view_overlapping_a_table_and_register_view_copy_are_refused(client: httpx.Client, ns: str) -> None:
    table_location = create_table(client, (ns,), "t")["metadata"]["location"]
    view = {"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION | {"default-namespace": [ns]}}
    response = client.post(f"/v1/local/namespaces/{ns}/views", json=view | {"location": f"{table_location}/v"})
    assert_error(response, 400, "BadRequestException", "overlaps")
    created = client.post(f"/v1/local/namespaces/{ns}/views", json=view)
    assert created.status_code == 200, created.text
    response = register(client, ns, "v_copy", created.json()["metadata-location"], "-view")
    assert_error(response, 400, "BadRequestException", "overlaps")


def test_default_location_taken_after_rename_gets_a_unique_suffix(client: httpx.Client, ns: str) -> None:
    first = create_table(client, (ns,), "t")["metadata"]["location"]
    body = {"source": {"namespace": [ns], "name": "t"}, "destination": {"namespace": [ns], "name": "t_old"}}
    assert client.post("/v1/local/tables/rename", json=body).status_code == 204
    second = create_table(client, (ns,), "t")["metadata"]["location"]
    assert second != first and second.startswith(first + "-")
    assert client.get(table_url((ns,), "t_old")).json()["metadata"]["location"] == first


def test_default_location_with_files_left_behind_gets_a_unique_suffix(client: httpx.Client, ns: str) -> None:
    first = create_table(client, (ns,), "t")
    assert client.delete(table_url((ns,), "t")).status_code == 204  # no purge: files stay
    second = create_table(client, (ns,), "t")["metadata"]["location"]
    assert second.startswith(first["metadata"]["location"] + "-")
    # the dropped table's own metadata can still be registered by hand, under any name
    moved = register(client, ns, "t_restored", first["metadata-location"])
    assert moved.status_code == 200, moved.text
    assert moved.json()["metadata"]["table-uuid"] == first["metadata"]["table-uuid"]


def test_drop_then_register_own_metadata_under_the_same_name(client: httpx.Client, ns: str) -> None:
    created = create_table(client, (ns,), "t")
    assert client.delete(table_url((ns,), "t")).status_code == 204
    again = register(client, ns, "t", created["metadata-location"])
    assert again.status_code == 200, again.text
    assert_error(create(client, ns, "u", created["metadata"]["location"]), 400, "BadRequestException", "overlaps")


@pytest.fixture(scope="module")
def overlapping(serve_in_process: ServeInProcess) -> Iterator[httpx.Client]:
    config = "[catalogs.local]\nallow_overlapping_locations = true\n"
    with serve_in_process(config, "overlap-allowed").client(timeout=60) as http:
        yield http


def test_overlap_is_allowed_when_the_catalog_says_so(overlapping: httpx.Client) -> None:
    create_namespace(overlapping, "n")
    location = create_table(overlapping, ("n",), "t")["metadata"]["location"]
    assert create(overlapping, "n", "u", f"{location}/inner").status_code == 200


def test_tables_from_before_the_index_are_recorded_at_start(tmp_path: Path) -> None:
    """An upgraded catalog: tables created before the occupancy index are found by the start-up backfill."""
    server = ProxyProcess(tmp_path).start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            create_namespace(http, "old")
            location = create_table(http, ("old",), "t")["metadata"]["location"]
    finally:
        server.stop()
    state = tmp_path / "data" / "state.db"
    with sqlite3.connect(state) as db:  # as an irc-proxy without the index left it
        db.execute("DELETE FROM storage_location")
        db.execute("DELETE FROM storage_location_index")
    server.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with sqlite3.connect(state) as db:
                if db.execute("SELECT count(*) FROM storage_location_index").fetchone()[0]:
                    break
            time.sleep(0.2)
        with httpx.Client(base_url=server.url, timeout=60) as http:
            assert_error(create(http, "old", "u", f"{location}/inner"), 400, "BadRequestException", "overlaps")
    finally:
        server.stop()


@pytest.mark.parametrize("where", ["warehouse", "other_namespace"])
def test_a_table_cannot_take_the_warehouse_or_a_namespace_directory(
    target: Target, client: httpx.Client, ns: str, where: str
) -> None:
    """Otherwise one writer could hold every table created there later and block everybody's CREATE TABLE."""
    other = f"{ns}_other"
    create_namespace(client, other)
    wanted = {"warehouse": target.warehouse.as_uri(), "other_namespace": f"{target.warehouse.as_uri()}/{other}"}[where]
    assert_error(create(client, ns, "grab", wanted), 400, "BadRequestException")
    body = {"name": "grab_view", "schema": SCHEMA, "view-version": VIEW_VERSION, "location": wanted}
    assert_error(client.post(f"/v1/local/namespaces/{ns}/views", json=body), 400, "BadRequestException")
    create_table(client, (ns,), "t")
    update = {"action": "set-location", "location": wanted}
    response = client.post(table_url((ns,), "t"), json={"requirements": [], "updates": [update]})
    assert_error(response, 400, "BadRequestException")
    assert create_table(client, (other,), "still_possible")["metadata"]["location"].startswith(wanted)
