"""What the HTTP layer knows of the console (``irc_proxy.ui``): where it lives, its session cookie's name and
which of its pages are open. ``http.auth`` reads the session cookie on ``/ui`` paths with these; the console
itself (``ui.session``) sets and checks its cookies with the same names, so ``http`` never imports ``ui``."""

from __future__ import annotations

from starlette.requests import cookie_parser

UI_PREFIX = "/ui"
SESSION_COOKIE = "irc_ui_session"
SECURE_PREFIX = "__Host-"
OPEN_UI_PATHS = frozenset(
    {f"{UI_PREFIX}/login", f"{UI_PREFIX}/static/console.css", f"{UI_PREFIX}/oidc/start", f"{UI_PREFIX}/oidc/callback"}
)
"""Pages anyone may fetch: the sign-in form, the OIDC sign-in's start and callback, and the stylesheet."""
_UI_PAGES = UI_PREFIX + "/"


def is_console_path(path: str) -> bool:
    """Whether ``path`` is the console's (``/ui`` or under it; ``/uix`` is not)."""
    return path == UI_PREFIX or path.startswith(_UI_PAGES)


def cookie_from_headers(headers: list[tuple[bytes, bytes]], name: str) -> str | None:
    """The value of cookie ``name`` in raw ASGI headers (the last ``Cookie`` header that has it)."""
    found = None
    for key, value in headers:
        if key == b"cookie":
            found = cookie_parser(value.decode("latin-1")).get(name, found)  # never raises on malformed input
    return found


def cookie_name(scheme: str, name: str) -> str:
    """A console cookie's name: ``__Host-`` prefixed under TLS."""
    return SECURE_PREFIX + name if scheme == "https" else name


def session_cookie(scheme: str) -> str:
    return cookie_name(scheme, SESSION_COOKIE)
