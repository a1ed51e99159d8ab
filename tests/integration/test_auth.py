"""Authentication against real proxies: the oauth2 mode's token endpoint, JWKS and bearer checks."""

from __future__ import annotations

import base64
import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from joserfc import jwt
from joserfc.jwk import RSAKey

from irc_proxy.handling.security.authn import hash_secret
from tests.support.server import ProxyProcess, Serve

SECRET = "s3cret-for-spark"
CLIENTS = f'''
[[auth.clients]]
id = "spark"
secret_hash = "{hash_secret(SECRET)}"
principal = "svc-spark"
roles = ["reader", "writer"]
'''


@pytest.fixture(scope="module")
def signing_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[RSAKey, Path]:
    key = RSAKey.generate_key(2048)
    path = tmp_path_factory.mktemp("key") / "signing.pem"
    path.write_bytes(key.as_pem(private=True))
    return key, path


@pytest.fixture(scope="module")
def secured(signing_key: tuple[RSAKey, Path], serve: Serve) -> ProxyProcess:
    config = (
        f'[auth]\nmode = "oauth2"\nadmins = ["svc-spark"]\nsigning_key_file = "{signing_key[1]}"\n'
        "token_lifetime_seconds = 600\n"
    )
    return serve(config + CLIENTS, "secured")


