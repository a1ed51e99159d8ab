"""Authentication, free of HTTP: who a bearer token names, and the ``oauth2`` mode's token service.

Every mode is an :class:`Authenticator`; the HTTP layer extracts the token and asks it. Secrets
(client secrets, tokens, keys) never appear in messages or logs.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, RSAKey

from irc_proxy.errors import NotAuthenticated

_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a name and the roles its token carries."""

    name: str
    roles: tuple[str, ...] = ()


ANONYMOUS = Principal("anonymous")


class Authenticator(Protocol):
    """Turns a bearer token into a :class:`Principal`."""

    @property
    def required(self) -> bool:
        """Whether a request without a token is refused."""

    async def authenticate(self, token: str) -> Principal:
        """Raises: NotAuthenticated: the token is malformed, forged, expired or meant for someone else."""


class NoAuthentication:
    """``mode = "none"``: everyone is ``anonymous``; tokens are ignored."""

    required = False

    async def authenticate(self, token: str) -> Principal:
        return ANONYMOUS


# Client secrets ---------------------------------------------------------------------------
def hash_secret(secret: str) -> str:
    """``scrypt$N$r$p$salt$hash`` (base64url), for ``auth.clients[].secret_hash``."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(secret.encode(), salt=salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P)
    return f"scrypt${_SCRYPT_N}${_SCRYPT_R}${_SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def verify_secret(secret: str, hashed: str) -> bool:
    try:
        kind, n, r, p, salt, expected = hashed.split("$")
        if kind != "scrypt":
            return False
        digest = hashlib.scrypt(secret.encode(), salt=_unb64(salt), n=int(n), r=int(r), p=int(p))
    except ValueError:
        return False
    return hmac.compare_digest(digest, _unb64(expected))


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# Signing keys -----------------------------------------------------------------------------
SigningKey = RSAKey | ECKey


def generate_signing_key(algorithm: str) -> SigningKey:
    key: SigningKey = ECKey.generate_key("P-256") if algorithm == "ES256" else RSAKey.generate_key(2048)
    return load_signing_key(key.as_pem(private=True), algorithm)


def load_signing_key(pem: bytes, algorithm: str) -> SigningKey:
    """A private key from PEM, with ``kid`` (its RFC 7638 thumbprint), ``alg`` and ``use`` set."""
    cls: type[SigningKey] = ECKey if algorithm.startswith("ES") else RSAKey
    plain = cls.import_key(pem)
    if not plain.is_private:
        raise ValueError("the signing key must be a private key")
    return cls.import_key(pem, parameters={"kid": plain.thumbprint(), "alg": algorithm, "use": "sig"})


def verify_claims(claims: dict[str, Any], issuer: str, audience: str, leeway: int = 0) -> None:
    """Issuer, audience, expiry (required) and not-before; raises JoseError."""
    jwt.JWTClaimsRegistry(
        leeway=leeway,
        iss={"essential": True, "value": issuer},
        aud={"essential": True, "value": audience},
        exp={"essential": True},
    ).validate(claims)


def roles_from(value: Any) -> tuple[str, ...]:
    """A roles/groups claim: a list of strings, or one space- or comma-separated string."""
    if isinstance(value, str):
        return tuple(part for part in value.replace(",", " ").split() if part)
    if isinstance(value, list):
        return tuple(str(item) for item in value)
    return ()


TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"  # noqa: S105 (a grant type name)
_EXCHANGEABLE_TYPES = frozenset(
    {"urn:ietf:params:oauth:token-type:access_token", "urn:ietf:params:oauth:token-type:jwt"}
)


# The oauth2 mode --------------------------------------------------------------------------
class TokenRequestError(Exception):
    """A token request is refused; ``error`` is the OAuth2 error code (RFC 6749 section 5.2)."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


@dataclass(frozen=True)
class Client:
    id: str
    secret_hash: str
    principal: str
    roles: tuple[str, ...] = ()


