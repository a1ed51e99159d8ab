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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, RSAKey
from joserfc.jwt import ClaimsOption

from irc_proxy.errors import NotAuthenticated, TokenRequestError
from irc_proxy.handling.security.sessions import Client, ClientDirectory, Revocations
from irc_proxy.handling.security.throttle import Busy, HashGate, LoginThrottle
from irc_proxy.settings import is_reserved_principal

if TYPE_CHECKING:
    from irc_proxy.handling.security.authz import Grants

_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a name and the roles its token carries."""

    name: str
    roles: tuple[str, ...] = ()
    grants: Grants | None = None
    """Grants the token itself fixes (a run credential, ``run_tokens``): the caller holds exactly these; None: its
    grants are looked up by name and roles."""


ANONYMOUS = Principal("anonymous")
SYSTEM_NAME = "irc-proxy"
"""The proxy itself as a principal (``context.SYSTEM_PRINCIPAL``): maintenance, trash expiry, a run's credential."""
RESERVED_NAMES = frozenset({ANONYMOUS.name, SYSTEM_NAME})
"""Names no caller may hold: an audit record by ``irc-proxy`` or ``anonymous`` must mean the proxy or no token
(``settings.RESERVED_PRINCIPALS`` repeats them for the configuration's clients)."""


def unreserved(principal: Principal) -> Principal:
    """``principal``, unless a token names a reserved principal.

    Raises:
        NotAuthenticated: the token names ``irc-proxy`` or ``anonymous`` (in any case, padded or disguised by
            invisible characters: ``settings.is_reserved_principal``).
    """
    if is_reserved_principal(principal.name):
        raise NotAuthenticated(f"Invalid bearer token: the principal name {principal.name!r} is reserved")
    return principal


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


def verify_claims(claims: dict[str, Any], issuer: str, audience: str, leeway: int = 0, *, expiry: bool = True) -> None:
    """Issuer, audience, expiry (required; not checked when not ``expiry``) and not-before; raises JoseError."""
    iss: ClaimsOption = {"essential": True, "value": issuer}
    aud: ClaimsOption = {"essential": True, "value": audience}
    if expiry:
        jwt.JWTClaimsRegistry(leeway=leeway, iss=iss, aud=aud, exp={"essential": True}).validate(claims)
    else:
        jwt.JWTClaimsRegistry(leeway=leeway, iss=iss, aud=aud).validate({k: v for k, v in claims.items() if k != "exp"})


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
@dataclass(frozen=True)
class IssuedToken:
    """A token response and whom it was issued to (for the audit trail and the access log)."""

    body: dict[str, Any]
    principal: str
    client_id: str


