"""Clients' text made safe to print: no control character reaches a terminal or a log line raw.

A client chooses names, client ids, properties and error texts; the proxy shows them in log lines, in
``irc-proxy audit query`` and in other command-line listings. Printed raw, a line break in such a text
forges a whole record (``client_id = "x\\n2026-01-01T00:00:00Z root dropTable …"``) and an escape
sequence drives the operator's terminal. Unsafe here: C0 and C1 control characters and DEL, Unicode
line and paragraph separators (``splitlines`` and some log viewers break lines there), and the bidi
controls that reorder what a reader sees (Trojan Source, CVE-2021-42574).

- :func:`printable` spells each unsafe character as a Python-style escape (``\\n``, ``\\x1b``,
  ``\\u202e``) — for free text such as a log message.
- :func:`field` is for one space-separated column: a plain token stays as it is; anything else (empty,
  white space, quotes, backslashes, unsafe characters) is printed JSON-quoted, so no value can pose as
  two columns or two lines, and the spelling is unambiguous.
- :func:`json_safe` escapes the unsafe characters ``json.dumps(..., ensure_ascii=False)`` leaves raw
  (C1, DEL, U+2028/U+2029, bidi) as ``\\uXXXX``: still the same JSON value, now one line on any viewer.
"""

from __future__ import annotations

import json
import re

_UNSAFE = "\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff"
UNSAFE = re.compile(f"[{_UNSAFE}]")
"""One character a printed client text must not carry raw."""
_NOT_PLAIN = re.compile(f"[\\s\"'\\\\{_UNSAFE}]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(found: re.Match[str]) -> str:
    ch = found.group(0)
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every unsafe character escaped (``\\n``, ``\\x9b``, ``\\u2028``); cheap when there is none.

    Printable ASCII (every log line a well-behaved client causes) has none: two C scans instead of a regex pass."""
    if text.isascii() and text.isprintable():
        return text
    return UNSAFE.sub(_escape, text)


def field(value: object) -> str:
    """One column of a space-separated line: ``value`` as is when it is a plain token, else JSON-quoted.

    A plain printable-ASCII token (every path, method and request id a well-behaved client sends) is told by C
    scans rather than the regex: the access log asks this three times per request."""
    text = str(value)
    if text.isascii() and text.isprintable():
        if text and " " not in text and '"' not in text and "'" not in text and "\\" not in text:
            return text
    elif text and not _NOT_PLAIN.search(text):
        return text
    return json_safe(json.dumps(text, ensure_ascii=False))


def _json_escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group(0)):04x}"


def json_safe(encoded: str) -> str:
    """JSON text with the unsafe characters that ``ensure_ascii=False`` keeps raw escaped as ``\\uXXXX``.

    Only strings can hold such characters (JSON's structure is ASCII), and there ``\\uXXXX`` is the same
    character: the value is unchanged. C0 controls are escaped by ``json.dumps`` already.
    """
    if encoded.isascii() and encoded.isprintable():  # as in ``printable``
        return encoded
    return UNSAFE.sub(_json_escape, encoded)
