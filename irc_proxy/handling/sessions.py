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
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

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