def get_token(url: str, client_id: str = "spark", secret: str = SECRET, **form: str) -> httpx.Response:
    data = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret} | form
    return httpx.post(f"{url}/v1/oauth/tokens", data=data, timeout=30)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def assert_401(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer")
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("NotAuthorizedException", 401)


def test_issued_token_carries_the_client_principal_and_roles(secured: ProxyProcess) -> None:
    response = get_token(secured.url, scope="catalog")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["token_type"] == "bearer" and body["expires_in"] == 600 and body["scope"] == "catalog"
    assert response.headers["cache-control"] == "no-store"
    claims = claims_of(body["access_token"])
    assert claims["sub"] == "svc-spark" and claims["roles"] == ["reader", "writer"]
    assert claims["iss"] == "irc-proxy" and claims["aud"] == "irc-proxy"
    assert claims["exp"] - claims["iat"] == 600 and claims["jti"]
    config = httpx.get(f"{secured.url}/v1/config", headers=bearer(body["access_token"]))
    assert config.status_code == 200 and config.json()["overrides"] == {"prefix": "local"}


def test_client_credentials_in_a_basic_header_work(secured: ProxyProcess) -> None:
    response = httpx.post(
        f"{secured.url}/v1/oauth/tokens", data={"grant_type": "client_credentials"}, auth=("spark", SECRET)
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(("client_id", "secret"), [("spark", "not-the-secret-42"), ("nobody", SECRET)])
def test_wrong_secret_or_unknown_client_is_401_invalid_client(
    secured: ProxyProcess, client_id: str, secret: str
) -> None:
    response = get_token(secured.url, client_id, secret)
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    assert secret not in response.text


def test_unsupported_grant_is_400_unsupported_grant_type(secured: ProxyProcess) -> None:
    response = get_token(secured.url, grant_type="password")
    assert response.status_code == 400 and response.json()["error"] == "unsupported_grant_type"
    missing = httpx.post(f"{secured.url}/v1/oauth/tokens", data={"grant_type": "client_credentials"})
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"


def test_token_exchange_refreshes_one_of_our_tokens(secured: ProxyProcess) -> None:
    """Iceberg clients refresh with RFC 8693 token exchange of the current token."""
    first = get_token(secured.url).json()["access_token"]
    exchange = {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": first,
        "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
    }
    response = httpx.post(f"{secured.url}/v1/oauth/tokens", data=exchange, headers=bearer(first), timeout=30)
    assert response.status_code == 200, response.text
    fresh = claims_of(response.json()["access_token"])
    assert fresh["sub"] == "svc-spark" and fresh["roles"] == ["reader", "writer"]
    assert fresh["jti"] != claims_of(first)["jti"]
    forged = first[:-4] + ("AAAA" if not first.endswith("AAAA") else "BBBB")
    refused = httpx.post(f"{secured.url}/v1/oauth/tokens", data=exchange | {"subject_token": forged}, timeout=30)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    assert forged not in refused.text
    wrong_type = httpx.post(f"{secured.url}/v1/oauth/tokens", data=exchange | {"subject_token_type": "x"}, timeout=30)
    assert wrong_type.status_code == 400 and wrong_type.json()["error"] == "invalid_request"


def test_health_is_open_and_config_is_not(secured: ProxyProcess) -> None:
    assert httpx.get(f"{secured.url}/healthz").status_code == 200
    assert_401(httpx.get(f"{secured.url}/v1/config"))
    assert_401(httpx.get(f"{secured.url}/v1/namespaces"))


@pytest.mark.parametrize("header", ["", "Bearer None", "Bearer", "Basic c3Bhcms6eA==", "Bearer not.a.jwt"])
def test_missing_or_malformed_token_is_401(secured: ProxyProcess, header: str) -> None:
    headers = {"Authorization": header} if header else {}
    assert_401(httpx.get(f"{secured.url}/v1/namespaces", headers=headers))
    head = httpx.head(f"{secured.url}/v1/namespaces/x", headers=headers)
    assert head.status_code == 401 and head.headers["www-authenticate"].startswith("Bearer")


def forged_claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {"iss": "irc-proxy", "aud": "irc-proxy", "sub": "svc-spark", "iat": now, "exp": now + 300}
    claims |= {"jti": uuid.uuid4().hex, "roles": []}
    return claims | changes


def test_expired_token_signed_with_the_right_key_is_401(
    secured: ProxyProcess, signing_key: tuple[RSAKey, Path]
) -> None:
    key = signing_key[0]
    good = jwt.encode({"alg": "RS256"}, forged_claims(), key)
    assert httpx.get(f"{secured.url}/v1/namespaces", headers=bearer(good)).status_code == 200
    expired = jwt.encode({"alg": "RS256"}, forged_claims(exp=int(time.time()) - 10), key)
    response = httpx.get(f"{secured.url}/v1/namespaces", headers=bearer(expired))
    assert_401(response)
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    for claims in (forged_claims(aud="someone-else"), forged_claims(iss="evil")):
        assert_401(httpx.get(f"{secured.url}/v1/namespaces", headers=bearer(jwt.encode({"alg": "RS256"}, claims, key))))


def test_a_token_naming_a_reserved_principal_is_401(secured: ProxyProcess, signing_key: tuple[RSAKey, Path]) -> None:
    """``irc-proxy`` (the proxy itself in audit records) and ``anonymous`` cannot be a caller's name."""
    for name in ("irc-proxy", "anonymous"):
        token = jwt.encode({"alg": "RS256"}, forged_claims(sub=name), signing_key[0])
        response = httpx.get(f"{secured.url}/v1/namespaces", headers=bearer(token))
        assert_401(response)
        assert "reserved" in response.json()["error"]["message"]


def test_forged_tokens_are_401(secured: ProxyProcess) -> None:
    token = get_token(secured.url).json()["access_token"]
    header, payload, signature = token.split(".")
    # Signed with another key.
    other = jwt.encode({"alg": "RS256"}, forged_claims(), RSAKey.generate_key(2048))
    # alg none, unsigned.
    none_header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    unsigned = f"{none_header}.{payload}."
    # Tampered claims with the original signature.
    claims = claims_of(token) | {"sub": "admin", "roles": ["admin"]}
    tampered_payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    tampered = f"{header}.{tampered_payload}.{signature}"
    for forged in (other, unsigned, tampered):
        assert_401(httpx.get(f"{secured.url}/v1/namespaces", headers=bearer(forged)))
    assert token not in secured.log() and SECRET not in secured.log()


def test_jwks_publishes_the_public_signing_key(secured: ProxyProcess, signing_key: tuple[RSAKey, Path]) -> None:
    keys = httpx.get(f"{secured.url}/.well-known/jwks.json").json()["keys"]
    assert len(keys) == 1 and keys[0]["alg"] == "RS256" and keys[0]["kid"]
    assert keys[0]["n"] == signing_key[0].as_dict(private=False)["n"] and "d" not in keys[0]
    token = get_token(secured.url).json()["access_token"]
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header["kid"] == keys[0]["kid"]


def test_view_created_with_a_token_records_the_principal(secured: ProxyProcess) -> None:
    token = get_token(secured.url).json()["access_token"]
    ns = f"ns_{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=secured.url, headers=bearer(token), timeout=30) as client:
        client.post("/v1/local/namespaces", json={"namespace": [ns]}).raise_for_status()
        view = {
            "name": "v",
            "schema": {"type": "struct", "schema-id": 0, "fields": []},
            "view-version": {
                "version-id": 1,
                "timestamp-ms": int(time.time() * 1000),
                "schema-id": 0,
                "summary": {},
                "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}],
                "default-namespace": [ns],
            },
            "properties": {},
        }
        client.post(f"/v1/local/namespaces/{ns}/views", json=view).raise_for_status()
    engine = sa.create_engine(f"sqlite:///{secured.workdir / 'data' / 'state.db'}")
    with engine.connect() as conn:
        created_by = conn.execute(
            sa.text(
                "select v.created_by from iceberg_view_version v join iceberg_view w on w.id = v.view_id "
                "where w.namespace = :ns"
            ),
            {"ns": ns},
        ).scalar_one()
    engine.dispose()
    assert created_by == "svc-spark"


def test_generated_key_is_persisted_and_shared(tmp_path: Path) -> None:
    config = '[auth]\nmode = "oauth2"\nadmins = ["svc-spark"]\nsigning_algorithm = "ES256"\n' + CLIENTS
    first = ProxyProcess(tmp_path, config).start()
    try:
        token = get_token(first.url).json()["access_token"]
        kids = [k["kid"] for k in httpx.get(f"{first.url}/.well-known/jwks.json").json()["keys"]]
    finally:
        first.stop()
    assert json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["alg"] == "ES256"
    second = ProxyProcess(tmp_path, config).start()  # a restart, or a replica on the same database
    try:
        assert [k["kid"] for k in httpx.get(f"{second.url}/.well-known/jwks.json").json()["keys"]] == kids
        assert httpx.get(f"{second.url}/v1/namespaces", headers=bearer(token)).status_code == 200
    finally:
        second.stop()


def test_none_mode_warns_beyond_loopback_and_ignores_tokens(tmp_path: Path) -> None:
    server = ProxyProcess(tmp_path, '[server]\nhost = "0.0.0.0"\n').start()
    try:
        assert httpx.get(f"{server.url}/v1/config", headers=bearer("whatever")).status_code == 200
        assert httpx.post(f"{server.url}/v1/oauth/tokens", data={}).status_code == 404
    finally:
        server.stop()
    assert "WARNING" in server.log() and "auth.mode is none" in server.log()
