"""Run credentials: the bearer token a maintenance run's Spark driver calls this proxy with.

A Spark executor run (``handling/maintenance/spark.py``) starts a Spark session whose catalog is this proxy, so
every commit it makes passes authorization, audit and confinement like any client's. Its token is minted per run:

* **scoped**: it carries its own grants, exactly ``table.write`` (which implies ``table.read``) and
  ``credentials.write`` on the run's one table; nothing from the state database or ``auth.admins`` widens them,
  and the admin API refuses it. ``credentials.write`` lets the driver ask for the table's vended, table-scoped
  storage credentials like any writer (on a catalog with ``vending``): without it a driver on S3 would need keys
  of its own, wider than the one table;
* **short-lived**: it expires with the run's timeout (``spark_timeout``) plus a minute, and is refused as soon as
  its run is no longer ``running`` in the state database (``RunIsLive``): a credential read from a cluster's logs
  or an executor's memory cannot be replayed once the run has finished;
* **shared by replicas**: an HMAC-SHA256 over its claims with a key derived from the page-token key the replicas
  share through the state database, so a driver behind a load balancer may reach any replica;
* **never logged**: the child gets it on its standard input, never on its command line or in its environment;
  Spark redacts configuration keys named ``*token*`` in its logs and UI.

The principal is ``irc-proxy`` (the system principal that records ``maintenance.run``); its audit records
name the run in the reason of their authorization decision (the grant's role is ``maintenance-run:<id>``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from irc_proxy.errors import NotAuthenticated
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.security.authn import SYSTEM_NAME, Authenticator, Principal
from irc_proxy.handling.security.authz import Grant, Grants, Privilege, Securable, SecurableType

PREFIX = "ircrun."
"""Run credentials start with this; any other token goes to the configured authenticator."""
PRINCIPAL = SYSTEM_NAME
_DERIVATION = b"irc-proxy maintenance run credential v1"
MAX_TOKEN_CHARS = 4096


@dataclass(frozen=True)
class RunScope:
    """What a run credential allows: one table of one catalog, for one run, until ``expires_at``."""

    run_id: str
    catalog: str
    ident: TableIdent
    expires_at: float

    def grants(self) -> Grants:
        table = Securable(SecurableType.TABLE, self.catalog, tuple(self.ident.namespace), self.ident.name)
        role = f"maintenance-run:{self.run_id}"
        privileges = (Privilege.TABLE_WRITE, Privilege.CREDENTIALS_WRITE)
        return Grants([Grant(role, table, privilege) for privilege in privileges], fixed=True)


class RunCredentials:
    """Mints and verifies run credentials with keys shared by replicas (the first signs, all verify)."""

    def __init__(self, shared_keys: Sequence[bytes]) -> None:
        if not shared_keys:
            raise ValueError("run credentials need at least one key")
        self._keys = [hmac.new(key, _DERIVATION, hashlib.sha256).digest() for key in shared_keys]

    def mint(self, run_id: str, catalog: str, ident: TableIdent, lifetime_seconds: float) -> str:
        claims = {
            "run": run_id,
            "cat": catalog,
            "ns": list(ident.namespace),
            "tbl": ident.name,
            "exp": int(time.time() + lifetime_seconds),
        }
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        return f"{PREFIX}{body}.{_b64(self._sign(self._keys[0], body))}"

    def verify(self, token: str) -> RunScope:
        """Raises: NotAuthenticated: not a run credential, forged, malformed or expired."""
        if not token.startswith(PREFIX) or len(token) > MAX_TOKEN_CHARS:
            raise NotAuthenticated("Invalid bearer token: not a run credential")
        body, _, signature = token[len(PREFIX) :].partition(".")
        try:
            given = _unb64(signature)
        except ValueError:
            raise NotAuthenticated("Invalid bearer token: malformed run credential") from None
        if not any(hmac.compare_digest(self._sign(key, body), given) for key in self._keys):
            raise NotAuthenticated("Invalid bearer token: bad run credential signature")
        try:
            claims: dict[str, Any] = json.loads(_unb64(body))
            scope = RunScope(
                str(claims["run"]),
                str(claims["cat"]),
                TableIdent(tuple(str(level) for level in claims["ns"]), str(claims["tbl"])),
                float(claims["exp"]),
            )
        except (ValueError, KeyError, TypeError):
            raise NotAuthenticated("Invalid bearer token: malformed run credential") from None
        if scope.expires_at <= time.time():
            raise NotAuthenticated("Invalid bearer token: the run credential expired")
        return scope

    @staticmethod
    def _sign(key: bytes, body: str) -> bytes:
        return hmac.new(key, body.encode(), hashlib.sha256).digest()


RunIsLive = Callable[[RunScope], Awaitable[bool]]
"""Whether a credential's run is running now, on the credential's table (the state database says)."""


class WithRunCredentials:
    """An :class:`Authenticator` that accepts run credentials before asking the configured one (any mode: with
    ``auth.mode = "none"`` the driver is still held to its one table). With ``live``, a credential whose run is
    over (finished, failed, taken over by another replica's attempt) is refused although its signature and expiry
    hold: one look-up of the run by its key per request, the price of a credential that dies with its run."""

    def __init__(self, inner: Authenticator, credentials: RunCredentials, live: RunIsLive | None = None) -> None:
        self.inner, self.credentials, self.live = inner, credentials, live

    @property
    def required(self) -> bool:
        return self.inner.required

    async def authenticate(self, token: str) -> Principal:
        if not token.startswith(PREFIX):
            return await self.inner.authenticate(token)
        scope = self.credentials.verify(token)
        if self.live is not None and not await self.live(scope):
            raise NotAuthenticated("Invalid bearer token: the run credential's run is over")
        return Principal(PRINCIPAL, (), scope.grants())


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise ValueError("not base64url") from exc
