"""The two small types a request to a remote catalog is made of: ``Outgoing`` before it is sent, ``Answer`` after.

Why not ``httpx.Request``/``httpx.Response``: a pass-through only copies a few headers and the body bytes, and
building httpx's objects (URL and header normalisation, default-header merging, the byte streams) was about a
fifth of the CPU a forwarded request cost the front proxy. httpx's objects are still built where httpx sends
(an HTTP proxy from the environment, HTTP/2, a transport injected by tests): ``Answer.of`` takes their answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

_NOT_A_VALUE = re.compile("[\x00-\x08\x0a-\x1f\x7f]")
"""What a header value may not hold (RFC 9110 5.5: control characters but the tab)."""


def sendable(value: str) -> bool:
    """Whether ``value`` may be sent as a header value: no control character but the tab (HTTP/2 lets a client send
    a vertical tab or an escape, which h11 refuses to write or an upstream's parser should never see). Printable
    ASCII, every value a well-behaved client sends, is told without the regex."""
    return (value.isascii() and value.isprintable()) or not _NOT_A_VALUE.search(value)


class Outgoing:
    """A request about to be sent: what the auth strategies add credentials to (``auth.UpstreamAuth``).

    ``headers`` are keyed by lower-case name (one value each; repeated ones joined with ``", "``, as HTTP
    allows for list-valued headers); ``url`` is the full URL as text (SigV4 signs it).
    """

    __slots__ = ("content", "headers", "method", "url")

    def __init__(self, method: str, url: str, headers: dict[str, str], content: bytes) -> None:
        self.method, self.url, self.headers, self.content = method, url, headers, content


class Answer:
    """What the upstream answered: status, headers (lower-case names, values as sent read as latin-1, repeated
    ones joined with ``", "`` as ``httpx.Headers`` joins them) and the body with its ``Content-Encoding`` undone."""

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code, self.headers, self.content = status_code, headers, content

    @classmethod
    def of(cls, response: httpx.Response) -> Answer:
        """``response`` (read already) as an Answer, its headers from the bytes as sent (as the lean pool's).

        Not ``response.headers``' text: httpx decodes every value as UTF-8 when one is, and a character past
        latin-1 in a value passed on (``ETag``, say) could not be written to the caller again."""
        return cls(response.status_code, joined(response.headers.raw), response.content)

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON. Raises ValueError if it is not JSON."""
        return json.loads(self.content)


def joined(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Raw header pairs as ``Answer.headers`` holds them (latin-1, so any byte passes through unchanged)."""
    headers: dict[str, str] = {}
    for raw_name, raw_value in raw:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers
