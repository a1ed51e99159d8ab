"""The common HTTP/1.1 exchange with an upstream in bytes, without ``h11``; anything else is left to ``h11``.

Why: building a request through ``h11`` (its event objects, header normalisation and state machine) and reading
the answer through it was about a fifth of a forwarded request's CPU, and nearly every exchange with a remote
catalog is the same plain shape: a request framed by ``Content-Length`` (or without a body), answered by one
``HTTP/1.1`` head framed by ``Content-Length``. This module writes and reads only that shape, with ``h11``'s own
grammar (its regexes, copied; ``tests/unit/backends/rest/test_wire.py`` checks they still match h11's and fuzzes
both against h11), and answers None for everything else, which ``connection.Connection`` then hands to ``h11``
from the first byte: a request h11 would refuse or frame otherwise (a header value it does not allow, a
``Transfer-Encoding``, ``Expect`` or ``Upgrade`` header, ``Connection: close``, a ``Content-Length`` other than the
body's, no or two ``Host``), and an answer that is not ``HTTP/1.1``, is informational (1xx), is chunked or
close-delimited, repeats ``Content-Length``, folds a line, is not strictly ``CRLF``-delimited, has a head
larger than h11's bound or a body larger than the answer's bound. So what is read here is what h11 would
have read, and every refusal, error message and limit is h11's own.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
"""A method or header name (h11 ``_abnf.token``)."""
_FIELD_VALUE = re.compile(rb"([^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?")
"""A header value as h11 writes it (``_abnf.field_value``): no NUL, no leading or trailing blank, no line break."""
_IN_VALUE = bytes(set(range(256)) - set(b"\x00\n\r\x0b\x0c"))
"""The bytes a header value may hold (``_FIELD_VALUE``: all but NUL and the blanks other than space and tab)."""
_BLANKS = (b" ", b"\t")
_TARGET = re.compile(rb"[\x21-\x7e]+")
"""A request target (``_abnf.request_target``)."""
_STATUS_LINE = re.compile(
    rb"HTTP/(?P<http_version>[0-9]\.[0-9]) (?P<status_code>[0-9]{3})(?: (?P<reason>([ \t]|[^\x00\s])*))?"
)
"""h11's ``_abnf.status_line``."""
_HEADER_FIELD = re.compile(
    rb"(?P<field_name>[-!#$%&'*+.^_`|~0-9a-zA-Z]+):[ \t]*+(?P<field_value>([^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?)[ \t]*"
)
"""h11's ``_abnf.header_field``: the value without the blanks around it; the blanks after the colon possessive
(``irc_proxy.h11_linear``: h11's own is quadratic on blanks then a NUL, seconds of CPU for one hostile line)."""
_LENGTH = re.compile(rb"[0-9]{1,18}")
"""A ``Content-Length`` read here (h11 takes up to 20 digits; longer ones are past any answer bound anyway)."""
_H11_FRAMES = frozenset({b"transfer-encoding", b"expect", b"upgrade"})
"""Request headers that change how h11 frames the exchange: such a request is h11's (as one that says
``Connection: close``; httpx's default ``Connection: keep-alive`` is written here)."""
MAX_HEAD = 100 << 10
"""Largest status line plus headers (h11's ``max_incomplete_event_size`` as the pool sets it)."""


