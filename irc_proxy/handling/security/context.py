"""The typed record of one request: who is calling, and what its audit record will say.

The HTTP edge creates one :class:`RequestContext` per request (``irc_proxy.http.middleware.Edge``),
authentication fills in the caller, the handler layer names the operation and notes each
authorization decision, and the audit trail reads it once the response is sent. Nothing here knows
HTTP: the same record serves any front end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from irc_proxy.handling.security.authn import ANONYMOUS, SYSTEM_NAME

if TYPE_CHECKING:
    from irc_proxy.handling.security.authz import Grants

SYSTEM_PRINCIPAL = SYSTEM_NAME
"""The proxy itself as a principal: who runs maintenance and trash expiry (a forwarded commit or load goes upstream
with the proxy's own credentials), and who requested a scheduled run."""


@dataclass
class AuditNote:
    """What the request's audit record says beyond status and timing (``irc_proxy.audit.AuditRecord``)."""

    operation: str | None = None
    """The spec's operationId (``loadTable``), ``getConfig``, ``oauth.token``, ``management.<op>``;
    None: the request reached no operation and leaves no record."""
    params: dict[str, str] = field(default_factory=dict)
    """The operation's path parameters (``prefix``, ``namespace``, ``table``/``view``), still encoded."""
    object: str | None = None
    """The object(s) acted on when the path alone does not name them (create, rename, transactions)."""
    decision: str = "allowed"
    reason: str | None = None
    refusal: str | None = None
    """Why a handler refused the request with 403 after authorization allowed it."""

    def name(self, operation: str, params: dict[str, str] | None = None) -> None:
        """The operation this request reached (and its path parameters)."""
        self.operation, self.params = operation, dict(params or {})

    def note(self, decision: str, reason: str) -> None:
        """Record an authorization decision; several checks of one request are joined, a denial sticks."""
        if self.decision != "denied":
            self.decision = decision
        self.reason = f"{self.reason}; {reason}" if self.reason else reason

    def refuse(self, message: str) -> None:
        self.refusal = message

    def outcome(self, status: int) -> tuple[str, str | None]:
        """Every 403 is ``denied`` with a reason: the authorization step's, a handler's refusal, or the status."""
        if status != 403 or (self.decision == "denied" and self.reason):
            return self.decision, self.reason
        refusal = self.refusal or "refused with 403 after authorization (e.g. by the upstream catalog)"
        return "denied", f"{self.reason}; {refusal}" if self.reason else refusal


@dataclass
class RequestContext:
    """One request as the handler layer sees it: the caller, its grants (loaded lazily), the audit note."""

    request_id: str
    principal: str = ANONYMOUS.name
    roles: tuple[str, ...] = ()
    authorization: str | None = None
    """The caller's ``Authorization`` header, for upstream catalogs that are sent the caller's token."""
    client_id: str | None = None
    """The OAuth2 client of a token request (for the access log)."""
    grants: Grants | None = None
    """The caller's grants, once the authorization step has looked them up."""
    list_filtered: bool = False
    """A listing shows only what the caller holds grants on (it may not list everything)."""
    status: int | None = None
    """The answer's status once it has begun (the front end notes it); None before, when an error can
    still be answered."""
    audit: AuditNote = field(default_factory=AuditNote)
