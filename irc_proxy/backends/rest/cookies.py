"""The cookie jar of one remote catalog's client: what the upstream sets is sent back only when it is safe to.

Why a jar at all: a sticky load balancer in front of a remote catalog pins a client with a cookie, and httpx's
client keeps them. Why not httpx's as it is: every request to the catalog shares it, so one ``Set-Cookie`` that
cannot be sent back (a non-ASCII value: httpx decodes it as UTF-8, and the ``Cookie`` header built from it is no
longer latin-1) made every later request to that catalog fail until a restart; and a hostile upstream could
set cookies without end, each one sent with every request after.

So a cookie is kept only when its name, value, path, domain and port are printable ASCII, and at most
``MAX_COOKIES`` of them: past that the jar is emptied (a load balancer sets one or two). With the caller's own
token forwarded (``forward_caller_token``) the jar keeps nothing: the upstream may set a session cookie for one
caller, which every other caller would then send.
"""

from __future__ import annotations

from http.cookiejar import Cookie, CookieJar

MAX_COOKIES = 32
"""Cookies kept for one remote catalog at most."""


def _sendable(text: str | None) -> bool:
    """Printable ASCII, no ``;`` (the ``Cookie`` header's separator): what a ``Cookie`` header can carry as is."""
    return text is None or (text.isascii() and text.isprintable() and ";" not in text)


class UpstreamCookies(CookieJar):
    """``http.cookiejar.CookieJar`` that keeps only sendable cookies, a bounded number of them (or none)."""

    def __init__(self, keep: bool = True) -> None:
        super().__init__()
        self.keep = keep

    def set_cookie(self, cookie: Cookie) -> None:
        fields = (cookie.name, cookie.value, cookie.path, cookie.domain, cookie.port)  # a Cookie header may carry each
        if not self.keep or not all(_sendable(text) for text in fields):
            return  # dropped as it arrives: the jar never holds what cannot be sent back
        with self._cookies_lock:  # type: ignore[attr-defined]
            if len(self) >= MAX_COOKIES:
                self.clear()  # a hostile upstream loses its cookies; a load balancer sets its own again
            super().set_cookie(cookie)