@dataclass
class TokenService:
    """Issues and verifies the proxy's own JWTs (``mode = "oauth2"``).

    ``keys`` holds every key whose tokens are accepted (published at the JWKS URL); ``signing``
    is the one new tokens are signed with. Tokens belong to a client session (:mod:`.sessions`):
    they stop working when the client is removed or rotates its secret, and exchange never extends
    them past ``max_session_seconds`` after the client's login. Logins are throttled by ``throttle``
    (when given) and their secret checks bounded by ``hashes``.
    """

    signing: SigningKey
    keys: list[SigningKey]
    clients: ClientDirectory
    issuer: str
    audience: str
    lifetime_seconds: int
    max_session_seconds: int = 86_400
    throttle: LoginThrottle | None = None
    required: bool = True
    _dummy_hash: str = field(default_factory=lambda: hash_secret(secrets.token_urlsafe(16)))
    hashes: HashGate = field(kw_only=True)
    revocations: Revocations | None = field(default=None, kw_only=True)
    """Tokens signed out (the console's sign-out): neither accepted nor exchanged for fresh ones."""

    async def issue(
        self, grant_type: str, client_id: str, client_secret: str, scope: str = "", address: str = ""
    ) -> IssuedToken:
        """The token response of the client-credentials grant: a new session.

        Raises:
            TokenRequestError: unsupported_grant_type, invalid_request, invalid_client, slow_down
                (too many failures of this client id or from this address) or temporarily_unavailable.
        """
        if grant_type != "client_credentials":
            raise TokenRequestError(
                "unsupported_grant_type", f"supported grants: client_credentials, {TOKEN_EXCHANGE_GRANT}"
            )
        if not client_id or not client_secret:
            raise TokenRequestError("invalid_request", "client_id and client_secret are required", client_id)
        client = await self._login(client_id, client_secret, address)
        return self._mint(client, scope, int(time.time()))

    async def exchange(
        self,
        subject_token: str,
        subject_token_type: str,
        scope: str = "",
        client_id: str = "",
        client_secret: str = "",
        address: str = "",
    ) -> IssuedToken:
        """RFC 8693 token exchange of one of our own tokens for a fresh one (how Iceberg clients refresh).

        Without client authentication the subject token must be valid and its session standing; the new
        token is minted from the client as it stands now (not copied from the subject token), keeps the
        session's ``auth_time`` and expires no later than ``max_session_seconds`` after it.

        With client authentication (how Java clients retry once their token expired: the expired token
        as subject, the client's credentials in a Basic header) the client logs in as with client
        credentials, throttled alike; the subject token need only be ours (expired or not) and name the
        same client. The new token starts a new session.

        Raises:
            TokenRequestError: invalid_request (no subject token or an unknown type), invalid_grant (not
                our token, its client removed or rotated, its session at its end, or another client's),
                or what a client-credentials login raises.
        """
        if subject_token_type not in _EXCHANGEABLE_TYPES:
            raise TokenRequestError(
                "invalid_request", f"subject_token_type must be one of {sorted(_EXCHANGEABLE_TYPES)}"
            )
        if not subject_token:
            raise TokenRequestError("invalid_request", "subject_token is required", client_id)
        if client_secret:
            client = await self._login(client_id, client_secret, address)
            try:
                claims = self._verified(subject_token, expiry=False)
            except NotAuthenticated as exc:
                raise TokenRequestError("invalid_grant", exc.message, client_id) from None
            if claims.get("client_id") != client.id:
                raise TokenRequestError("invalid_grant", "the subject token belongs to another client", client_id)
            return self._mint(client, scope, int(time.time()))
        subject_client = ""
        try:
            claims = self._verified(subject_token)
            subject_client = str(claims.get("client_id", ""))
            client = await self.clients.session_client(claims, self.max_session_seconds)
            if self.revocations is not None:
                await self.revocations.check(subject_token)
        except NotAuthenticated as exc:
            raise TokenRequestError("invalid_grant", exc.message, subject_client) from None
        # the session goes on: its id is kept, so signing it out ends this token too
        sid = claims.get("sid")
        return self._mint(client, scope, int(claims["auth_time"]), sid if isinstance(sid, str) else None)

    async def _login(self, client_id: str, client_secret: str, address: str) -> Client:
        """The client whose secret this is: throttled, one bounded scrypt check, failures counted."""
        if self.throttle is not None:
            wait = await self.throttle.retry_after(client_id, address)
            if wait is not None:
                description = f"too many failed logins for this client or from this address; retry in {wait} s"
                raise TokenRequestError("slow_down", description, client_id, wait)
        client = await self.clients.get(client_id, fresh=True)
        # Hash even for an unknown client, so timing does not reveal which client ids exist.
        hashed = client.secret_hash if client else self._dummy_hash
        try:
            matches = await self.hashes.run(lambda: verify_secret(client_secret, hashed))
        except Busy:
            raise TokenRequestError(
                "temporarily_unavailable", "too many logins at once; retry shortly", client_id, 1
            ) from None
        if client is None or not matches:
            if self.throttle is not None:
                await self.throttle.failed(client_id, address)
            raise TokenRequestError("invalid_client", "unknown client or wrong secret", client_id)
        return client

    def _mint(self, client: Client, scope: str, auth_time: int, sid: str | None = None) -> IssuedToken:
        """A token of ``client``'s session ``sid`` (a new session when None) that began at ``auth_time``."""
        now = int(time.time())
        expires = min(now + self.lifetime_seconds, auth_time + self.max_session_seconds)
        claims = {
            "iss": self.issuer,
            "sub": client.principal,
            "aud": self.audience,
            "iat": now,
            "nbf": now,
            "exp": expires,
            "jti": uuid.uuid4().hex,
            "client_id": client.id,
            "cfp": client.fingerprint,
            "auth_time": auth_time,
            "sid": sid or uuid.uuid4().hex,
            "roles": list(client.roles),
        }
        header = {"alg": self.signing.alg, "kid": self.signing.kid, "typ": "JWT"}
        token = jwt.encode(header, claims, self.signing, algorithms=[str(self.signing.alg)])
        body = {
            "access_token": token,
            "token_type": "bearer",
            "expires_in": expires - now,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        }
        return IssuedToken(body | ({"scope": scope} if scope else {}), client.principal, client.id)

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.as_dict(private=False) for key in self.keys]}

    async def authenticate(self, token: str) -> Principal:
        """The token's principal, while its client session stands.

        A token without a ``client_id`` claim was not issued here but signed with the configured
        key by its holder (e.g. a service token): it is honoured until it expires, never exchanged.
        """
        claims = self._verified(token)
        if "client_id" not in claims:
            return unreserved(Principal(str(claims.get("sub", "")), roles_from(claims.get("roles"))))
        client = await self.clients.session_client(claims, self.max_session_seconds)
        return unreserved(Principal(client.principal, client.roles))

    def _verified(self, token: str, *, expiry: bool = True) -> dict[str, Any]:
        """Claims of a token signed with one of our keys, for us; expired ones too when not ``expiry``."""
        algorithms = sorted({str(key.alg) for key in self.keys})
        try:
            decoded = jwt.decode(token, KeySet(list(self.keys)), algorithms=algorithms)
            verify_claims(decoded.claims, self.issuer, self.audience, expiry=expiry)
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
