"""The typed state in ``scope["state"]``: the application's shared objects and each request's record.

Starlette copies the lifespan's state into each request's ``scope["state"]``; this module puts one
:class:`AppState` there under one key, so handlers, pages and middleware read typed attributes
(``app_state(request).catalogs``) instead of untyped ``request.state`` names. The one per-request value
kept there, the request's :class:`~irc_proxy.handling.security.context.RequestContext` (its id, caller,
status and audit note), is begun by ``middleware.Edge`` (:func:`begin`) and read through
:func:`request_context` / :func:`context_of`. No other module reads or writes ``scope["state"]``
(``tests/unit/http/test_app_state.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from starlette.requests import HTTPConnection

from irc_proxy.handling.security.context import RequestContext

if TYPE_CHECKING:
    from irc_proxy.audit import Auditor
    from irc_proxy.handling.catalog import Catalogs
    from irc_proxy.handling.maintenance.runs import Maintenance
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


class AuditQuery(Protocol):
    """What the admin API and pages need of ``irc_proxy.stores.audit_query.AuditReader`` (http imports no store)."""

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
    audit_reader: AuditQuery
    idempotency: OutcomeStore | None
    """Stored outcomes of keyed requests; None when ``server.idempotency_key_lifetime`` is unset."""
    page_tokens: PageTokens
    csrf_keys: list[bytes]
    readiness: Mapping[str, ReadinessCheck]
    scan_planning: ScanPlanning
    trash: Trash
    maintenance: Maintenance
    """Table maintenance runs (queued here, run by every replica's worker)."""


def from_scope(scope: MutableMapping[str, Any]) -> AppState | None:
    """The application state in an ASGI scope (pure-ASGI middleware), or None outside a lifespan."""
    found = (scope.get("state") or {}).get(KEY)
    return found if isinstance(found, AppState) else None


def require(scope: MutableMapping[str, Any]) -> AppState:
    """The application state in an ASGI scope. Raises RuntimeError outside a lifespan."""
    found = from_scope(scope)
    if found is None:
        raise RuntimeError(_MISSING)
    return found


def app_state(connection: HTTPConnection) -> AppState:
    """The application state of a request (or websocket). Raises RuntimeError outside a lifespan."""
    found = connection.scope.get("state", {}).get(KEY)
    if found is None:
        raise RuntimeError(_MISSING)
    state: AppState = found
    return state


_MISSING = "The application state is missing: the app was started without its lifespan"

# Per request ------------------------------------------------------------------------------------------------
_CONTEXT = "irc_proxy.request"
"""The key of the request's :class:`RequestContext` in ``scope["state"]`` (shared by every copy of the scope
that routing and middleware make, which is why it is not kept in the scope itself)."""


def begin(scope: MutableMapping[str, Any], request_id: str) -> RequestContext:
    """A new record for the request of ``scope`` (``middleware.Edge``, once per request)."""
    context = RequestContext(request_id)
    scope.setdefault("state", {})[_CONTEXT] = context
    return context


def context_of(scope: MutableMapping[str, Any]) -> RequestContext | None:
    """The request's record, or None when ``middleware.Edge`` has not begun one."""
    state = scope.get("state")
    found = state.get(_CONTEXT) if state is not None else None
    return found if isinstance(found, RequestContext) else None


def request_context(connection: HTTPConnection) -> RequestContext:
    """The request's record (begun by ``middleware.Edge``; a bare one outside it, e.g. in unit tests)."""
    return scope_context(connection.scope)


def scope_context(scope: MutableMapping[str, Any]) -> RequestContext:
    """The record of the request of ``scope`` (pure-ASGI code), as :func:`request_context`."""
    state = scope.setdefault("state", {})
    found: RequestContext | None = state.get(_CONTEXT)
    if found is None:
        found = state[_CONTEXT] = RequestContext(request_id="")
    return found
