"""A prefix federated to a remote irc-proxy (OAuth2 on): forwarding, config, errors, the ``:`` mapping."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.federation import (
    FRONT_SECRET,
    USER_CLIENT,
    USER_SECRET,
    front_config,
    rest_catalog,
    start_front,
)
from tests.support.federation import token as remote_token
from tests.support.rest import SCHEMA, assert_error, ns_path
from tests.support.server import ProxyProcess, Serve


@pytest.fixture(scope="module")
def front(remote: ProxyProcess, serve: Serve) -> ProxyProcess:
    config = front_config(
        rest_catalog("remote", remote.url),
        rest_catalog("flat", remote.url, nested_namespaces="mapped"),
        rest_catalog("mine", remote.url, auth={"mode": "none", "forward_caller_token": True}),
    )
    return serve(config, "front")


@pytest.fixture
def http(front: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=front.url, timeout=30) as client:
        yield client


@pytest.fixture
def direct(remote: ProxyProcess) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {remote_token(remote.url)}"}
    with httpx.Client(base_url=remote.url, timeout=30, headers=headers) as client:
        yield client


def ns() -> str:
    return f"fed_{uuid.uuid4().hex[:8]}"


def create_table(client: httpx.Client, prefix: str, namespace: tuple[str, ...], name: str) -> dict[str, Any]:
    response = client.post(
        f"/v1/{prefix}/namespaces/{ns_path(*namespace)}/tables", json={"name": name, "schema": SCHEMA}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_config_names_our_prefix_and_the_upstream_endpoints_without_secrets(http: httpx.Client) -> None:
    response = http.get("/v1/config", params={"warehouse": "remote"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["overrides"] == {"prefix": "remote"}
    endpoints = set(body["endpoints"])
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}" in endpoints
    assert "POST /v1/{prefix}/transactions/commit" in endpoints
    assert "GET /v1/{prefix}/namespaces/{namespace}/views/{view}" in endpoints  # the remote serves views
    assert FRONT_SECRET not in response.text and "oauth2-server-uri" not in response.text


def test_table_lifecycle_is_forwarded_and_lands_on_the_remote(http: httpx.Client, direct: httpx.Client) -> None:
    name = ns()
    assert http.post("/v1/remote/namespaces", json={"namespace": [name], "properties": {"k": "v"}}).status_code == 200
    assert direct.get(f"/v1/local/namespaces/{name}").json()["properties"] == {"k": "v"}
    created = create_table(http, "remote", (name,), "t")
    loaded = direct.get(f"/v1/local/namespaces/{name}/tables/t")
    assert loaded.status_code == 200 and loaded.json()["metadata-location"] == created["metadata-location"]
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"owner": "front"}}]}
    response = http.post(f"/v1/remote/namespaces/{name}/tables/t", json=commit)
    assert response.status_code == 200, response.text
    assert direct.get(f"/v1/local/namespaces/{name}/tables/t").json()["metadata"]["properties"]["owner"] == "front"
    assert http.head(f"/v1/remote/namespaces/{name}/tables/t").status_code == 204
    listed = http.get(f"/v1/remote/namespaces/{name}/tables").json()
    assert listed["identifiers"] == [{"namespace": [name], "name": "t"}]
    assert http.delete(f"/v1/remote/namespaces/{name}/tables/t").status_code == 204
    assert direct.head(f"/v1/local/namespaces/{name}/tables/t").status_code == 404


def test_upstream_404_and_409_arrive_unchanged(http: httpx.Client, direct: httpx.Client) -> None:
    name = ns()
    via_front = http.get(f"/v1/remote/namespaces/{name}/tables/missing")
    straight = direct.get(f"/v1/local/namespaces/{name}/tables/missing")
    assert via_front.status_code == straight.status_code == 404
    assert via_front.json() == straight.json()
    assert_error(via_front, 404, "NoSuchTableException")
    assert http.post("/v1/remote/namespaces", json={"namespace": [name]}).status_code == 200
    again = http.post("/v1/remote/namespaces", json={"namespace": [name]})
    assert again.json() == direct.post("/v1/local/namespaces", json={"namespace": [name]}).json()
    assert_error(again, 409, "AlreadyExistsException", f"Namespace already exists: {name}")
    create_table(http, "remote", (name,), "t")
    stale = {"requirements": [{"type": "assert-table-uuid", "uuid": str(uuid.uuid4())}], "updates": []}
    assert_error(http.post(f"/v1/remote/namespaces/{name}/tables/t", json=stale), 409, "CommitFailedException")


def test_etag_and_if_none_match_pass_through(http: httpx.Client) -> None:
    name = ns()
    http.post("/v1/remote/namespaces", json={"namespace": [name]})
    create_table(http, "remote", (name,), "t")
    first = http.get(f"/v1/remote/namespaces/{name}/tables/t")
    tag = first.headers.get("etag")
    assert tag, first.headers
    again = http.get(f"/v1/remote/namespaces/{name}/tables/t", headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b""


def test_request_id_reaches_the_remote_and_no_secret_is_logged(
    http: httpx.Client, remote: ProxyProcess, front: ProxyProcess
) -> None:
    request_id = f"req-{uuid.uuid4().hex}"
    response = http.get("/v1/remote/namespaces", headers={"X-Request-Id": request_id})
    assert response.status_code == 200 and response.headers["x-request-id"] == request_id
    deadline = time.monotonic() + 5  # the access log line is written just after the response is sent
    while f"id={request_id}" not in remote.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f"id={request_id}" in remote.log()
    assert FRONT_SECRET not in front.log() and FRONT_SECRET not in remote.log()


def test_nested_namespaces_are_mapped_onto_one_remote_level(http: httpx.Client, direct: httpx.Client) -> None:
    top = ns()
    response = http.post("/v1/flat/namespaces", json={"namespace": [top, "sales"], "properties": {"a": "b"}})
    assert response.status_code == 200, response.text
    remote_names = direct.get("/v1/local/namespaces").json()["namespaces"]
    assert [top] in remote_names and [f"{top}:sales"] in remote_names
    assert http.get("/v1/flat/namespaces", params={"parent": top}).json()["namespaces"] == [[top, "sales"]]
    create_table(http, "flat", (top, "sales"), "orders")
    assert direct.head(f"/v1/local/namespaces/{top}%3Asales/tables/orders").status_code == 204
    listed = http.get(f"/v1/flat/namespaces/{ns_path(top, 'sales')}/tables").json()
    assert listed["identifiers"] == [{"namespace": [top, "sales"], "name": "orders"}]
    rename = {
        "source": {"namespace": [top, "sales"], "name": "orders"},
        "destination": {"namespace": [top], "name": "o"},
    }
    assert http.post("/v1/flat/tables/rename", json=rename).status_code == 204
    assert direct.head(f"/v1/local/namespaces/{top}/tables/o").status_code == 204
    assert_error(http.delete(f"/v1/flat/namespaces/{top}"), 409, "NamespaceNotEmptyException")


def test_forwarded_caller_token_decides_at_the_remote(http: httpx.Client, remote: ProxyProcess) -> None:
    anonymous = http.get("/v1/mine/namespaces")
    assert anonymous.status_code == 503, anonymous.text  # the proxy itself has no credentials for the remote
    assert_error(anonymous, 503, "ServiceUnavailableException", "refused the proxy's credentials")
    user = {"Authorization": f"Bearer {remote_token(remote.url, USER_CLIENT, USER_SECRET)}"}
    assert http.get("/v1/mine/namespaces", headers=user).status_code == 200
    forged = http.get("/v1/mine/namespaces", headers={"Authorization": "Bearer not-a-token"})
    assert_error(forged, 401, "NotAuthorizedException")  # the remote's own 401, unchanged


def test_oauth2_token_is_cached_and_fetched_again_near_expiry(
    tmp_path_factory: pytest.TempPathFactory, remote: ProxyProcess
) -> None:
    cached = rest_catalog("cached", remote.url)
    eager = rest_catalog("eager", remote.url).replace(
        "[catalogs.eager.auth]", "[catalogs.eager.auth]\nrefresh_margin_seconds = 3599.9"
    )
    front = start_front(tmp_path_factory.mktemp("tokens"), cached, eager)
    try:
        time.sleep(0.5)
        before = remote.log().count("POST /v1/oauth/tokens")
        with httpx.Client(base_url=front.url, timeout=30) as client:
            for _ in range(3):
                assert client.get("/v1/cached/namespaces").status_code == 200
            time.sleep(0.5)  # access log lines are written just after each response
            assert remote.log().count("POST /v1/oauth/tokens") == before + 1
            for _ in range(2):
                assert client.get("/v1/eager/namespaces").status_code == 200
                time.sleep(0.3)
            time.sleep(0.5)
            assert remote.log().count("POST /v1/oauth/tokens") >= before + 3  # 3600 s tokens, 3599.9 s margin
        assert FRONT_SECRET not in front.log()
    finally:
        front.stop()
