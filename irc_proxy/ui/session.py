"""The console's session and CSRF cookies.

The session cookie holds the bearer token the sign-in was issued (``oauth2``: the client-credentials
grant of ``/v1/oauth/tokens``), so every page is authenticated and authorized exactly like the REST API
(``http.auth.Authentication`` reads it for ``/ui`` paths). It is HttpOnly, SameSite=Strict, limited to
``/ui``, Secure behind TLS, and lives no longer than the token. Forms that change anything carry a CSRF
token that must equal the CSRF cookie (double submit; the cookie is HttpOnly and SameSite=Strict, so
another site can neither read nor send it).
"""

from __future__ import annotations

import hmac
import secrets

from starlette.requests import Request, cookie_parser
from starlette.responses import Response

from irc_proxy.errors import Forbidden

UI_PREFIX = "/ui"
SESSION_COOKIE = "irc_ui_session"
CSRF_COOKIE = "irc_ui_csrf"
OPEN_UI_PATHS = frozenset(
    {f"{UI_PREFIX}/login", f"{UI_PREFIX}/static/console.css", f"{UI_PREFIX}/oidc/start", f"{UI_PREFIX}/oidc/callback"}
)
"""Pages anyone may fetch: the sign-in form, the OIDC sign-in's start and callback, and the stylesheet."""


def cookie_from_headers(headers: list[tuple[bytes, bytes]], name: str) -> str | None:
    """The value of cookie ``name`` in raw ASGI headers (the last ``Cookie`` header that has it)."""
    found = None
    for key, value in headers:
        if key == b"cookie":
            found = cookie_parser(value.decode("latin-1")).get(name, found)  # never raises on malformed input
    return found


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def set_session(response: Response, request: Request, token: str, lifetime_seconds: int) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=lifetime_seconds,
        path=UI_PREFIX,
        secure=_secure(request),
        httponly=True,
        samesite="strict",
    )


def clear_session(response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path=UI_PREFIX, httponly=True, samesite="strict")


def csrf_token(request: Request) -> str:
    """This browser's CSRF token (a new one when it has none; ``remember_csrf`` sets the cookie)."""
    current = request.cookies.get(CSRF_COOKIE, "")
    if len(current) == 43:
        return current
    token: str | None = request.scope.get("ui_csrf")
    if token is None:
        token = request.scope["ui_csrf"] = secrets.token_urlsafe(32)
    return token


def remember_csrf(response: Response, request: Request) -> None:
    """Set the CSRF cookie when this response's forms carry a new token."""
    token = request.scope.get("ui_csrf")
    if token is not None:
        response.set_cookie(
            CSRF_COOKIE, token, path=UI_PREFIX, secure=_secure(request), httponly=True, samesite="strict"
        )


def check_csrf(request: Request, submitted: str) -> None:
    """Raises Forbidden unless the form's token equals the CSRF cookie."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not cookie or not hmac.compare_digest(cookie.encode(), submitted.encode()):
        raise Forbidden("The form is stale or was not sent from this console (CSRF check failed); reload the page")


def safe_next(target: str) -> str:
    """Where to go after signing in: a console path only (never another site)."""
    if target.startswith(f"{UI_PREFIX}/") and not target.startswith("//") and "\\" not in target:
        return target
    return f"{UI_PREFIX}/"
