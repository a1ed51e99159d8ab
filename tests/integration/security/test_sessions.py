"""Guarantee 6, sessions end: a token lives only as long as its client's credentials and its session's lifetime.

Driven over HTTP against served ``oauth2`` proxies: two replicas sharing one state database (rotation and
deletion through one replica end sessions on the other), a proxy restarted without a configured client, and
one with a tiny ``auth.max_session_seconds``. The catalog backend plays no part in sessions, so these use a
local catalog.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from irc_proxy.handling.security.authn import hash_secret
from tests.support.rest import MGMT, assert_error, create_namespace, create_table, issue_token, table_url
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-sessions"
SPARK_SECRET = "spark-secret-for-sessions"
LEAVING_SECRET = "leaving-secret-for-sessions"
EXCHANGE = {
    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
    "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
}
TABLE = (("sessions",), "t")
CACHE_SECONDS = 0.5


def client_block(client_id: str, secret: str, roles: str = "[]") -> str:
    return f'[[auth.clients]]\nid = "{client_id}"\nsecret_hash = "{hash_secret(secret)}"\nroles = {roles}\n'


def exchange(url: str, token: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/oauth/tokens", data=EXCHANGE | {"subject_token": token}, timeout=30)


def exchanged(url: str, token: str) -> str:
    response = exchange(url, token)
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


def assert_invalid_grant(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_grant"


def load_table(url: str, token: str) -> httpx.Response:
    return httpx.get(url + table_url(*TABLE), headers={"Authorization": f"Bearer {token}"}, timeout=30)


def assert_401(response: httpx.Response) -> None:
    assert_error(response, 401, "NotAuthorizedException")
    assert response.headers["www-authenticate"].startswith("Bearer")


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def eventually_401(url: str, token: str) -> None:
    """Other replicas see a change within ``auth.grants_cache_seconds``; allow generous slack."""
    deadline = time.monotonic() + 10 * CACHE_SECONDS + 5
    while (response := load_table(url, token)).status_code != 401 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert_401(response)


@pytest.fixture(scope="module")
def signing_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[RSAKey, Path]:
    key = RSAKey.generate_key(2048)
    path = tmp_path_factory.mktemp("session-key") / "signing.pem"
    path.write_bytes(key.as_pem(private=True))
    return key, path


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, signing_key: tuple[RSAKey, Path]
) -> Iterator[tuple[ProxyProcess, ProxyProcess]]:
    """Two proxies sharing one state database, catalog database and warehouse (as replicas share PostgreSQL)."""
    shared = tmp_path_factory.mktemp("sessions-shared")
    (shared / "warehouse").mkdir()
    config = (
        f'[state]\ndatabase_url = "sqlite:///{shared / "state.db"}"\n'
        f'[catalogs.local]\nwarehouse = "{(shared / "warehouse").as_uri()}"\n'
        f'database_url = "sqlite:///{shared / "catalog.db"}"\n'
        f'[auth]\nmode = "oauth2"\nadmins = ["root"]\nsigning_key_file = "{signing_key[1]}"\n'
        f"grants_cache_seconds = {CACHE_SECONDS}\n" + client_block("root", ROOT_SECRET)
    )
    first = ProxyProcess(tmp_path_factory.mktemp("sessions-a"), config).start()
    second = ProxyProcess(tmp_path_factory.mktemp("sessions-b"), config).start()
    with httpx.Client(base_url=first.url, timeout=30) as root:
        root.headers["Authorization"] = f"Bearer {issue_token(first.url, 'root', ROOT_SECRET)}"
        create_namespace(root, *TABLE[0])
        create_table(root, *TABLE)
        assert root.post(f"{MGMT}/roles", json={"name": "readers"}).status_code == 201
        grant = {"privilege": "table.read", "catalog": "local", "namespace": list(TABLE[0])}
        assert root.post(f"{MGMT}/roles/readers/grants", json=grant).status_code == 201
    yield first, second
    second.stop()
    first.stop()


@pytest.fixture
def admin(replicas: tuple[ProxyProcess, ProxyProcess]) -> Iterator[httpx.Client]:
    url = replicas[0].url
    with httpx.Client(base_url=url, timeout=30) as client:
        client.headers["Authorization"] = f"Bearer {issue_token(url, 'root', ROOT_SECRET)}"
        yield client


def new_principal(admin: httpx.Client) -> tuple[str, str]:
    name = f"p-{uuid.uuid4().hex[:8]}"
    response = admin.post(f"{MGMT}/principals", json={"name": name, "roles": ["readers"]})
    assert response.status_code == 201, response.text
    credentials = response.json()["credentials"]
    return credentials["client-id"], credentials["client-secret"]


def test_rotating_a_principals_secret_ends_its_sessions_on_every_replica(
    replicas: tuple[ProxyProcess, ProxyProcess], admin: httpx.Client
) -> None:
    first, second = replicas
    name, secret = new_principal(admin)
    token = issue_token(first.url, name, secret)
    chained = exchanged(second.url, exchanged(first.url, token))
    for url in (first.url, second.url):
        assert load_table(url, token).status_code == 200
        assert load_table(url, chained).status_code == 200

    rotated = admin.post(f"{MGMT}/principals/{name}/rotate-credentials", headers={"Content-Type": "application/json"})
    assert rotated.status_code == 200, rotated.text
    for old in (token, chained):
        assert_401(load_table(first.url, old))  # the replica that rotated: at once
        eventually_401(second.url, old)
        assert_invalid_grant(exchange(first.url, old))
        assert_invalid_grant(exchange(second.url, old))
    new_secret = rotated.json()["credentials"]["client-secret"]
    assert load_table(second.url, issue_token(second.url, name, new_secret)).status_code == 200


def test_deleting_a_principal_ends_its_sessions_even_if_the_name_is_reused(
    replicas: tuple[ProxyProcess, ProxyProcess], admin: httpx.Client
) -> None:
    first, second = replicas
    name, secret = new_principal(admin)
    token = issue_token(second.url, name, secret)
    chained = exchanged(first.url, token)
    assert load_table(second.url, chained).status_code == 200

    assert admin.delete(f"{MGMT}/principals/{name}").status_code == 204
    assert_401(load_table(first.url, token))
    eventually_401(second.url, chained)
    assert_invalid_grant(exchange(second.url, chained))
    # A principal created again under the same name is another client: the old sessions stay ended.
    assert admin.post(f"{MGMT}/principals", json={"name": name, "roles": ["readers"]}).status_code == 201
    time.sleep(CACHE_SECONDS * 2)
    for url in (first.url, second.url):
        assert_401(load_table(url, token))
        assert_invalid_grant(exchange(url, chained))


def forged(key: RSAKey, **claims: Any) -> str:
    now = int(time.time())
    base = {"iss": "irc-proxy", "aud": "irc-proxy", "sub": "root", "iat": now, "exp": now + 300, "jti": "x"}
    return jwt.encode({"alg": "RS256"}, base | claims, key)


def test_forged_or_unbound_subject_tokens_are_not_exchanged(
    replicas: tuple[ProxyProcess, ProxyProcess], signing_key: tuple[RSAKey, Path]
) -> None:
    url = replicas[0].url
    genuine = issue_token(url, "root", ROOT_SECRET)
    claims = claims_of(genuine)
    assert {"client_id", "cfp", "auth_time"} <= claims.keys() and claims["client_id"] == "root"
    header, _payload, signature = genuine.split(".")
    raised = claims | {"auth_time": int(time.time()) + 10_000}
    tampered = f"{header}.{base64.urlsafe_b64encode(json.dumps(raised).encode()).rstrip(b'=').decode()}.{signature}"
    other_key = forged(RSAKey.generate_key(2048), **{k: claims[k] for k in ("client_id", "cfp", "auth_time")})
    # Signed with the right key, but bound to no secret the client holds (or to none at all, as tokens
    # from before session binding were): not honoured, not exchanged.
    wrong_binding = forged(signing_key[0], client_id="root", cfp="AAAAAAAAAAAAAAAA", auth_time=int(time.time()))
    unbound_client = forged(signing_key[0], client_id="root")
    for token in (tampered, other_key, wrong_binding, unbound_client):
        refused = exchange(url, token)
        assert_invalid_grant(refused)
        assert token not in refused.text
        assert_401(load_table(url, token))
    # A token without any client (minted with the configured key by its holder) serves until it expires,
    # but never starts a session.
    service_token = forged(signing_key[0], roles=["admin"])
    assert load_table(url, service_token).status_code == 200
    assert_invalid_grant(exchange(url, service_token))


def test_removing_a_configured_client_or_changing_its_secret_ends_its_sessions(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Across a restart with the same signing key (kept in the state database), only the changed clients lose out."""
    workdir = tmp_path_factory.mktemp("sessions-config")
    head = '[auth]\nmode = "oauth2"\nauthorization = "none"\n'
    roots = client_block("root", ROOT_SECRET, '["admin"]')
    server = ProxyProcess(
        workdir, head + roots + client_block("spark", SPARK_SECRET) + client_block("leaving", LEAVING_SECRET)
    )
    server.start()
    try:
        tokens = {name: issue_token(server.url, name, secret) for name, secret in (
            ("root", ROOT_SECRET), ("spark", SPARK_SECRET), ("leaving", LEAVING_SECRET))}  # fmt: skip
        chained = {name: exchanged(server.url, token) for name, token in tokens.items()}
        config = httpx.get(f"{server.url}/v1/config", headers={"Authorization": f"Bearer {chained['leaving']}"})
        assert config.status_code == 200

        server.stop()
        new_spark = "spark-secret-after-rotation"
        text = server.config_path.read_text(encoding="utf-8").split("[auth]")[0]
        server.config_path.write_text(text + head + roots + client_block("spark", new_spark), encoding="utf-8")
        server.start()

        for name in ("spark", "leaving"):
            for token in (tokens[name], chained[name]):
                assert_invalid_grant(exchange(server.url, token))
                response = httpx.get(f"{server.url}/v1/config", headers={"Authorization": f"Bearer {token}"})
                assert_401(response)
        assert exchange(server.url, chained["root"]).status_code == 200  # same key, unchanged client: still good
        assert issue_token(server.url, "spark", new_spark)
    finally:
        server.stop()


