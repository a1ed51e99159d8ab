"""Authorization against a real proxy: grants through the admin API, inheritance, filtering, no leaks, audit."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from irc_proxy.handling.security.authn import hash_secret
from tests.support.rest import (
    MGMT,
    assert_error,
    bearer_client,
    create_table,
    issue_token,
    make_principal,
    ns_path,
    table_url,
)
from tests.support.server import ProxyProcess, Serve

ROOT_SECRET = "root-secret-for-tests"
CONFIG = f'''
[auth]
mode = "oauth2"
admins = ["root"]
grants_cache_seconds = 0.5
[[auth.clients]]
id = "root"
secret_hash = "{hash_secret(ROOT_SECRET)}"
principal = "root"
'''


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "authz")


@pytest.fixture(scope="module")
def root(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with bearer_client(proxy.url, "root", ROOT_SECRET) as client:
        for levels in (["sales"], ["sales", "eu"], ["sales", "eu", "de"], ["salesforce"], ["secret"], ["hr"]):
            assert client.post("/v1/local/namespaces", json={"namespace": levels}).status_code == 200
        for namespace, name in ((("sales",), "orders"), (("sales", "eu", "de"), "deep"), (("secret",), "payroll")):
            create_table(client, namespace, name)
        for namespace, name in ((("salesforce",), "leads"), (("hr",), "people"), (("hr",), "salaries")):
            create_table(client, namespace, name)
        yield client


@pytest.fixture(scope="module")
def reader(proxy: ProxyProcess, root: httpx.Client) -> Iterator[httpx.Client]:
    """``table.read`` on namespace ``sales`` (so on everything beneath it) and nothing else."""
    credentials = make_principal(root, "reader", {"privilege": "table.read", "namespace": ["sales"]})
    with bearer_client(proxy.url, *credentials) as client:
        yield client


def append_commit(client: httpx.Client, namespace: tuple[str, ...], name: str) -> httpx.Response:
    body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"touched": "yes"}}]}
    return client.post(table_url(namespace, name), json=body)


def test_reader_reads_but_cannot_write_drop_or_create(reader: httpx.Client) -> None:
    assert reader.get(table_url(("sales",), "orders")).status_code == 200
    assert reader.head(table_url(("sales",), "orders")).status_code == 204
    denied = append_commit(reader, ("sales",), "orders")
    assert_error(denied, 403, "ForbiddenException", "table.write on table local.sales.orders")
    assert "reader" in denied.json()["error"]["message"]
    assert_error(reader.delete(table_url(("sales",), "orders")), 403, "ForbiddenException", "table.drop")
    created = reader.post(
        "/v1/local/namespaces/sales/tables", json={"name": "x", "schema": {"type": "struct", "fields": []}}
    )
    assert_error(created, 403, "ForbiddenException", "table.create on namespace local.sales")
    dropped = reader.delete(f"/v1/local/namespaces/{ns_path('sales', 'eu', 'de')}")
    assert_error(dropped, 403, "ForbiddenException", "namespace.drop")
    renamed = reader.post(
        "/v1/local/tables/rename",
        json={
            "source": {"namespace": ["sales"], "name": "orders"},
            "destination": {"namespace": ["sales"], "name": "o2"},
        },
    )
    assert_error(renamed, 403, "ForbiddenException", "table.drop on table local.sales.orders")


def test_grant_on_a_namespace_is_inherited_by_nested_namespaces_only(reader: httpx.Client) -> None:
    assert reader.get(table_url(("sales", "eu", "de"), "deep")).status_code == 200
    # A sibling whose name merely starts with "sales" inherits nothing.
    assert_error(reader.get(table_url(("salesforce",), "leads")), 403, "ForbiddenException", "table.read")


def test_denied_and_missing_objects_look_the_same(reader: httpx.Client) -> None:
    """Without a grant, an existing and a missing object answer alike; with one, missing is a 404."""
    existing = reader.get(table_url(("secret",), "payroll"))
    missing = reader.get(table_url(("secret",), "nothing"))
    missing_ns = reader.get(table_url(("no-such-ns",), "payroll"))
    for response in (existing, missing, missing_ns):
        assert_error(response, 403, "ForbiddenException")
    assert existing.json()["error"]["message"].replace("payroll", "X") == missing.json()["error"]["message"].replace(
        "nothing", "X"
    )
    assert reader.head(table_url(("secret",), "payroll")).status_code == 403
    assert reader.head(table_url(("secret",), "nothing")).status_code == 403
    assert_error(reader.get(table_url(("sales",), "nothing")), 404, "NoSuchTableException")


def test_a_metadata_table_probe_of_a_readable_table_is_missing_not_forbidden(
    proxy: ProxyProcess, root: httpx.Client
) -> None:
    """Spark loads ``hr.people.files`` as a table first and reads the metadata table only after a 404: a caller
    who may read ``hr.people`` gets that 404; one who may not keeps the 403."""
    credentials = make_principal(root, "one-table", {"privilege": "table.read", "namespace": ["hr"], "table": "people"})
    with bearer_client(proxy.url, *credentials) as one_table:
        for probe in ("files", "snapshots", "all_manifests", "branch_main", "tag_v1", "snapshot_id_42"):
            response = one_table.get(table_url(("hr", "people"), probe))
            assert_error(response, 404, "NoSuchTableException", "through table hr.people")
            assert one_table.head(table_url(("hr", "people"), probe)).status_code == 404
        # Not a metadata-table name, or a table the caller may not read: still refused.
        assert_error(one_table.get(table_url(("hr", "people"), "other")), 403, "ForbiddenException")
        assert_error(one_table.get(table_url(("hr", "salaries"), "files")), 403, "ForbiddenException")
        assert_error(one_table.get(table_url(("secret", "payroll"), "files")), 403, "ForbiddenException")
        assert one_table.get(table_url(("hr",), "people")).status_code == 200


def test_listings_show_only_what_the_caller_may_see(proxy: ProxyProcess, root: httpx.Client) -> None:
    credentials = make_principal(
        root,
        "analyst",
        {"privilege": "table.read", "namespace": ["hr"], "table": "people"},
        {"privilege": "namespace.use", "namespace": ["sales", "eu"]},
    )
    with bearer_client(proxy.url, *credentials) as analyst:
        top = analyst.get("/v1/local/namespaces")
        assert top.status_code == 200, top.text
        assert sorted(top.json()["namespaces"]) == [["hr"], ["sales"]]
        children = analyst.get("/v1/local/namespaces", params={"parent": "sales"})
        assert children.json()["namespaces"] == [["sales", "eu"]]
        tables = analyst.get("/v1/local/namespaces/hr/tables")
        assert tables.status_code == 200 and tables.json()["identifiers"] == [{"namespace": ["hr"], "name": "people"}]
        assert_error(analyst.get("/v1/local/namespaces/secret/tables"), 403, "ForbiddenException", "table.list")
        assert_error(analyst.get(table_url(("hr",), "salaries")), 403, "ForbiddenException")
    # The list privilege shows everything.
    assert len(root.get("/v1/local/namespaces/hr/tables").json()["identifiers"]) == 2


def test_creating_missing_parents_needs_create_on_each(proxy: ProxyProcess, root: httpx.Client) -> None:
    credentials = make_principal(root, "builder", {"privilege": "namespace.create", "namespace": ["hr", "teams"]})
    with bearer_client(proxy.url, *credentials) as builder:
        # hr:teams does not exist: creating it (as a missing parent) needs namespace.create on hr.
        response = builder.post("/v1/local/namespaces", json={"namespace": ["hr", "teams", "blue"]})
        assert_error(response, 403, "ForbiddenException", "namespace.create on namespace local.hr")
        assert root.get(f"/v1/local/namespaces/{ns_path('hr', 'teams')}").status_code == 404
        assert root.post("/v1/local/namespaces", json={"namespace": ["hr", "teams"]}).status_code == 200
        response = builder.post("/v1/local/namespaces", json={"namespace": ["hr", "teams", "blue", "x"]})
        assert response.status_code == 200, response.text  # hr:teams:blue created on the way, inherited grant


def test_grants_and_revokes_take_effect(proxy: ProxyProcess, root: httpx.Client) -> None:
    credentials = make_principal(root, "writer", {"privilege": "table.write", "namespace": ["hr"]})
    with bearer_client(proxy.url, *credentials) as writer:
        assert append_commit(writer, ("hr",), "people").status_code == 200
        assert writer.get(table_url(("hr",), "people")).status_code == 200  # write implies read
        grants = root.get(f"{MGMT}/roles/writer-role/grants").json()["grants"]
        assert [(g["privilege"], g["type"], g["namespace"]) for g in grants] == [("table.write", "namespace", ["hr"])]
        assert root.delete(f"{MGMT}/roles/writer-role/grants/{grants[0]['id']}").status_code == 204
        assert_error(append_commit(writer, ("hr",), "people"), 403, "ForbiddenException")


def test_admin_api_is_for_admins_only(proxy: ProxyProcess, reader: httpx.Client) -> None:
    assert_error(reader.get(f"{MGMT}/principals"), 403, "ForbiddenException", "administrators only")
    assert_error(reader.post(f"{MGMT}/roles", json={"name": "mine"}), 403, "ForbiddenException")
    anonymous = httpx.get(f"{proxy.url}{MGMT}/roles", timeout=30)
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Bearer")


def test_admin_api_validates_input(root: httpx.Client) -> None:
    for reserved in ("irc-proxy", "anonymous"):
        assert_error(root.post(f"{MGMT}/principals", json={"name": reserved}), 400, "BadRequestException", "reserved")
    assert root.post(f"{MGMT}/roles", json={"name": "v-role"}).status_code == 201
    assert_error(root.post(f"{MGMT}/roles", json={"name": "v-role"}), 409, "AlreadyExistsException")
    bad = root.post(f"{MGMT}/roles/v-role/grants", json={"catalog": "local", "privilege": "table.fly"})
    assert_error(bad, 400, "BadRequestException", "Unknown privilege")
    bad = root.post(
        f"{MGMT}/roles/v-role/grants",
        json={"catalog": "local", "privilege": "namespace.drop", "namespace": ["a"], "table": "t"},
    )
    assert_error(bad, 400, "BadRequestException", "cannot be granted on a table")
    missing = root.post(f"{MGMT}/roles/v-role/grants", json={"catalog": "nope", "privilege": "table.read"})
    assert_error(missing, 404, "NoSuchWarehouseException")
    assert_error(
        root.post(f"{MGMT}/roles/nope/grants", json={"catalog": "local", "privilege": "all"}), 404, "NotFoundException"
    )
    assert_error(root.get(f"{MGMT}/principals/nobody"), 404, "NotFoundException")
    assert_error(root.post(f"{MGMT}/principals", json={"name": "p", "roles": ["nope"]}), 400, "BadRequestException")
    assert_error(root.post(f"{MGMT}/principals", json={"name": ""}), 400, "BadRequestException")
    assert_error(root.put(f"{MGMT}/roles"), 405, "MethodNotAllowedException")


def test_rotated_credentials_replace_the_old_secret(proxy: ProxyProcess, root: httpx.Client) -> None:
    client_id, old = make_principal(root, "rotating")
    rotated = root.post(f"{MGMT}/principals/rotating/rotate-credentials", headers={"Content-Type": "application/json"})
    assert rotated.status_code == 200
    new = rotated.json()["credentials"]["client-secret"]
    data = {"grant_type": "client_credentials", "client_id": client_id}
    refused = httpx.post(f"{proxy.url}/v1/oauth/tokens", data=data | {"client_secret": old}, timeout=30)
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
    assert issue_token(proxy.url, client_id, new)
    assert root.delete(f"{MGMT}/principals/rotating").status_code == 204
    gone = httpx.post(f"{proxy.url}/v1/oauth/tokens", data=data | {"client_secret": new}, timeout=30)
    assert gone.status_code == 401


def test_denied_and_allowed_calls_are_audited(root: httpx.Client, reader: httpx.Client) -> None:
    denied = append_commit(reader, ("sales",), "orders")
    allowed = reader.get(table_url(("sales",), "orders"))
    ids = {denied.headers["x-request-id"]: "denied", allowed.headers["x-request-id"]: "allowed"}
    deadline = time.monotonic() + 15
    found: dict[str, dict[str, Any]] = {}
    while time.monotonic() < deadline and len(found) < 2:
        records = root.get(f"{MGMT}/audit", params={"principal": "reader", "limit": "100"}).json()["records"]
        found = {r["request_id"]: r for r in records if r["request_id"] in ids}
        time.sleep(0.2)
    assert {rid: r["decision"] for rid, r in found.items()} == ids
    denied_record = found[denied.headers["x-request-id"]]
    assert denied_record["status"] == 403 and "missing table.write" in denied_record["reason"]
    assert denied_record["operation"] == "updateTable" and denied_record["principal"] == "reader"
    assert (
        "table.read on namespace local.sales via role reader-role" in found[allowed.headers["x-request-id"]]["reason"]
    )
    assert_error(root.get(f"{MGMT}/audit", params={"since": "yesterday"}), 400, "BadRequestException")
    admin_calls = root.get(f"{MGMT}/audit", params={"principal": "root", "object": "roles/reader-role"}).json()
    assert "management.addGrant" in {r["operation"] for r in admin_calls["records"]}


def test_config_needs_some_grant_in_the_catalog(proxy: ProxyProcess, root: httpx.Client, reader: httpx.Client) -> None:
    assert reader.get("/v1/config").status_code == 200
    client_id, secret = make_principal(root, "nobody")
    with bearer_client(proxy.url, client_id, secret) as nobody:
        assert_error(nobody.get("/v1/config"), 403, "ForbiddenException", "catalog.use")
        assert_error(nobody.get("/v1/local/namespaces"), 403, "ForbiddenException", "namespace.list")


def test_cli_manages_grants_in_the_same_database(proxy: ProxyProcess, root: httpx.Client) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "irc_proxy", *args, "--config", str(proxy.config_path)]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    assert cli("roles", "create", "cli-role").returncode == 0
    added = cli("grants", "add", "cli-role", "view.read", "--catalog", "local", "--namespace", "sales.eu", "--json")
    assert added.returncode == 0, added.stderr
    assert '"namespace": [\n    "sales",\n    "eu"\n  ]' in added.stdout
    assert cli("grants", "add", "cli-role", "table.fly", "--catalog", "local").returncode == 2
    refused = cli("grants", "add", "missing-role", "all", "--catalog", "local")
    assert refused.returncode == 1 and "Role does not exist" in refused.stderr
    grants = root.get(f"{MGMT}/roles/cli-role").json()["grants"]
    assert [(g["privilege"], g["namespace"]) for g in grants] == [("view.read", ["sales", "eu"])]
    created = cli("principals", "create", "cli-user", "--role", "cli-role")
    assert created.returncode == 0 and "client-secret" in created.stdout
    listed = cli("principals", "list")
    assert '"cli-user"' in listed.stdout and '"cli-role"' in listed.stdout


def test_creators_may_ask_whether_what_they_create_exists(proxy: ProxyProcess, root: httpx.Client) -> None:
    """Spark checks existence before CREATE TABLE / CREATE NAMESPACE IF NOT EXISTS / DROP TABLE."""
    credentials = make_principal(
        root,
        "creator",
        {"privilege": "table.create", "namespace": ["hr"]},
        {"privilege": "namespace.create", "namespace": ["hr"]},
    )
    with bearer_client(proxy.url, *credentials) as creator:
        assert creator.head(table_url(("hr",), "new_table")).status_code == 404
        assert creator.head(table_url(("hr",), "people")).status_code == 204
        assert creator.head(f"/v1/local/namespaces/{ns_path('hr', 'new_ns')}").status_code == 404
        assert creator.get(table_url(("hr",), "people")).status_code == 403  # asking is not reading
        assert creator.head(table_url(("sales",), "orders")).status_code == 403
