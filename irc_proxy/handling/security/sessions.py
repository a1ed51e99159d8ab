"""Sessions of the ``oauth2`` mode: which client a token belongs to, and whether that client still stands.

Every token the proxy issues names its client (``client_id``), a fingerprint of that client's secret hash
when the client logged in (``cfp``) and the time it did (``auth_time``). Secret hashes are salted, so
rotating a secret changes the fingerprint, and deleting a principal or removing a configured client
leaves nothing to match: either way the client's tokens stop working, for requests and for exchange.
Registered principals are read from the state database (shared by replicas) through a cache of
``auth.grants_cache_seconds``; configured clients are this process's configuration.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

from irc_proxy.errors import NotAuthenticated

StoredSecret = Callable[[str], Awaitable[str | None]]
"""The secret hash of a principal registered in the state database (client id = principal name), if any."""


@dataclass(frozen=True)
class Client:
    id: str
    secret_hash: str
    principal: str
    roles: tuple[str, ...] = ()

    @cached_property
    def fingerprint(self) -> str:
        return fingerprint(self.secret_hash)


def fingerprint(secret_hash: str) -> str:
    """A short digest of a secret hash (the ``cfp`` claim). It reveals nothing usable: the hash's salt is
    in the digested text, so the fingerprint cannot be used to test guesses of the secret."""
    digest = hashlib.sha256(b"irc-proxy session\x00" + secret_hash.encode()).digest()
    return base64.urlsafe_b64encode(digest[:12]).decode()


class ClientDirectory:
    """The clients that may log in: configured ones first, then principals with credentials in the state DB."""

    def __init__(
        self,
        configured: dict[str, Client],
        stored: StoredSecret | None = None,
        cache_seconds: float = 2.0,
        cache_entries: int = 4096,
    ) -> None:
        self.configured = configured
        self._stored = stored
        self._cache_seconds = cache_seconds
        self._cache_entries = cache_entries
        self._cache: dict[str, tuple[float, Client | None]] = {}

    async def get(self, client_id: str, *, fresh: bool = False) -> Client | None:
        """The client as it stands now (``fresh``) or at most ``cache_seconds`` ago."""
        client = self.configured.get(client_id)
        if client is not None or self._stored is None:
            return client
        now = time.monotonic()
        cached = self._cache.get(client_id)
        if not fresh and cached is not None and cached[0] > now:
            return cached[1]
        hashed = await self._stored(client_id)
        client = Client(client_id, hashed, client_id) if hashed else None
        if len(self._cache) >= self._cache_entries:
            self._cache.clear()
        self._cache[client_id] = (now + self._cache_seconds, client)
        return client

    def forget(self, client_id: str) -> None:
        """Drop a cached principal (after its secret was rotated or it was deleted through this replica)."""
        self._cache.pop(client_id, None)

    async def session_client(self, claims: dict[str, Any], max_session_seconds: int) -> Client:
        """The client a token's session belongs to, if the session still stands.

        Raises:
            NotAuthenticated: the token names no client session, the client is gone or has rotated its
                secret, or the session is older than ``max_session_seconds``.
        """
        client_id, bound, auth_time = claims.get("client_id"), claims.get("cfp"), claims.get("auth_time")
        if not isinstance(client_id, str) or not isinstance(bound, str) or not isinstance(auth_time, int):
            raise NotAuthenticated("Invalid bearer token: it belongs to no client session; authenticate again")
        client = await self.get(client_id)
        if client is None or client.fingerprint != bound:
            raise NotAuthenticated(
                "Invalid bearer token: its client was removed or its credentials rotated; authenticate again"
            )
        if auth_time + max_session_seconds <= time.time():
            raise NotAuthenticated(
                "Invalid bearer token: the session reached auth.max_session_seconds; authenticate with the "
                "client credentials again"
            )
        return client


# Sign-out and one-time values ------------------------------------------------------------------------------
class RevocationStore(Protocol):
    """The state database's record of revoked tokens and used one-time values (``stores.revocations``)."""

    async def add(self, kind: str, digest: str, expires_at: float, now: float) -> bool: ...

    async def has(self, kind: str, digest: str, now: float) -> bool: ...

    async def live(self, kind: str, now: float) -> set[str]: ...


