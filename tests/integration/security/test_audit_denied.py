"""Guarantee 12: every 403 is audited as ``denied`` with its reason, ``/v1/config`` included.

Refusals come from three places: an operation's authorization step (a missing grant), the admin
API (not an administrator) and a handler that refuses after authorization allowed the call (a
table location outside the catalog's allowed locations). Each must leave a ``denied`` record.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from irc_proxy.handling.security.authn import hash_secret
from tests.support.aws import glue_catalog_config
from tests.support.rest import MGMT, SCHEMA, assert_error, bearer_client, table_url
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-audit-denied"


@dataclass(frozen=True)
class Audited:
    server: ProxyProcess
    outside: Path

    def root(self) -> httpx.Client:
        return bearer_client(self.server.url, "root", ROOT_SECRET)


def _serve(workdir: Path, catalog: str) -> Iterator[Audited]:
    config = (
        f'[auth]\nmode = "oauth2"\nadmins = ["root"]\ngrants_cache_seconds = 0\n'
        f'[[auth.clients]]\nid = "root"\nsecret_hash = "{hash_secret(ROOT_SECRET)}"\n{catalog}'
    )
    server = ProxyProcess(workdir, config).start()
    outside = workdir / "outside"
    outside.mkdir()
    try:
        with bearer_client(server.url, "root", ROOT_SECRET) as root:
            assert root.post("/v1/local/namespaces", json={"namespace": ["sales"]}).status_code == 200
            created = root.post("/v1/local/namespaces/sales/tables", json={"name": "orders", "schema": SCHEMA})
            assert created.status_code == 200, created.text
        yield Audited(server, outside)
    finally:
        server.stop()


@pytest.fixture(scope="module", params=["local", "glue"])
def audited(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Audited]:
    """Once with a local catalog, once with Glue on the module's moto."""
    workdir = tmp_path_factory.mktemp(f"audit-denied-{request.param}")
    warehouse = workdir / "warehouse"
    warehouse.mkdir()
    if request.param == "local":
        yield from _serve(workdir, f'[catalogs.local]\nwarehouse = "{warehouse.as_uri()}"\n')
        return
    moto = request.getfixturevalue("moto")
    yield from _serve(workdir, glue_catalog_config("local", moto, warehouse.as_uri()))


def _principal(audited: Audited, name: str, *grants: dict[str, Any]) -> httpx.Client:
    with audited.root() as root:
        if root.post(f"{MGMT}/roles", json={"name": f"{name}-role"}).status_code == 201:
            for grant in grants:
                response = root.post(f"{MGMT}/roles/{name}-role/grants", json={"catalog": "local"} | grant)
                assert response.status_code == 201, response.text
        root.delete(f"{MGMT}/principals/{name}")
        response = root.post(f"{MGMT}/principals", json={"name": name, "roles": [f"{name}-role"]})
        assert response.status_code == 201, response.text
    credentials = response.json()["credentials"]
    return bearer_client(audited.server.url, credentials["client-id"], credentials["client-secret"])


def _record(audited: Audited, response: httpx.Response, principal: str) -> dict[str, Any]:
    """The audit record of ``response`` (records are written off the request path: wait for it)."""
    request_id = response.headers["x-request-id"]
    deadline = time.monotonic() + 15
    with audited.root() as root:
        while time.monotonic() < deadline:
            listed = root.get(f"{MGMT}/audit", params={"principal": principal, "limit": "500"})
            assert listed.status_code == 200, listed.text
            for record in listed.json()["records"]:
                if record["request_id"] == request_id:
                    return dict(record)
            time.sleep(0.2)
    raise AssertionError(f"no audit record for request {request_id}")


def test_config_without_catalog_use_is_audited_as_denied(audited: Audited) -> None:
    with _principal(audited, "nobody") as nobody:
        refused = nobody.get("/v1/config")
    assert_error(refused, 403, "ForbiddenException", "catalog.use")
    record = _record(audited, refused, "nobody")
    assert (record["operation"], record["status"], record["decision"]) == ("getConfig", 403, "denied")
    assert "catalog.use" in record["reason"] and "local" in record["reason"]


def test_config_with_a_grant_is_audited_as_allowed_with_its_reason(audited: Audited) -> None:
    with _principal(audited, "reader", {"privilege": "table.read", "namespace": ["sales"]}) as reader:
        answered = reader.get("/v1/config")
    assert answered.status_code == 200
    record = _record(audited, answered, "reader")
    assert record["decision"] == "allowed" and record["reason"]


def test_forbidden_table_write_is_audited_as_denied(audited: Audited) -> None:
    with _principal(audited, "reader", {"privilege": "table.read", "namespace": ["sales"]}) as reader:
        body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"x": "y"}}]}
        refused = reader.post(table_url(("sales",), "orders"), json=body)
    assert_error(refused, 403, "ForbiddenException", "table.write")
    record = _record(audited, refused, "reader")
    assert (record["operation"], record["decision"]) == ("updateTable", "denied")
    assert "table.write" in record["reason"]


def test_admin_api_refusal_is_audited_as_denied(audited: Audited) -> None:
    with _principal(audited, "reader", {"privilege": "table.read", "namespace": ["sales"]}) as reader:
        refused = reader.get(f"{MGMT}/roles")
    assert_error(refused, 403, "ForbiddenException", "administrators only")
    record = _record(audited, refused, "reader")
    assert record["decision"] == "denied" and "administrators only" in record["reason"]


def test_handler_refusal_after_authorization_is_audited_as_denied(audited: Audited) -> None:
    """``table.create`` is granted, but the location lies outside the warehouse: the handler refuses."""
    grant = {"privilege": "table.create", "namespace": ["sales"]}
    with _principal(audited, "creator", grant) as creator:
        body = {"name": "escapee", "schema": SCHEMA, "location": audited.outside.as_uri()}
        refused = creator.post("/v1/local/namespaces/sales/tables", json=body)
    assert_error(refused, 403, "ForbiddenException")
    record = _record(audited, refused, "creator")
    assert (record["operation"], record["status"], record["decision"]) == ("createTable", 403, "denied")
    assert "table.create" in record["reason"]  # what authorization allowed ...
    assert str(audited.outside) in record["reason"] or "allowed locations" in record["reason"]  # ... and the refusal
