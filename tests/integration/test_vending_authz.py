"""Vended credentials follow the caller's privileges: read-only, read-write, or none (``credentials.*``).

Glue and S3 on moto's server, STS behind the recording ``FakeSts`` front, the proxy in ``oauth2`` mode
with grants made through the admin API.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from irc_proxy.handling.security.authn import hash_secret
from tests.support.fake_sts import FakeSts
from tests.support.iam_policy import allowed, object_arn
from tests.support.in_process import InProcessProxy, ServeInProcess
from tests.support.rest import MGMT, SCHEMA, assert_error, token_of
from tests.support.vending import DELEGATION, prepare_vending, vending_catalog_config

BUCKET = "irc-vending-authz"
CATALOG = "vend"
ROOT_SECRET = "root-secret-vending"
TABLE = f"/v1/{CATALOG}/namespaces/shop/tables/orders"


@pytest.fixture(scope="module")
def proxy(moto: str, sts: FakeSts, serve_in_process: ServeInProcess) -> InProcessProxy:
    prepare_vending(moto, BUCKET)
    config = (
        f'[auth]\nmode = "oauth2"\nadmins = ["root"]\n[[auth.clients]]\nid = "root"\n'
        f'secret_hash = "{hash_secret(ROOT_SECRET)}"\nprincipal = "root"\n'
    )
    return serve_in_process(config + vending_catalog_config(CATALOG, moto, sts.url, BUCKET), "vend-authz")


@pytest.fixture(scope="module")
def callers(proxy: InProcessProxy) -> Iterator[dict[str, httpx.Client]]:
    """Clients of principals with different grants on namespace ``shop`` (table ``orders`` exists)."""

    def bearer_client(client_id: str, secret: str) -> httpx.Client:
        with proxy.client() as plain:
            token = token_of(plain, client_id, secret)
        return proxy.client(headers={"Authorization": f"Bearer {token}"}, timeout=60)

    root = bearer_client("root", ROOT_SECRET)
    assert root.post(f"/v1/{CATALOG}/namespaces", json={"namespace": ["shop"]}).status_code == 200
    created = root.post(f"/v1/{CATALOG}/namespaces/shop/tables", json={"name": "orders", "schema": SCHEMA})
    assert created.status_code == 200, created.text
    profiles = {
        "reader": ["table.read", "credentials.read"],
        "writer": ["table.write", "credentials.write"],
        "plain": ["table.read"],
        "keys-only": ["credentials.write"],
    }
    clients = {"root": root}
    for name, privileges in profiles.items():
        assert root.post(f"{MGMT}/roles", json={"name": name}).status_code == 201
        for privilege in privileges:
            grant = {"catalog": CATALOG, "namespace": ["shop"], "privilege": privilege}
            assert root.post(f"{MGMT}/roles/{name}/grants", json=grant).status_code == 201
        principal = root.post(f"{MGMT}/principals", json={"name": name, "roles": [name]}).json()
        clients[name] = bearer_client(name, principal["credentials"]["client-secret"])
    yield clients
    for session in clients.values():
        session.close()


def policy_of(sts: FakeSts) -> dict[str, Any]:
    [call] = sts.assume_role_calls()
    policy: dict[str, Any] = json.loads(call["Policy"])
    return policy


def test_reader_gets_read_only_credentials(callers: dict[str, httpx.Client], sts: FakeSts) -> None:
    sts.reset()
    response = callers["reader"].get(TABLE, headers=DELEGATION)
    assert response.status_code == 200, response.text
    assert response.json()["storage-credentials"]
    [call] = sts.assume_role_calls()
    assert call["RoleSessionName"] == "irc-proxy@reader"
    policy = json.loads(call["Policy"])
    data_file = object_arn(BUCKET, "wh/shop/orders/data/part-0.parquet")
    assert allowed(policy, "s3:GetObject", data_file)
    assert not allowed(policy, "s3:PutObject", data_file) and not allowed(policy, "s3:DeleteObject", data_file)


def test_writer_gets_read_write_credentials(callers: dict[str, httpx.Client], sts: FakeSts) -> None:
    sts.reset()
    response = callers["writer"].get(f"{TABLE}/credentials")
    assert response.status_code == 200, response.text
    assert response.json()["storage-credentials"][0]["config"]["s3.session-token"]
    data_file = object_arn(BUCKET, "wh/shop/orders/data/part-0.parquet")
    policy = policy_of(sts)
    assert allowed(policy, "s3:PutObject", data_file) and allowed(policy, "s3:GetObject", data_file)


def test_without_a_delegation_privilege_a_load_has_no_credentials(
    callers: dict[str, httpx.Client], sts: FakeSts
) -> None:
    sts.reset()
    loaded = callers["plain"].get(TABLE, headers=DELEGATION)
    assert loaded.status_code == 200 and "storage-credentials" not in loaded.json()
    assert not any(key.startswith("s3.session") for key in loaded.json().get("config", {}))
    refused = callers["plain"].get(f"{TABLE}/credentials")
    assert_error(refused, 403, "ForbiddenException", "credentials.read on table vend.shop.orders")
    assert sts.assume_role_calls() == []


def test_credentials_privilege_alone_does_not_reach_the_data(callers: dict[str, httpx.Client], sts: FakeSts) -> None:
    sts.reset()
    assert_error(callers["keys-only"].get(f"{TABLE}/credentials"), 403, "ForbiddenException", "table.read")
    assert_error(callers["keys-only"].get(TABLE, headers=DELEGATION), 403, "ForbiddenException", "table.read")
    assert sts.assume_role_calls() == []