TOKEN = "token"  # noqa: S105 (a kind of record)
MAX_REVOCATION_SECONDS = 86_400 * 2
"""How long a revocation is kept when the token names no expiry of its own."""


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class Revocations:
    """Sessions signed out before they expire, and values that may be used once (OIDC sign-in flows).

    Both live in the state database, so they hold across replicas. Signing out a token of a proxy session
    (one with a ``sid`` claim: every token this proxy issues, exchanged ones keep their session's) revokes
    the session, so tokens exchanged from it earlier end with it, and a flood of exchanged tokens signed out
    one by one stores one row; other tokens (an OIDC provider's) are revoked alone. Checking a token costs
    two SHA-256 and set lookups: each replica re-reads the live revoked digests at most every
    ``refresh_seconds`` (one read at a time; meanwhile requests use the set read last), and adds its own
    revocations at once. So a token signed out on one replica is refused there at once and on the others
    within ``refresh_seconds``.
    """

    def __init__(self, store: RevocationStore, refresh_seconds: float = 1.0, token_seconds: int = 86_400) -> None:
        """``token_seconds``: the longest lifetime of a token this proxy issues (a revoked session's row is
        kept that long: every token of the session minted before the sign-out has expired by then)."""
        self._store = store
        self._refresh_seconds = refresh_seconds
        self._token_seconds = token_seconds
        self._revoked: set[str] = set()
        self._fresh_until = 0.0
        self._refreshing = False

    async def revoke(self, token: str) -> None:
        """Refuse ``token`` (a verified one) from now on, and the rest of its session when it has one."""
        now = time.time()
        session = session_digest(token)
        if session is not None:
            # +60 s: an exchange that was under way when the session was signed out
            revoked, expires_at = session, now + self._token_seconds + 60
        else:
            expires = token_expiry(token)
            revoked, expires_at = digest(token), expires if expires is not None else now + MAX_REVOCATION_SECONDS
        await self._store.add(TOKEN, revoked, min(expires_at, now + MAX_REVOCATION_SECONDS), now)
        self._revoked.add(revoked)

    async def check(self, token: str) -> None:
        """Raises: NotAuthenticated: the token or its session was revoked (signed out)."""
        if time.monotonic() >= self._fresh_until and not self._refreshing:
            self._refreshing = True
            try:
                self._revoked = await self._store.live(TOKEN, time.time())
                self._fresh_until = time.monotonic() + self._refresh_seconds
            finally:
                self._refreshing = False
        if self._revoked and (digest(token) in self._revoked or session_digest(token) in self._revoked):
            raise NotAuthenticated("Invalid bearer token: its session was signed out; authenticate again")

    async def use_once(self, kind: str, value: str, expires_at: float) -> bool:
        """Record that ``value`` (of ``kind``) was used; False when it had been already."""
        return await self._store.add(kind, digest(f"{kind}\x00{value}"), expires_at, time.time())

    async def used(self, kind: str, value: str) -> bool:
        """Whether ``value`` (of ``kind``) was used already (read only: ``use_once`` records it)."""
        return await self._store.has(kind, digest(f"{kind}\x00{value}"), time.time())


def _claims(token: str) -> dict[str, Any]:
    """A JWT's claims, unverified (whoever asks verified the token), or {} when it is not a JWT."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return {}
    return claims if isinstance(claims, dict) else {}


def session_digest(token: str) -> str | None:
    """The digest naming a proxy token's session (client and ``sid``), or None for a token without one."""
    claims = _claims(token)
    client, sid, bound = claims.get("client_id"), claims.get("sid"), claims.get("cfp")
    if not (isinstance(client, str) and isinstance(sid, str) and isinstance(bound, str)):
        return None
    return digest(f"session\x00{client}\x00{sid}")


def token_expiry(token: str) -> float | None:
    """A JWT's ``exp`` claim, unverified (the token was verified by whoever asks to revoke it), if any."""
    exp = _claims(token).get("exp")
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None
