"""Pure ASGI guard against other web sites: DNS rebinding, cross-site writes and forged console forms.

A web page in a browser can make the browser send requests here (the proxy may listen on localhost, or on
an internal network the browser reaches). What it can send without a CORS preflight, which this server
never answers positively, is a "simple" request: GET, HEAD or POST with a form or ``text/plain`` body, and
the browser's own cookies. So, before authentication and before any work:

- **Host** must be one of ``server.allowed_hosts`` (any port): a page that rebinds its own DNS name to this
  address sends its own name as ``Host`` and is refused, so it can read nothing. ``/healthz``, ``/readyz``
  and ``/metrics`` are exempt: kubelet probes and Prometheus scrapes name the pod's IP, and these answer
  only up/down and counters, unauthenticated anyway, and change nothing.
- The REST and management APIs: a present ``Origin`` must be in ``server.allowed_origins`` (default none),
  a write whose fetch metadata says ``cross-site``/``same-site`` is refused, and a POST (or any write with
  a body) must be ``application/json``, which a page can only send after a preflight. The token endpoint
  takes the form its spec defines; the Origin rule still keeps pages from posting guesses to it.
- The console (``/ui``): a write must come from the console's own origin (``Sec-Fetch-Site`` ``same-origin``
  or ``none``; from a browser that sends no fetch metadata, ``Origin`` equal to the request's host); its
  forms also carry a session-bound CSRF token (``irc_proxy.ui.session``).

Refusals are the spec's error model: 403 ForbiddenException (host, origin), 400 BadRequestException (type).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from irc_proxy.errors import BadRequest, CatalogError, Forbidden
from irc_proxy.http import parsing
from irc_proxy.http.console_cookie import is_console_path
from irc_proxy.http.errors import response_for
from irc_proxy.http.headers import RequestHeaders, headers_of

EXEMPT_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
FORM_PATHS = frozenset({"/v1/oauth/tokens"})
"""Writes whose body the spec defines as a form (``application/x-www-form-urlencoded``)."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_FOREIGN_SITES = frozenset({b"cross-site", b"same-site"})
_OWN_SITE = frozenset({b"same-origin", b"none"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}
_HOSTS_KEPT = 64


def host_name(host: str) -> str:
    """``Host``'s name without its port, lower case, IPv6 brackets and a trailing dot removed."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    name = host.rpartition(":")[0] if host.count(":") == 1 else host
    return name.rstrip(".")


class HostRule:
    """Whether a ``Host`` is allowed: exact names, ``*.suffix`` for subdomains, ``*`` for any."""

    def __init__(self, allowed: Iterable[str]) -> None:
        names = [host_name(entry) if not entry.startswith("*") else entry.lower() for entry in allowed]
        self.any = "*" in names
        self.exact = frozenset(name for name in names if not name.startswith("*"))
        self.suffixes = tuple(name[1:] for name in names if name.startswith("*."))
        self._seen: dict[str, bool] = {}
        """Answers by the ``Host`` as sent: clients send the same one on every request (parsing it is ~1 µs)."""

    def allows(self, host: str) -> bool:
        if self.any:
            return True
        known = self._seen.get(host)
        if known is None:
            if len(self._seen) >= _HOSTS_KEPT:  # Host is the caller's text: remember a few answers, not every one
                self._seen.clear()
            name = host_name(host)
            known = self._seen[host] = name in self.exact or (bool(self.suffixes) and name.endswith(self.suffixes))
        return known


def _origin(value: str) -> tuple[str, str] | None:
    """``(scheme, host:port)`` of an ``Origin`` (default ports made explicit), or None for ``null``/garbage."""
    try:
        parts = urlsplit(value.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path or parts.query:
        return None
    return parts.scheme, f"{parts.hostname.rstrip('.')}:{port or _DEFAULT_PORTS[parts.scheme]}"


def _same_origin(origin: str, host: str, scheme: str) -> bool:
    """Whether ``Origin`` is this server as the browser sees it (``Host``; behind a TLS-terminating load
    balancer the proxy sees ``http`` while the browser says ``https``, so only ``https`` requests also
    compare the scheme)."""
    parsed = _origin(origin)
    if parsed is None or not host:
        return False
    port = host.rpartition(":")[2] if ":" in host.rpartition("]")[2] else None
    here = f"{host_name(host)}:{port or _DEFAULT_PORTS.get(parsed[0], '')}"
    return parsed[1] == here and (scheme != "https" or parsed[0] == "https")


class CrossSiteGuard:
    """Which requests another web site could have made a browser send (see the module docstring): plain checks
    the ``Gate`` runs on every request before authentication."""

    def __init__(self, allowed_hosts: Iterable[str], allowed_origins: Iterable[str]) -> None:
        self.hosts = HostRule(allowed_hosts)
        self.origins = frozenset(origin.lower() for origin in allowed_origins)

    async def refuse(self, scope: Scope, receive: Receive, send: Send, refusal: CatalogError) -> None:
        """Answer a request ``refusal`` says is refused (noted as denied in its audit note)."""
        request = Request(scope)
        parsing.context(request).audit.note("denied", refusal.message)
        await response_for(request, refusal)(scope, receive, send)

    def refusal(self, scope: Scope) -> CatalogError | None:
        """What is wrong with this request's headers, if anything (nothing on the exempt paths)."""
        path, method = scope["path"], scope["method"]
        if path in EXEMPT_PATHS:
            return None
        sent = headers_of(scope)
        host = sent.host.decode("latin-1")
        if host and not self.hosts.allows(host):
            return Forbidden("This server does not answer to that Host name (server.allowed_hosts)")
        origin = sent.origin.decode("latin-1")
        if is_console_path(path):
            # Fetch metadata first: with the console's ``Referrer-Policy: no-referrer`` Chromium sends
            # ``Origin: null`` on its own forms. Browsers without it are judged by Origin (null refused).
            if sent.site:
                foreign = sent.site not in _OWN_SITE
            else:
                foreign = bool(origin) and not _same_origin(origin, host, scope["scheme"])
            if method not in SAFE_METHODS and foreign:
                return Forbidden("The console takes forms only from its own pages (cross-site request refused)")
            return None
        return self._api_refusal(path, method, origin, sent)

    def _api_refusal(self, path: str, method: str, origin: str, sent: RequestHeaders) -> CatalogError | None:
        if origin and origin.strip().lower() not in self.origins:
            return Forbidden("Requests from web pages of other origins are refused (server.allowed_origins)")
        if method in SAFE_METHODS:
            return None
        if not origin and sent.site in _FOREIGN_SITES:
            return Forbidden("Cross-site requests are refused")
        content_type = sent.content_type.decode("latin-1")
        json_body = content_type.partition(";")[0].strip().lower() == "application/json"
        if path not in FORM_PATHS and (method == "POST" or sent.body_declared) and not json_body:
            return BadRequest(f"A {method} request must send its body as Content-Type: application/json")
        return None
