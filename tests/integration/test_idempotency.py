"""The spec's Idempotency-Key: outcomes finalized, replayed and shared through the state database
(SQLite and PostgreSQL), including a commit whose response was lost and concurrent duplicates."""

from __future__ import annotations

import json
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from irc_proxy.handling.security.authn import hash_secret
from irc_proxy.http.idempotency import accepts_key
from tests.support.postgres import scratch_database
from tests.support.rest import assert_error, create_namespace, create_table, ns_path, snapshot, table_url
from tests.support.server import ProxyProcess


def key() -> str:
    return str(uuid.uuid4())


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def keyed_proxy(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    if request.param == "sqlite":
        server = ProxyProcess(tmp_path_factory.mktemp("idempotency")).start()
        yield server
        server.stop()
        return
    with scratch_database() as url:
        config = f'[state]\ndatabase_url = "{url}"\n[catalogs.local]\nkind = "local"\ndatabase_url = "{url}"\n'
        server = ProxyProcess(tmp_path_factory.mktemp("idempotency-pg"), config).start()
        yield server
        server.stop()


@pytest.fixture
def client(keyed_proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=keyed_proxy.url, timeout=60) as http:
        yield http


def append(location: str) -> dict[str, Any]:
    """A commit that adds one snapshot (no requirements: only the key keeps a retry from re-applying it)."""
    snapshot_id = uuid.uuid4().int >> 65
    return {
        "requirements": [],
        "updates": [
            {"action": "add-snapshot", "snapshot": snapshot(snapshot_id, None, 1, location)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id},
        ],
    }


def send_and_hang_up(port: int, path: str, body: bytes, idempotency_key: str) -> None:
    """Send a whole request and close the connection without reading the response (a lost response)."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Idempotency-Key: {idempotency_key}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head.encode() + body)


def test_config_advertises_the_key_lifetime(client: httpx.Client) -> None:
    assert client.get("/v1/config").json()["idempotency-key-lifetime"] == "PT30M"


def test_commit_whose_response_was_lost_is_applied_once(
    client: httpx.Client, keyed_proxy: ProxyProcess, ns_name: str
) -> None:
    create_namespace(client, ns_name)
    created = create_table(client, (ns_name,), "t")
    url = table_url((ns_name,), "t")
    body = json.dumps(append(created["metadata"]["location"])).encode()
    attempt = key()

    send_and_hang_up(keyed_proxy.port, url, body, attempt)
    retry = client.post(url, content=body, headers={"Idempotency-Key": attempt, "Content-Type": "application/json"})
    assert retry.status_code == 200, retry.text
    again = client.post(url, content=body, headers={"Idempotency-Key": attempt, "Content-Type": "application/json"})
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == retry.json()

    table = client.get(url).json()["metadata"]
    assert len(table["snapshots"]) == 1
    assert len(table["metadata-log"]) == 1  # the creation's metadata file, then exactly one commit
    assert table["current-snapshot-id"] == retry.json()["metadata"]["current-snapshot-id"]


def test_success_and_conflict_are_replayed(client: httpx.Client, ns_name: str) -> None:
    first, second = key(), key()
    body = {"namespace": [ns_name], "properties": {"owner": "a"}}
    created = client.post("/v1/local/namespaces", json=body, headers={"Idempotency-Key": first})
    assert created.status_code == 200 and "idempotent-replayed" not in created.headers
    replayed = client.post("/v1/local/namespaces", json=body, headers={"Idempotency-Key": first})
    assert replayed.status_code == 200 and replayed.headers["idempotent-replayed"] == "true"
    assert replayed.json() == created.json()

    conflict = client.post("/v1/local/namespaces", json=body, headers={"Idempotency-Key": second})
    assert_error(conflict, 409, "AlreadyExistsException")
    client.delete(f"/v1/local/namespaces/{ns_path(ns_name)}").raise_for_status()
    # 409 is final: the retry replays it even though the namespace is gone now.
    replayed_conflict = client.post("/v1/local/namespaces", json=body, headers={"Idempotency-Key": second})
    assert_error(replayed_conflict, 409, "AlreadyExistsException")
    assert replayed_conflict.headers["idempotent-replayed"] == "true"


def test_delete_is_replayed_as_204(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    attempt = key()
    for _ in range(2):
        response = client.delete(f"/v1/local/namespaces/{ns_path(ns_name)}", headers={"Idempotency-Key": attempt})
        assert response.status_code == 204
    assert response.headers["idempotent-replayed"] == "true"


def test_key_reused_for_another_request_is_400(client: httpx.Client, ns_name: str) -> None:
    attempt = key()
    ok = client.post("/v1/local/namespaces", json={"namespace": [ns_name]}, headers={"Idempotency-Key": attempt})
    assert ok.status_code == 200
    other_body = {"namespace": [ns_name + "x"]}
    other = client.post("/v1/local/namespaces", json=other_body, headers={"Idempotency-Key": attempt})
    assert_error(other, 400, "BadRequestException", "already used for a different request")
    assert client.head(f"/v1/local/namespaces/{ns_path(ns_name + 'x')}").status_code == 404


def test_malformed_key_is_400(client: httpx.Client, ns_name: str) -> None:
    response = client.post("/v1/local/namespaces", json={"namespace": [ns_name]}, headers={"Idempotency-Key": "abc"})
    assert_error(response, 400, "BadRequestException", "Idempotency-Key")
    assert client.head(f"/v1/local/namespaces/{ns_path(ns_name)}").status_code == 404


def test_reads_ignore_the_key(client: httpx.Client) -> None:
    response = client.get("/v1/local/namespaces", headers={"Idempotency-Key": "not-a-uuid"})
    assert response.status_code == 200


def test_concurrent_duplicates_get_the_first_answer(
    client: httpx.Client, keyed_proxy: ProxyProcess, ns_name: str
) -> None:
    create_namespace(client, ns_name)
    attempt = key()
    body = {"name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": []}}

    def create(_: int) -> httpx.Response:
        with httpx.Client(base_url=keyed_proxy.url, timeout=60) as own:
            path = f"/v1/local/namespaces/{ns_path(ns_name)}/tables"
            return own.post(path, json=body, headers={"Idempotency-Key": attempt})

    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(create, range(8)))
    assert {r.status_code for r in responses} == {200}, [r.text for r in responses if r.status_code != 200]
    assert len({r.json()["metadata-location"] for r in responses}) == 1
    assert sum("idempotent-replayed" not in r.headers for r in responses) == 1


def test_expired_keys_are_purged_and_free(tmp_path_factory: pytest.TempPathFactory) -> None:
    workdir = tmp_path_factory.mktemp("short-lived-keys")
    server = ProxyProcess(workdir, '[server]\nidempotency_key_lifetime = "PT1S"\n').start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert http.get("/v1/config").json()["idempotency-key-lifetime"] == "PT1S"
            reused, purged = key(), key()
            http.post("/v1/local/namespaces", json={"namespace": ["a"]}, headers={"Idempotency-Key": reused})
            http.post("/v1/local/namespaces", json={"namespace": ["b"]}, headers={"Idempotency-Key": purged})
            time.sleep(1.5)
            # Expired: the same key may now carry another request.
            again = http.post("/v1/local/namespaces", json={"namespace": ["c"]}, headers={"Idempotency-Key": reused})
            assert again.status_code == 200 and "idempotent-replayed" not in again.headers
        with sqlite3.connect(workdir / "data" / "state.db") as db:
            keys = {row[0] for row in db.execute("SELECT key FROM idempotency_record")}
        assert keys == {reused}  # the other expired record was purged
    finally:
        server.stop()


def test_disabled_lifetime_is_not_advertised_and_keys_are_ignored(tmp_path_factory: pytest.TempPathFactory) -> None:
    server = ProxyProcess(tmp_path_factory.mktemp("no-keys"), '[server]\nidempotency_key_lifetime = "PT0S"\n').start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert "idempotency-key-lifetime" not in http.get("/v1/config").json()
            attempt = key()
            http.post("/v1/local/namespaces", json={"namespace": ["a"]}, headers={"Idempotency-Key": attempt})
            again = http.post("/v1/local/namespaces", json={"namespace": ["a"]}, headers={"Idempotency-Key": attempt})
            assert_error(again, 409, "AlreadyExistsException")
    finally:
        server.stop()


@pytest.mark.postgres
def test_two_replicas_share_outcomes(tmp_path_factory: pytest.TempPathFactory) -> None:
    with scratch_database() as url:
        config = f'[state]\ndatabase_url = "{url}"\n[catalogs.local]\nkind = "local"\ndatabase_url = "{url}"\n'
        replicas = [ProxyProcess(tmp_path_factory.mktemp(f"replica{i}"), config).start() for i in range(2)]
        try:
            attempt = key()
            body = {"namespace": ["shared"]}

            def create(index: int) -> httpx.Response:
                with httpx.Client(base_url=replicas[index % 2].url, timeout=60) as http:
                    return http.post("/v1/local/namespaces", json=body, headers={"Idempotency-Key": attempt})

            with ThreadPoolExecutor(6) as pool:
                responses = list(pool.map(create, range(6)))
            assert {r.status_code for r in responses} == {200}, [r.text for r in responses]
            assert sum("idempotent-replayed" not in r.headers for r in responses) == 1
        finally:
            for replica in replicas:
                replica.stop()


def test_keys_are_scoped_to_the_principal(tmp_path_factory: pytest.TempPathFactory) -> None:
    clients = "".join(
        f'[[auth.clients]]\nid = "{name}"\nsecret_hash = "{hash_secret("s")}"\nprincipal = "{name}"\n'
        for name in ("alice", "bob")
    )
    config = '[auth]\nmode = "oauth2"\nadmins = ["alice", "bob"]\n' + clients
    server = ProxyProcess(tmp_path_factory.mktemp("principals"), config).start()
    try:
        attempt, body = key(), {"namespace": ["shared"]}
        answers = []
        for name in ("alice", "bob"):
            form = {"grant_type": "client_credentials", "client_id": name, "client_secret": "s"}
            token = httpx.post(f"{server.url}/v1/oauth/tokens", data=form, timeout=30).json()["access_token"]
            headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": attempt}
            answers.append(httpx.post(f"{server.url}/v1/namespaces", json=body, headers=headers, timeout=30))
        assert answers[0].status_code == 200
        # Bob's request with Alice's key is his own: it runs (and finds the namespace), nothing is replayed.
        assert_error(answers[1], 409, "AlreadyExistsException")
        assert "idempotent-replayed" not in answers[1].headers
    finally:
        server.stop()


def test_only_mutations_the_spec_marks_take_a_key() -> None:
    table = "/v1/local/namespaces/a%1Fb/tables/t"
    assert accepts_key("POST", table) and accepts_key("DELETE", table)
    assert accepts_key("POST", "/v1/namespaces") and accepts_key("POST", "/v1/local/transactions/commit")
    assert accepts_key("POST", "/v1/local/namespaces/a/views/v") and accepts_key("POST", "/v1/tables/rename")
    assert not accepts_key("GET", table) and not accepts_key("HEAD", table)
    assert not accepts_key("POST", table + "/metrics")  # reportMetrics: no Idempotency-Key in the spec
    assert not accepts_key("POST", "/v1/oauth/tokens") and not accepts_key("POST", "/v1/config")