def request_bytes(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes | None:
    """The request as h11 would write it (``Host`` first, then the others in order, then the body), or None when
    it is not the plain shape (see the module docstring) or h11 would refuse it.

    The body must be framed by exactly one ``Content-Length`` equal to its length, or be empty without one.
    """
    if _TOKEN.fullmatch(method) is None or _TARGET.fullmatch(target) is None or method == b"CONNECT":
        return None
    lines = _header_lines(headers, len(body))
    return None if lines is None else b"".join((method, b" ", target, b" HTTP/1.1\r\n", *lines, b"\r\n", body))


def _header_lines(headers: list[tuple[bytes, bytes]], size: int) -> list[bytes] | None:
    """``headers`` as h11 writes them (``Host`` first), or None: see ``request_bytes``."""
    out = [b""]  # [0]: the Host line
    length = None
    for name, value in headers:
        lower = name.lower()
        if (
            _TOKEN.fullmatch(name) is None
            or not _is_field_value(value)
            or lower in _H11_FRAMES
            or (lower == b"connection" and _closes(value))
            or (lower == b"host" and out[0])
            or (lower == b"content-length" and length is not None)
        ):
            return None
        if lower == b"host":
            out[0] = name + b": " + value + b"\r\n"
            continue
        if lower == b"content-length":
            length = value
        out += (name, b": ", value, b"\r\n")
    framed = size == 0 if length is None else length == b"%d" % size
    return out if out[0] and framed else None


class Head(NamedTuple):
    """A final answer's head read here: where its body starts and how long it is, whether the connection stays."""

    status: int
    headers: list[tuple[bytes, bytes]]
    """As h11 gives them (``raw_items``): names as sent, values without the blanks around them."""
    reason: bytes
    start: int
    """Offset of the body in the bytes read."""
    length: int
    keep_alive: bool
    """False when the upstream said ``Connection: close``."""


def read_head(data: bytes, method: bytes, limit: int) -> Head | None:
    """The head at the start of ``data`` (an answer to a ``method`` request), or None when it is not complete in
    ``data`` or not the plain shape (see the module docstring): h11 reads those. ``limit``: the largest body
    read here (a larger one is h11's, which raises ``ResponseTooLarge`` as it arrives, as before).

    ``method`` is one written by ``request_bytes`` (never ``CONNECT``).
    """
    end = data.find(b"\r\n\r\n", 0, MAX_HEAD + 4)
    if end < 0:
        return None
    lines = data[:end].split(b"\r\n")
    status_line = _STATUS_LINE.fullmatch(lines[0])
    if status_line is None or status_line["http_version"] != b"1.1" or status_line["status_code"] < b"200":
        return None
    status = int(status_line["status_code"])
    fields = _fields(lines)
    if fields is None:
        return None
    headers, length, keep_alive = fields
    if method == b"HEAD" or status in (204, 304):  # no body, whatever Content-Length says (RFC 9110 6.4.1)
        length = 0
    elif length is None or length > limit:  # read until the connection closes, or too large: h11's
        return None
    return Head(status, headers, status_line["reason"] or b"", end + 4, length, keep_alive)


def _fields(lines: list[bytes]) -> tuple[list[tuple[bytes, bytes]], int | None, bool] | None:
    """The header lines of a head (after its status line): the headers, the ``Content-Length``, whether the
    connection is kept; None when one is not the plain shape."""
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    keep_alive = True
    for line in lines[1:]:
        field = _HEADER_FIELD.fullmatch(line)  # a folded line (leading blank), a bare CR or LF: no match
        if field is None:
            return None
        name, value = field["field_name"], field["field_value"]
        lower = name.lower()
        if lower == b"content-length":
            if length is not None or _LENGTH.fullmatch(value) is None:
                return None
            length = int(value)
        elif lower == b"transfer-encoding":
            return None
        elif lower == b"connection" and _closes(value):
            keep_alive = False
        headers.append((name, value))
    return headers, length, keep_alive


def _is_field_value(value: bytes) -> bool:
    """``_FIELD_VALUE.fullmatch(value)``, in a few C passes: the regex took ~6 us for a 1 KB bearer token."""
    return not value.translate(None, _IN_VALUE) and value[:1] not in _BLANKS and value[-1:] not in _BLANKS


def _closes(connection: bytes) -> bool:
    """Whether a ``Connection`` header's value holds the ``close`` option (as h11 reads it)."""
    return b"close" in [option.strip() for option in connection.lower().split(b",")]
