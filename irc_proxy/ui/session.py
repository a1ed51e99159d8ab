"""The console's session and CSRF cookies.

The session cookie holds the bearer token the sign-in was issued (``oauth2``: the client-credentials
grant of ``/v1/oauth/tokens``; ``oidc``: the provider's access token), so every page is authenticated and
authorized exactly like the REST API (``http.auth.Authentication`` reads it for ``/ui`` paths only, by the
names in ``http.console_cookie``, so ``http`` never imports the console; the REST API never takes it). It
is HttpOnly, SameSite=Strict and lives no longer than the token; over
plain HTTP it is limited to ``/ui``; under TLS it is ``__Host-`` prefixed (Secure, ``Path=/``, no Domain),
so no other site, not even a sibling subdomain, can set or replace it. Signing out revokes the token in
the state database (``handling.security.sessions.Revocations``), so a copied token stops working too.

Forms that change anything carry a CSRF token: an HMAC, under a key every replica shares
(``stores.ui_keys``), of the session token. Another site may toss a CSRF cookie of its choice (the old
double-submit scheme fell to that) but cannot compute a token for the victim's session. Before signing
in there is no session: the sign-in form's token is an HMAC of a random pre-session cookie and the
browser's address, and ``http.cross_site`` refuses any console write whose ``Origin`` or
``Sec-Fetch-Site`` is not this console's own, which is the main guard there.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.errors import Forbidden, NotAuthenticated
from irc_proxy.http import console_cookie
from irc_proxy.http.app_state import app_state
from irc_proxy.http.console_cookie import SESSION_COOKIE, cookie_name, session_cookie

UI_PREFIX = console_cookie.UI_PREFIX
"""Where the console lives (its pages take it from here)."""

CSRF_COOKIE = "irc_ui_csrf"
_PRE_SESSION_LENGTH = 43  # secrets.token_urlsafe(32)


def set_console_cookie(
    response: Response, request: Request, name: str, value: str, max_age: int | None, path: str, samesite: str
) -> None:
    """Set one of the console's cookies: HttpOnly; under TLS ``__Host-`` prefixed, Secure, ``Path=/``."""
    secure = request.url.scheme == "https"
    response.set_cookie(
        cookie_name(request.url.scheme, name),
        value,
        max_age=max_age,
        path="/" if secure else path,
        secure=secure,
        httponly=True,
        samesite=samesite,  # type: ignore[arg-type]
    )


def set_session(response: Response, request: Request, token: str, lifetime_seconds: int) -> None:
    set_console_cookie(response, request, SESSION_COOKIE, token, lifetime_seconds, UI_PREFIX, "strict")


def clear_session(response: Response, request: Request) -> None:
    set_console_cookie(response, request, SESSION_COOKIE, "", 0, UI_PREFIX, "strict")


async def end_session(response: Response, request: Request) -> None:
    """Sign out: revoke the session's token in the state database (every replica), then clear the cookie.

    Only a cookie that is a valid token is revoked: a request authenticated by its Authorization header may
    carry any cookie (and learn its CSRF token from the open sign-in form), and a made-up string must not
    become a row every replica reads."""
    token = request.cookies.get(session_cookie(request.url.scheme))
    revocations = app_state(request).revocations
    if token and revocations is not None:
        authenticator = app_state(request).authenticator
        try:
            await authenticator.authenticate(token)
        except NotAuthenticated:
            token = None
        if token:
            await revocations.revoke(token)
    clear_session(response, request)


def _bound_to(request: Request) -> tuple[bytes, str] | None:
    """What this browser's CSRF tokens are bound to: its session token, or before signing in its
    pre-session cookie and address (None when it has neither yet)."""
    session = request.cookies.get(session_cookie(request.url.scheme))
    if session:
        return b"session", session
    pre = request.cookies.get(cookie_name(request.url.scheme, CSRF_COOKIE), "")
    if len(pre) != _PRE_SESSION_LENGTH:
        pre = request.scope.get("ui_csrf", "")
        if not pre:
            return None
    address = request.client.host if request.client else ""
    return b"pre-session", f"{pre}\x00{address}"


def _mac(key: bytes, purpose: bytes, value: str) -> str:
    digest = hmac.new(key, b"irc-proxy console csrf\x00" + purpose + b"\x00" + value.encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")


def csrf_token(request: Request) -> str:
    """The CSRF token of this browser's forms (a new pre-session cookie when it has neither a session nor
    one; ``remember_csrf`` sets it)."""
    bound = _bound_to(request)
    if bound is None:
        request.scope["ui_csrf"] = secrets.token_urlsafe(32)
        bound = _bound_to(request)
        assert bound is not None
    keys = app_state(request).csrf_keys
    return _mac(keys[0], *bound)


def remember_csrf(response: Response, request: Request) -> None:
    """Set the pre-session cookie when this response's forms are bound to a new one."""
    token = request.scope.get("ui_csrf")
    if token is not None:
        set_console_cookie(response, request, CSRF_COOKIE, token, None, UI_PREFIX, "strict")


def check_csrf(request: Request, submitted: str) -> None:
    """Raises Forbidden unless the form's token is this browser's (its session's, or before signing in its
    pre-session cookie's)."""
    bound = _bound_to(request) if "ui_csrf" not in request.scope else None
    keys = app_state(request).csrf_keys
    if bound is None or not any(hmac.compare_digest(_mac(key, *bound).encode(), submitted.encode()) for key in keys):
        raise Forbidden("The form is stale or was not sent from this console (CSRF check failed); reload the page")


def safe_next(target: str) -> str:
    """Where to go after signing in: a console path only (never another site)."""
    if target.startswith(f"{UI_PREFIX}/") and not target.startswith("//") and "\\" not in target:
        return target
    return f"{UI_PREFIX}/"
