"""Authorization on a federated prefix: the front's grants decide, and upstream listings are filtered."""

from __future__ import annotations

import pytest

from irc_proxy.handling.security.authn import hash_secret
from tests.support.federation import rest_catalog
from tests.support.rest import MGMT, SCHEMA, assert_error, bearer_client
from tests.support.server import ProxyProcess, Serve

ROOT_SECRET = "front-root-secret"


@pytest.fixture(scope="module")
def front(remote: ProxyProcess, serve: Serve) -> ProxyProcess:
    config = (
        f'[auth]\nmode = "oauth2"\nadmins = ["root"]\n[[auth.clients]]\nid = "root"\n'
        f'secret_hash = "{hash_secret(ROOT_SECRET)}"\nprincipal = "root"\n' + rest_catalog("up", remote.url)
    )
    return serve(config, "front-authz")


def test_grants_of_the_front_apply_to_forwarded_operations(front: ProxyProcess) -> None:
    with bearer_client(front.url, "root", ROOT_SECRET) as root:
        for ns in ("open", "closed"):
            assert root.post("/v1/up/namespaces", json={"namespace": [ns]}).status_code == 200
            created = root.post(f"/v1/up/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA})
            assert created.status_code == 200, created.text
        assert root.post(f"{MGMT}/roles", json={"name": "fed-reader"}).status_code == 201
        grant = {"catalog": "up", "namespace": ["open"], "privilege": "table.read"}
        assert root.post(f"{MGMT}/roles/fed-reader/grants", json=grant).status_code == 201
        made = root.post(f"{MGMT}/principals", json={"name": "fed-user", "roles": ["fed-reader"]}).json()
    with bearer_client(front.url, "fed-user", made["credentials"]["client-secret"]) as user:
        assert user.get("/v1/up/namespaces/open/tables/t").status_code == 200
        assert_error(user.get("/v1/up/namespaces/closed/tables/t"), 403, "ForbiddenException", "table.read")
        body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
        assert_error(user.post("/v1/up/namespaces/open/tables/t", json=body), 403, "ForbiddenException")
        listed = user.get("/v1/up/namespaces")
        assert listed.status_code == 200, listed.text
        assert listed.json()["namespaces"] == [["open"]]
        tables = user.get("/v1/up/namespaces/open/tables")
        assert tables.json()["identifiers"] == [{"namespace": ["open"], "name": "t"}]
