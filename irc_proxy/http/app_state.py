"""The application's shared objects, typed: what the lifespan builds once and every request reads.

Starlette copies the lifespan's state into each request's ``scope["state"]``; this module puts one
:class:`AppState` there under one key, so handlers, pages and middleware read typed attributes
(``app_state(request).catalogs``) instead of untyped ``request.state`` names. Per-request values (the
request id, the :class:`~irc_proxy.handling.security.context.RequestContext`) stay in ``scope["state"]``
beside it, each behind its own accessor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from starlette.requests import HTTPConnection

if TYPE_CHECKING:
    from irc_proxy.audit import Auditor
    from irc_proxy.handling.catalog import Catalogs
    from irc_proxy.handling.operations.scan_plans import ScanPlanning
    from irc_proxy.handling.operations.trash import Trash
    from irc_proxy.handling.paging import PageTokens
    from irc_proxy.handling.security.authn import Authenticator, TokenService
    from irc_proxy.handling.security.authz import Authorizer
    from irc_proxy.handling.security.sessions import Revocations
    from irc_proxy.http.idempotency import OutcomeStore
    from irc_proxy.settings import Settings
    from irc_proxy.threads import ThreadRunner

KEY = "app"
"""The key of the :class:`AppState` in the lifespan state (and so in every request's ``scope["state"]``)."""

ReadinessCheck = Callable[[], Awaitable[None]]


class AuditQueries(Protocol):
    """Reads the audit trail (``stores.audit_query.AuditReader``; http/ never imports a store)."""

    async def query(self, **filters: Any) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class AppState:
    """Everything a request may use that lives as long as the application."""

    settings: Settings
    catalogs: Catalogs
    threads: ThreadRunner
    """The shared worker pool for blocking work (parsing large bodies, SDK calls)."""
    authenticator: Authenticator
    authorizer: Authorizer
    token_service: TokenService | None
    """Issues tokens (``auth.mode = "oauth2"``); None otherwise."""
    revocations: Revocations | None
    """Sign-outs and used OIDC flows shared by replicas; None with ``auth.mode = "none"``."""
    auditor: Auditor
    audit_reader: AuditQueries
    idempotency: OutcomeStore | None
    """Stored outcomes of keyed requests; None when ``server.idempotency_key_lifetime`` is unset."""
    page_tokens: PageTokens
    csrf_keys: list[bytes]
    readiness: Mapping[str, ReadinessCheck]
    scan_planning: ScanPlanning
    trash: Trash


def from_scope(scope: MutableMapping[str, Any]) -> AppState | None:
    """The application state in an ASGI scope (pure-ASGI middleware), or None outside a lifespan."""
    found = (scope.get("state") or {}).get(KEY)
    return found if isinstance(found, AppState) else None


def app_state(connection: HTTPConnection) -> AppState:
    """The application state of a request (or websocket). Raises RuntimeError outside a lifespan."""
    found = connection.scope.get("state", {}).get(KEY)
    if found is None:
        raise RuntimeError("The application state is missing: the app was started without its lifespan")
    state: AppState = found
    return state
