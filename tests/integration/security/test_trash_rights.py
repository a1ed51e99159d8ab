"""Kept objects keep their owners' rights (issue 25): the trash is no way around the grants.

A served proxy in ``oauth2`` mode (bootstrap admin ``root``), once on the local backend and once on Glue (moto),
drops into a seven-day trash. Principals get narrow grants; each test plays one attack and checks the
legitimate path still works:

* a reader registers a dropped table's (or view's) metadata file in its own namespace to own it, then purge it;
* a principal allowed only to drop restores the dropped table into its own namespace to read it;
* a writer takes the dropped table's storage (create with its location, a view there, a set-location
  commit, a register of another metadata file of it) so the restore fails and credentials reach the files;
* a restore is audited under both identifiers; a forged view file (current version naming no version) is 400.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import httpx
import pytest

from tests.support.aws import glue_catalog_config, moto_server
from tests.support.console import root_config
from tests.support.rest import MGMT, SCHEMA, assert_error, make_principal, ns_path, token_of
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-trash-rights"
VIEW_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


@dataclass(frozen=True)
class Served:
    backend: str
    server: ProxyProcess
    warehouse: Path

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.server.url, timeout=60, headers=headers)


@pytest.fixture(scope="module", params=["local", "glue"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with ExitStack() as stack:
        workdir = tmp_path_factory.mktemp(f"trash-rights-{request.param}")
        warehouse = workdir / "warehouse"
        warehouse.mkdir()
        if request.param == "glue":
            catalog = glue_catalog_config("local", stack.enter_context(moto_server()), warehouse.as_uri())
        else:
            catalog = f'[catalogs.local]\nkind = "local"\nwarehouse = "{warehouse.as_uri()}"\n'
        server = ProxyProcess(workdir, root_config(ROOT_SECRET, catalog)).start()
        stack.callback(server.stop)
        yield Served(request.param, server, warehouse)


@pytest.fixture
def root(served: Served) -> Iterator[httpx.Client]:
    with served.client() as anonymous:
        token = token_of(anonymous, "root", ROOT_SECRET)
    with served.client(token) as client:
        yield client


Login = Callable[..., httpx.Client]


@pytest.fixture
def login(served: Served, root: httpx.Client) -> Iterator[Login]:
    """``login(name, *grants)``: a client of a new principal holding ``grants`` (catalog ``local``)."""
    with ExitStack() as stack:

        def make(name: str, *grants: dict[str, Any]) -> httpx.Client:
            unique = f"{name}-{uuid.uuid4().hex[:8]}"
            client_id, secret = make_principal(root, unique, *grants)
            with served.client() as anonymous:
                token = token_of(anonymous, client_id, secret)
            return stack.enter_context(served.client(token))

        yield make


# Helpers ---------------------------------------------------------------------------------------------------
def fresh(root: httpx.Client, prefix: str) -> tuple[str, ...]:
    namespace = (f"{prefix}_{uuid.uuid4().hex[:8]}",)
    response = root.post("/v1/local/namespaces", json={"namespace": list(namespace)})
    assert response.status_code == 200, response.text
    return namespace


def tables(namespace: tuple[str, ...]) -> str:
    return f"/v1/local/namespaces/{ns_path(*namespace)}/tables"


def views(namespace: tuple[str, ...]) -> str:
    return f"/v1/local/namespaces/{ns_path(*namespace)}/views"


def register_url(namespace: tuple[str, ...], view: bool = False) -> str:
    return f"/v1/local/namespaces/{ns_path(*namespace)}/register" + ("-view" if view else "")


def create(http: httpx.Client, namespace: tuple[str, ...], name: str, **extra: Any) -> httpx.Response:
    return http.post(tables(namespace), json={"name": name, "schema": SCHEMA} | extra)


def created(http: httpx.Client, namespace: tuple[str, ...], name: str, **extra: Any) -> dict[str, Any]:
    response = create(http, namespace, name, **extra)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def make_view(http: httpx.Client, namespace: tuple[str, ...], name: str, **extra: Any) -> httpx.Response:
    version = {
        "version-id": 1,
        "timestamp-ms": int(time.time() * 1000),
        "schema-id": 0,
        "summary": {"engine-name": "test"},
        "representations": [{"type": "sql", "sql": "SELECT 1 AS id", "dialect": "spark"}],
        "default-namespace": list(namespace),
    }
    body = {"name": name, "schema": VIEW_SCHEMA, "view-version": version, "properties": {}} | extra
    return http.post(views(namespace), json=body)


def drop(http: httpx.Client, namespace: tuple[str, ...], name: str, view: bool = False) -> None:
    response = http.delete(f"{views(namespace) if view else tables(namespace)}/{name}")
    assert response.status_code == 204, response.text


def trash_entry(root: httpx.Client, namespace: tuple[str, ...], name: str) -> dict[str, Any]:
    listed = root.get(f"{MGMT}/catalogs/local/trash", params={"namespace": "\x1f".join(namespace)})
    assert listed.status_code == 200, listed.text
    found = [e for e in listed.json()["entries"] if e["identifier"]["name"] == name]
    assert len(found) == 1, listed.text
    return found[0]


def restore(http: httpx.Client, entry_id: str, **body: Any) -> httpx.Response:
    return http.post(f"{MGMT}/catalogs/local/trash/{entry_id}/restore", json=body)


def to(namespace: tuple[str, ...], name: str) -> dict[str, Any]:
    return {"namespace": list(namespace), "name": name}


def table_grant(privilege: str, namespace: tuple[str, ...]) -> dict[str, Any]:
    return {"privilege": privilege, "namespace": list(namespace)}


def path_of(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


# 1. A reader cannot register (and so purge) a table or view it may only read --------------------------------
def test_a_reader_cannot_register_a_dropped_tables_file_nor_purge_it_and_the_owner_restores(
    served: Served, root: httpx.Client, login: Login
) -> None:
    team, own = fresh(root, "team"), fresh(root, "mine")
    table = created(root, team, "secret_t")
    location = table["metadata-location"]
    data_dir = path_of(table["metadata"]["location"])
    reader = login("reader", table_grant("table.read", team), table_grant("all", own))
    assert reader.get(f"{tables(team)}/secret_t").json()["metadata-location"] == location
    drop(root, team, "secret_t")
    entry = trash_entry(root, team, "secret_t")

    stolen = reader.post(register_url(own), json={"name": "copy", "metadata-location": location})
    assert_error(stolen, 403, "ForbiddenException", "table.drop")
    assert reader.get(f"{tables(own)}/copy").status_code == 404
    assert trash_entry(root, team, "secret_t")["id"] == entry["id"]  # the entry was not claimed
    assert any(data_dir.rglob("*.metadata.json"))

    back = restore(root, entry["id"])
    assert back.status_code == 200, back.text
    assert root.get(f"{tables(team)}/secret_t").json()["metadata-location"] == location


def test_a_reader_cannot_register_a_dropped_views_file_and_the_owner_restores(
    served: Served, root: httpx.Client, login: Login
) -> None:
    team, own = fresh(root, "team"), fresh(root, "mine")
    assert make_view(root, team, "secret_v").status_code == 200
    reader = login("vreader", table_grant("view.read", team), table_grant("all", own))
    location = reader.get(f"{views(team)}/secret_v").json()["metadata-location"]
    drop(root, team, "secret_v", view=True)
    entry = trash_entry(root, team, "secret_v")

    stolen = reader.post(register_url(own, view=True), json={"name": "copy", "metadata-location": location})
    assert_error(stolen, 403, "ForbiddenException", "view.drop")
    assert reader.get(f"{views(own)}/copy").status_code == 404
    assert restore(root, entry["id"]).status_code == 200
    assert root.get(f"{views(team)}/secret_v").json()["metadata-location"] == location


# 2. A drop privilege does not become read and ownership ---------------------------------------------------------
def test_a_principal_that_may_only_drop_cannot_restore_or_register_elsewhere_to_read(
    served: Served, root: httpx.Client, login: Login
) -> None:
    team, own = fresh(root, "team"), fresh(root, "mine")
    location = created(root, team, "payroll")["metadata-location"]
    dropper = login("dropper", table_grant("table.drop", team), table_grant("all", own))
    drop(dropper, team, "payroll")
    entry = trash_entry(root, team, "payroll")

    assert_error(restore(dropper, entry["id"], identifier=to(own, "mine")), 403, "ForbiddenException", "table.read")
    taken = dropper.post(register_url(own), json={"name": "mine", "metadata-location": location})
    assert_error(taken, 403, "ForbiddenException", "table.read")
    assert_error(restore(dropper, entry["id"]), 403, "ForbiddenException", "table.create")  # in place: no create
    assert dropper.get(f"{tables(own)}/mine").status_code == 404
    assert trash_entry(root, team, "payroll")["id"] == entry["id"]


def test_drop_create_and_read_restore_across_namespaces_audited_under_both_identifiers(
    served: Served, root: httpx.Client, login: Login
) -> None:
    team, other = fresh(root, "team"), fresh(root, "other")
    location = created(root, team, "ledger")["metadata-location"]
    mover = login(
        "mover",
        table_grant("table.drop", team),
        table_grant("table.read", team),
        table_grant("table.create", other),
    )
    drop(root, team, "ledger")
    entry = trash_entry(root, team, "ledger")
    moved = restore(mover, entry["id"], identifier=to(other, "ledger2"))
    assert moved.status_code == 200, moved.text
    assert moved.json()["metadata-location"] == location
    source, target = f"{team[0]}.ledger", f"{other[0]}.ledger2"

    def records(prefix: str) -> list[dict[str, Any]]:
        found = root.get(f"{MGMT}/audit", params={"object": prefix, "operation": "management.restoreTrashEntry"})
        assert found.status_code == 200, found.text
        return list(found.json()["records"])

    deadline = time.monotonic() + 15
    while not (records(source) and records(target)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for record in (*records(source), *records(target)):
        assert record["decision"] == "allowed" and record["catalog"] == "local", record
        assert f"{source} as {target}" in record["reason"], record  # says what was restored as what
        assert record["reason"].count("table.drop on") == 1, record
    assert [r["object"] for r in records(source)] == [source]
    assert [r["object"] for r in records(target)] == [target]


# 3. A dropped table's storage stays its own ---------------------------------------------------------------------
def test_a_writer_cannot_take_a_dropped_tables_storage_and_the_restore_still_works(
    served: Served, root: httpx.Client, login: Login
) -> None:
    team, own = fresh(root, "team"), fresh(root, "mine")
    table = created(root, team, "kept")
    committed = root.post(  # a second metadata file of the same table
        f"{tables(team)}/kept",
        json={"requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "b"}}]},
    )
    assert committed.status_code == 200, committed.text
    older, where = table["metadata-location"], table["metadata"]["location"]
    writer = login("squatter", table_grant("all", own))
    existing = created(writer, own, "mine")
    drop(root, team, "kept")
    entry = trash_entry(root, team, "kept")

    for name, at in (("same", where), ("inside", f"{where}/data/sub")):
        assert_error(create(writer, own, name, location=at), 400, "BadRequestException", "overlaps")
    assert_error(make_view(writer, own, "v", location=where), 400, "BadRequestException", "overlaps")
    moved = writer.post(
        f"{tables(own)}/mine",
        json={
            "requirements": [{"type": "assert-table-uuid", "uuid": existing["metadata"]["table-uuid"]}],
            "updates": [{"action": "set-location", "location": where}],
        },
    )
    assert_error(moved, 400, "BadRequestException", "overlaps")
    other_file = writer.post(register_url(own), json={"name": "old", "metadata-location": older})
    assert_error(other_file, 400, "BadRequestException", "overlaps")

    back = restore(root, entry["id"])
    assert back.status_code == 200, back.text
    loaded = root.get(f"{tables(team)}/kept").json()
    assert loaded["metadata"]["properties"]["a"] == "b"
    # The restored table holds its storage again: still nobody else's.
    assert_error(create(writer, own, "later", location=where), 400, "BadRequestException", "overlaps")


def test_an_admin_registering_a_dropped_tables_file_claims_the_entry_and_its_storage(
    served: Served, root: httpx.Client, login: Login
) -> None:
    team, other = fresh(root, "team"), fresh(root, "other")
    table = created(root, team, "moved")
    drop(root, team, "moved")
    entry = trash_entry(root, team, "moved")
    registered = root.post(register_url(other), json={"name": "moved", "metadata-location": table["metadata-location"]})
    assert registered.status_code == 200, registered.text
    assert_error(restore(root, entry["id"]), 404, "NotFoundException")  # the entry is claimed
    writer = login("late", table_grant("all", other))
    where = table["metadata"]["location"]
    assert_error(create(writer, other, "again", location=where), 400, "BadRequestException", "overlaps")
    drop(root, other, "moved")  # dropped again: a new entry holds the storage, and it restores
    again = trash_entry(root, other, "moved")
    assert_error(create(writer, other, "again", location=where), 400, "BadRequestException", "overlaps")
    assert restore(root, again["id"]).status_code == 200


# 4. A forged view file is refused before it can break a page ---------------------------------------------------
def test_register_view_of_a_file_whose_current_version_names_no_version_is_400(
    served: Served, root: httpx.Client
) -> None:
    team = fresh(root, "team")
    response = make_view(root, team, "model")
    assert response.status_code == 200, response.text
    source = path_of(response.json()["metadata-location"])
    raw = source.read_bytes()
    metadata = json.loads(gzip.decompress(raw) if source.name.endswith(".gz.metadata.json") else raw)
    forged_dir = served.warehouse / team[0] / f"forged_{uuid.uuid4().hex[:6]}"
    (forged_dir / "metadata").mkdir(parents=True)
    cases = {
        "current-version-id": metadata | {"current-version-id": 99},
        "schema-id": metadata | {"versions": [v | {"schema-id": 42} for v in metadata["versions"]]},
    }
    for i, (complaint, forged) in enumerate(cases.items()):
        forged = forged | {"location": forged_dir.as_uri()}
        target = forged_dir / "metadata" / f"0000{i}-forged.metadata.json"
        target.write_text(json.dumps(forged), encoding="utf-8")
        answer = root.post(
            register_url(team, view=True), json={"name": f"forged{i}", "metadata-location": target.as_uri()}
        )
        assert_error(answer, 400, "BadRequestException", complaint)
        assert root.get(f"{views(team)}/forged{i}").status_code == 404


# 5. Entries kept before their storage was held get it at the next start -----------------------------------------
def test_an_entry_kept_by_an_older_proxy_gets_its_storage_held_at_start(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    server = ProxyProcess(tmp_path, f'[catalogs.local]\nkind = "local"\nwarehouse = "{warehouse.as_uri()}"\n').start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            team = fresh(http, "team")
            where = created(http, team, "old")["metadata"]["location"]
            drop(http, team, "old")
            entry = trash_entry(http, team, "old")
        server.stop()
        with sqlite3.connect(tmp_path / "data" / "state.db") as db:  # as an older irc-proxy left it
            assert db.execute("DELETE FROM storage_location WHERE kind = 'trash'").rowcount >= 1
        server.start()
        with httpx.Client(base_url=server.url, timeout=60) as http:

            def staged() -> httpx.Response:  # checks the location like a create, creates nothing
                return create(http, team, "squat", location=where, **{"stage-create": True})

            deadline = time.monotonic() + 15
            while staged().status_code == 200 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert_error(staged(), 400, "BadRequestException", "overlaps")
            assert restore(http, entry["id"]).status_code == 200
    finally:
        server.stop()
