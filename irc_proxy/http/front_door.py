"""A browser that opens the server's root (``GET /``) is sent to the console (a check the ``Gate`` runs).

A person who starts the proxy and opens ``http://127.0.0.1:8181/`` would otherwise read a JSON 404. Only a
request that asks for HTML (``Accept`` names ``text/html``, as every browser's navigation does) is redirected;
API clients (``application/json``, ``*/*``, no ``Accept``) and every other path and method are passed on
untouched, so they keep the spec-shaped 404 (or the 401 of a server that requires a token).

The target is the constant relative path ``/ui``: nothing of the request (``Host``, path, query) goes into
``Location``, so the redirect cannot be pointed elsewhere (no open redirect). It runs after the cross-site
guard (a rebinding page's ``Host`` is refused first) and before authentication (the console's own pages send
a signed-out person to its sign-in form).
"""

from __future__ import annotations

from starlette.types import Scope, Send

from irc_proxy.http.console_cookie import UI_PREFIX

_REDIRECT_HEADERS = [
    (b"location", UI_PREFIX.encode()),
    (b"vary", b"Accept"),  # the same URL answers API clients with a 404: caches must keep them apart
    (b"content-length", b"0"),
    (b"cache-control", b"no-store"),
]


def wants_html(scope: Scope) -> bool:
    """Whether the request's ``Accept`` header names ``text/html`` (a browser navigating here)."""
    return any(name == b"accept" and b"text/html" in value.lower() for name, value in scope["headers"])


def to_console(scope: Scope) -> bool:
    """Whether the request is ``GET /`` or ``HEAD /`` asking for HTML (only asked when the console is on)."""
    return scope["path"] == "/" and scope["method"] in ("GET", "HEAD") and wants_html(scope)


async def redirect_to_console(send: Send) -> None:
    """The 302 to the console."""
    await send({"type": "http.response.start", "status": 302, "headers": _REDIRECT_HEADERS})
    await send({"type": "http.response.body", "body": b""})