@dataclass
class TokenService:
    """Issues and verifies the proxy's own JWTs (``mode = "oauth2"``).

    ``keys`` holds every key whose tokens are accepted (published at the JWKS URL); ``signing``
    is the one new tokens are signed with.
    """

    signing: SigningKey
    keys: list[SigningKey]
    clients: dict[str, Client]
    issuer: str
    audience: str
    lifetime_seconds: int
    required: bool = True
    stored_secret: Callable[[str], str | None] | None = None
    """Client secrets of principals created through the admin API (client id = principal name)."""
    _dummy_hash: str = field(default_factory=lambda: hash_secret(secrets.token_urlsafe(16)))

    def _client(self, client_id: str) -> Client | None:
        client = self.clients.get(client_id)
        if client is None and self.stored_secret is not None:
            hashed = self.stored_secret(client_id)
            client = Client(client_id, hashed, client_id) if hashed else None
        return client

    def issue(self, grant_type: str, client_id: str, client_secret: str, scope: str = "") -> dict[str, Any]:
        """The token response of the client-credentials grant (synchronous: scrypt is slow on purpose).

        Raises:
            TokenRequestError: unsupported_grant_type, invalid_request or invalid_client.
        """
        if grant_type != "client_credentials":
            raise TokenRequestError(
                "unsupported_grant_type", f"supported grants: client_credentials, {TOKEN_EXCHANGE_GRANT}"
            )
        if not client_id or not client_secret:
            raise TokenRequestError("invalid_request", "client_id and client_secret are required")
        client = self._client(client_id)
        # Hash even for an unknown client, so timing does not reveal which client ids exist.
        matches = verify_secret(client_secret, client.secret_hash if client else self._dummy_hash)
        if client is None or not matches:
            raise TokenRequestError("invalid_client", "unknown client or wrong secret")
        return self._mint(client.principal, client.id, list(client.roles), scope)

    def exchange(self, subject_token: str, subject_token_type: str, scope: str = "") -> dict[str, Any]:
        """RFC 8693 token exchange of one of our own valid tokens for a fresh one (how Iceberg clients refresh).

        Raises:
            TokenRequestError: invalid_request (no subject token or an unknown type) or invalid_grant.
        """
        if subject_token_type not in _EXCHANGEABLE_TYPES:
            raise TokenRequestError(
                "invalid_request", f"subject_token_type must be one of {sorted(_EXCHANGEABLE_TYPES)}"
            )
        if not subject_token:
            raise TokenRequestError("invalid_request", "subject_token is required")
        try:
            claims = self._verified(subject_token)
        except NotAuthenticated as exc:
            raise TokenRequestError("invalid_grant", exc.message) from None
        roles = list(roles_from(claims.get("roles")))
        return self._mint(str(claims.get("sub", "")), str(claims.get("client_id", "")), roles, scope)

    def _mint(self, principal: str, client_id: str, roles: list[str], scope: str) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": principal,
            "aud": self.audience,
            "iat": now,
            "nbf": now,
            "exp": now + self.lifetime_seconds,
            "jti": uuid.uuid4().hex,
            "client_id": client_id,
            "roles": roles,
        }
        header = {"alg": self.signing.alg, "kid": self.signing.kid, "typ": "JWT"}
        token = jwt.encode(header, claims, self.signing, algorithms=[str(self.signing.alg)])
        response = {
            "access_token": token,
            "token_type": "bearer",
            "expires_in": self.lifetime_seconds,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        }
        return response | ({"scope": scope} if scope else {})

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.as_dict(private=False) for key in self.keys]}

    async def authenticate(self, token: str) -> Principal:
        claims = self._verified(token)
        return Principal(str(claims.get("sub", "")), roles_from(claims.get("roles")))

    def _verified(self, token: str) -> dict[str, Any]:
        algorithms = sorted({str(key.alg) for key in self.keys})
        try:
            decoded = jwt.decode(token, KeySet(list(self.keys)), algorithms=algorithms)
            verify_claims(decoded.claims, self.issuer, self.audience)
        except (JoseError, ValueError) as exc:
            raise NotAuthenticated(f"Invalid bearer token: {_reason(exc)}") from None
        return dict(decoded.claims)


def clients_from(entries: Iterable[tuple[str, str, str, list[str]]]) -> dict[str, Client]:
    return {cid: Client(cid, hashed, principal, tuple(roles)) for cid, hashed, principal, roles in entries}


def _reason(exc: Exception) -> str:
    """A short, secret-free reason (never the token itself)."""
    if isinstance(exc, JoseError):
        return exc.error + (f" ({exc.description})" if exc.description else "")
    return "malformed token"
