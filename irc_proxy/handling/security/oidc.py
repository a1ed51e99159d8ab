"""The ``oidc`` mode: bearer tokens from an external issuer, verified against its published JWKS.

The JWKS URL is discovered from ``<issuer>/.well-known/openid-configuration``. Keys are cached for
``jwks_cache_seconds`` and fetched again when a token names an unknown ``kid`` (key rotation), at
most once per ``jwks_min_refresh_seconds``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from irc_proxy.errors import NotAuthenticated, ServiceUnavailable
from irc_proxy.handling.security.authn import Principal, roles_from, unreserved, verify_claims

log = logging.getLogger("irc_proxy.auth")


class OidcAuthenticator:
    required = True

    def __init__(
        self,
        issuer: str,
        audience: str,
        algorithms: list[str],
        principal_claim: str = "sub",
        roles_claim: str = "roles",
        cache_seconds: float = 3600,
        min_refresh_seconds: float = 30,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.algorithms = [alg for alg in algorithms if alg.lower() != "none"]
        self.principal_claim = principal_claim
        self.roles_claim = roles_claim
        self.cache_seconds = cache_seconds
        self.min_refresh_seconds = min_refresh_seconds
        self._http = http or httpx.AsyncClient(timeout=10, follow_redirects=False)
        self._keys: KeySet | None = None
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()

    async def close(self) -> None:
        await self._http.aclose()

    async def authenticate(self, token: str) -> Principal:
        try:
            header = jws.extract_compact(token.encode()).headers()
        except (JoseError, ValueError) as exc:
            raise NotAuthenticated("Invalid bearer token: malformed token") from exc
        if header.get("alg") not in self.algorithms:
            raise NotAuthenticated(f"Invalid bearer token: algorithm {header.get('alg')!r} is not allowed")
        keys = await self._key_set(str(header.get("kid") or ""))
        try:
            claims = jwt.decode(token, keys, algorithms=self.algorithms).claims
            verify_claims(claims, self.issuer, self.audience)
        except JoseError as exc:
            raise NotAuthenticated(f"Invalid bearer token: {exc.error}") from None
        name = claims.get(self.principal_claim)
        if not isinstance(name, str) or not name:
            raise NotAuthenticated(f"Invalid bearer token: no {self.principal_claim!r} claim")
        return unreserved(Principal(name, roles_from(_claim(claims, self.roles_claim)) if self.roles_claim else ()))

    async def _key_set(self, kid: str) -> KeySet:
        """The cached keys, fetched again when stale or when ``kid`` is unknown (rate-limited)."""
        async with self._lock:
            age = time.monotonic() - self._fetched_at
            known = self._keys is not None and (not kid or any(key.kid == kid for key in self._keys.keys))
            if self._keys is None or age > self.cache_seconds or (not known and age >= self.min_refresh_seconds):
                try:
                    self._keys = await self._fetch()
                    self._fetched_at = time.monotonic()
                except (httpx.HTTPError, ValueError, JoseError) as exc:
                    log.warning("cannot fetch the JWKS of %s: %s", self.issuer, type(exc).__name__)
                    if self._keys is None:
                        raise ServiceUnavailable("The identity provider's keys cannot be fetched") from exc
            return self._keys

    async def _fetch(self) -> KeySet:
        discovery = await self._get_json(self.issuer.rstrip("/") + "/.well-known/openid-configuration")
        if discovery.get("issuer", self.issuer).rstrip("/") != self.issuer.rstrip("/"):
            raise ValueError("the discovery document names another issuer")
        jwks_uri = discovery.get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise ValueError("the discovery document has no jwks_uri")
        jwks = await self._get_json(jwks_uri)
        usable = [key for key in jwks.get("keys", []) if key.get("use", "sig") == "sig"]
        return KeySet.import_key_set({"keys": usable})

    async def _get_json(self, url: str) -> dict[str, Any]:
        response = await self._http.get(url)
        response.raise_for_status()
        body = response.json()
        if not isinstance(body, dict):
            raise ValueError(f"{url} did not return a JSON object")
        return body


def _claim(claims: dict[str, Any], path: str) -> Any:
    """A claim by dotted path (``realm_access.roles`` in Keycloak tokens)."""
    value: Any = claims
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value
