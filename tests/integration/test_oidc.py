"""The oidc mode against a tiny real issuer: discovery, JWKS caching and key rotation, claims."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from joserfc.jwk import RSAKey

from tests.support.in_process import InProcessProxy, ServeInProcess
from tests.support.oidc import OidcIssuer
from tests.support.server import ProxyProcess


@pytest.fixture(scope="module")
def issuer() -> Iterator[OidcIssuer]:
    server = OidcIssuer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def proxy_oidc(issuer: OidcIssuer, serve_in_process: ServeInProcess) -> InProcessProxy:
    config = (
        f'[auth]\nmode = "oidc"\nauthorization = "none"\n[auth.oidc]\nissuer = "{issuer.url}"\naudience = "irc-proxy"\n'
        'principal_claim = "email"\nroles_claim = "groups"\njwks_min_refresh_seconds = 0\n'
    )
    return serve_in_process(config, "oidc")


def status(proxy: InProcessProxy, token: str) -> httpx.Response:
    with proxy.client(timeout=30) as http:
        return http.get("/v1/namespaces", headers={"Authorization": f"Bearer {token}"})


def test_token_from_the_issuer_is_accepted(proxy_oidc: InProcessProxy, issuer: OidcIssuer) -> None:
    assert status(proxy_oidc, issuer.token(email="alice@example.com", groups=["eng"])).status_code == 200


def test_wrong_audience_issuer_expiry_or_key_is_401(proxy_oidc: InProcessProxy, issuer: OidcIssuer) -> None:
    forged = RSAKey.generate_key(2048, parameters={"kid": issuer.key.kid})  # type: ignore[arg-type]
    for token in (
        issuer.token(audience="other", email="a@x"),
        issuer.token(iss="http://evil.example", email="a@x"),
        issuer.token(lifetime=-30, email="a@x"),
        issuer.token(email="a@x", key=forged),
        issuer.token(),  # no principal claim (email)
    ):
        response = status(proxy_oidc, token)
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_rotated_key_is_fetched_on_unknown_kid(proxy_oidc: InProcessProxy, issuer: OidcIssuer) -> None:
    assert status(proxy_oidc, issuer.token(email="a@x")).status_code == 200
    before = issuer.jwks_requests
    assert status(proxy_oidc, issuer.token(email="a@x")).status_code == 200
    assert issuer.jwks_requests == before  # cached
    issuer.rotate()
    assert status(proxy_oidc, issuer.token(email="a@x")).status_code == 200
    assert issuer.jwks_requests == before + 1


def test_oidc_mode_serves_no_token_endpoint(proxy_oidc: InProcessProxy) -> None:
    with proxy_oidc.client() as http:
        response = http.post("/v1/oauth/tokens", data={"grant_type": "client_credentials"})
    assert response.status_code in (401, 404)


def test_oidc_mode_requires_issuer_and_audience(tmp_path: Path) -> None:
    server = ProxyProcess(tmp_path, '[auth]\nmode = "oidc"\n')
    with pytest.raises(RuntimeError, match=r"auth.oidc.issuer and auth.oidc.audience are required"):
        server.start()


def test_groups_from_the_identity_provider_are_roles_for_grants(tmp_path: Path, issuer: OidcIssuer) -> None:
    """A group in the token's roles claim picks up the grants of the role of that name."""
    config = (
        f'[auth]\nmode = "oidc"\nadmins = ["root@example.com"]\n[auth.oidc]\nissuer = "{issuer.url}"\n'
        'audience = "irc-proxy"\nprincipal_claim = "email"\nroles_claim = "groups"\n'
    )
    proxy = ProxyProcess(tmp_path, config).start()
    try:
        admin = httpx.Client(
            base_url=proxy.url, headers={"Authorization": f"Bearer {issuer.token(email='root@example.com')}"}
        )
        assert admin.post("/v1/namespaces", json={"namespace": ["finance"]}).status_code == 200
        assert admin.post("/management/v1/roles", json={"name": "analysts"}).status_code == 201
        grant = {"catalog": "local", "namespace": ["finance"], "privilege": "namespace.use"}
        assert admin.post("/management/v1/roles/analysts/grants", json=grant).status_code == 201
        analyst = {"Authorization": f"Bearer {issuer.token(email='ann@example.com', groups=['analysts'])}"}
        outsider = {"Authorization": f"Bearer {issuer.token(email='oz@example.com', groups=['sales'])}"}
        assert httpx.get(f"{proxy.url}/v1/namespaces/finance", headers=analyst).status_code == 200
        refused = httpx.get(f"{proxy.url}/v1/namespaces/finance", headers=outsider)
        assert refused.status_code == 403 and refused.json()["error"]["type"] == "ForbiddenException"
        assert httpx.get(f"{proxy.url}/management/v1/roles", headers=analyst).status_code == 403
        admin.close()
    finally:
        proxy.stop()
