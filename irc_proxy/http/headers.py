"""The request headers the edge of the server reads, found in one pass over the raw ASGI list.

The request id, the cross-site guard, authentication and the body checks each read a few headers; scanning
the list once per request and sharing the result (kept in the scope: every copy routing makes carries it)
costs one loop instead of four. Each field is the last value sent, as a dict of the headers would keep it (but
``If-None-Match``, the first, as the handler read it before).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

_KEY = "irc_proxy.headers"
_HTTP1 = frozenset({"1.0", "1.1"})
_READ = {
    name: name
    for name in (
        b"authorization",
        b"host",
        b"content-type",
        b"content-length",
        b"transfer-encoding",
        b"x-request-id",
        b"origin",
        b"sec-fetch-site",
        b"if-none-match",
        b"x-iceberg-access-delegation",
    )
}
"""The header names read here (ASGI servers hand them over in lower case)."""


class RequestHeaders:
    """What ``Edge`` and ``Gate`` read of a request's headers (raw bytes; decoded where they use them)."""

    __slots__ = (
        "authorization",
        "authorizations",
        "body_declared",
        "content_type",
        "delegation",
        "has_body",
        "host",
        "if_none_match",
        "origin",
        "request_id",
        "site",
    )

    def __init__(self) -> None:
        self.request_id = b""
        self.host = b""
        self.origin = b""
        self.site = b""
        """``Sec-Fetch-Site``, lower case."""
        self.content_type = b""
        self.authorization = b""
        self.authorizations = 0
        """How many ``Authorization`` headers were sent: more than one is refused (``http.auth``), as Starlette's
        ``Headers.get`` reads the first and this scan keeps the last, so two would name two callers."""
        self.delegation: bytes | None = None
        """The first ``X-Iceberg-Access-Delegation`` (``http.credentials``), None when none was sent."""
        self.if_none_match: bytes | None = None
        """The first ``If-None-Match`` (as Starlette's ``Headers.get`` reads it), None when none was sent."""
        self.body_declared = False
        """A non-zero ``Content-Length`` or any ``Transfer-Encoding`` was sent."""
        self.has_body = False
        """Whether a body may follow: one was declared, or the protocol is not HTTP/1.x (HTTP/2 may send a body
        without either header)."""


def headers_of(scope: MutableMapping[str, Any]) -> RequestHeaders:
    """The request's headers of interest (scanned on first use, then kept in the scope)."""
    found: RequestHeaders | None = scope.get(_KEY)
    if found is not None:
        return found
    sent = RequestHeaders()
    for name, value in scope["headers"]:
        read = _READ.get(name)  # most headers (user agents, accept, …) are none of these: one lookup each
        if read is None:
            continue
        if read == b"authorization":
            sent.authorization = value
            sent.authorizations += 1
        elif read == b"host":
            sent.host = value
        elif read == b"content-type":
            sent.content_type = value
        elif read == b"content-length":
            sent.body_declared = sent.body_declared or value.strip() != b"0"
        elif read == b"transfer-encoding":
            sent.body_declared = True
        elif read == b"x-request-id":
            sent.request_id = value
        elif read == b"origin":
            sent.origin = value
        elif read == b"sec-fetch-site":
            sent.site = value.lower()
        elif read == b"if-none-match":
            if sent.if_none_match is None:
                sent.if_none_match = value
        elif sent.delegation is None:  # x-iceberg-access-delegation
            sent.delegation = value
    sent.has_body = sent.body_declared or scope.get("http_version") not in _HTTP1
    scope[_KEY] = sent
    return sent