def test_chained_exchanges_end_at_max_session_seconds(tmp_path_factory: pytest.TempPathFactory) -> None:
    lifetime = 4
    config = f'[auth]\nmode = "oauth2"\nauthorization = "none"\nmax_session_seconds = {lifetime}\n'
    clients = client_block("spark", SPARK_SECRET) + client_block("root", ROOT_SECRET)
    server = ProxyProcess(tmp_path_factory.mktemp("sessions-short"), config + clients)
    server.start()
    try:
        response = httpx.post(
            f"{server.url}/v1/oauth/tokens",
            data={"grant_type": "client_credentials", "client_id": "spark", "client_secret": SPARK_SECRET},
        )
        assert response.status_code == 200 and response.json()["expires_in"] <= lifetime
        token = response.json()["access_token"]
        auth_time = claims_of(token)["auth_time"]
        chain = [token]
        while time.time() < auth_time + lifetime - 1.5:
            reply = exchange(server.url, chain[-1])
            assert reply.status_code == 200, reply.text
            chain.append(reply.json()["access_token"])
            claims = claims_of(chain[-1])
            assert claims["auth_time"] == auth_time and claims["exp"] <= auth_time + lifetime
            assert reply.json()["expires_in"] <= lifetime
            time.sleep(0.5)
        assert len(chain) > 2
        time.sleep(max(0.0, auth_time + lifetime + 1.5 - time.time()))
        assert_invalid_grant(exchange(server.url, chain[-1]))
        assert_401(httpx.get(f"{server.url}/v1/config", headers={"Authorization": f"Bearer {chain[-1]}"}))
        # How Java clients go on: the expired token exchanged with the client's credentials (Basic) starts
        # a new session; another client's credentials, or a wrong secret, do not.
        renewed = httpx.post(
            f"{server.url}/v1/oauth/tokens", data=EXCHANGE | {"subject_token": chain[-1]}, auth=("spark", SPARK_SECRET)
        )
        assert renewed.status_code == 200, renewed.text
        assert claims_of(renewed.json()["access_token"])["auth_time"] > auth_time
        other = httpx.post(
            f"{server.url}/v1/oauth/tokens", data=EXCHANGE | {"subject_token": chain[-1]}, auth=("root", ROOT_SECRET)
        )
        assert_invalid_grant(other)
        wrong = httpx.post(
            f"{server.url}/v1/oauth/tokens", data=EXCHANGE | {"subject_token": chain[-1]}, auth=("spark", "guess")
        )
        assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
        assert issue_token(server.url, "spark", SPARK_SECRET)  # the client credentials start a new session
    finally:
        server.stop()
