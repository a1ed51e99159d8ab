"""Bounds on request bodies beyond their size (``BodyLimit``): JSON nesting depth (entries per commit are
counted in ``handling.tables.commit_limits``).

``json.loads`` and pydantic recurse once per nesting level, so a body of ``[`` x 100000 is a
RecursionError (a 500) and deep nesting costs stack in a worker thread. The depth is therefore
measured on the raw bytes, without recursion and before anything is parsed: escapes and strings
are cut out, the brackets left are counted up and down. Quotes, backslashes and brackets are
ASCII, and neither UTF-8 nor ISO-8859-1 (what Java clients send, see ``parsing.json_body``) uses
those bytes for anything else, so one scan serves both.
"""

from __future__ import annotations

from itertools import accumulate

from irc_proxy.errors import BadRequest

_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1
_CHUNK = 1 << 20  # brackets counted per step; between steps other threads (the event loop) get the GIL


def _brackets(raw: bytes) -> bytes:
    """The brackets of ``raw`` outside JSON strings, in order."""
    # An escaped backslash cannot escape anything, an escaped quote ends no string; other escapes are harmless.
    structure = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    return b"".join(structure.split(b'"')[::2])  # every other run between quotes is inside a string


def json_depth(raw: bytes, stop_above: int | None = None) -> int:
    """The deepest nesting of arrays and objects in ``raw`` (0 for a scalar), in linear time.

    Counting stops early once it passes ``stop_above``. Malformed input (unbalanced brackets, an
    unterminated string) still gets a number; the parser rejects it afterwards.
    """
    brackets = _brackets(raw)
    level = deepest = 0
    for start in range(0, len(brackets), _CHUNK):
        levels = list(accumulate(map(_STEP.__getitem__, brackets[start : start + _CHUNK]), initial=level))
        level, deepest = levels[-1], max(deepest, *levels)
        if stop_above is not None and deepest > stop_above:
            break
    return deepest


def check_depth(raw: bytes, limit: int) -> None:
    """Raise BadRequest when ``raw`` nests arrays and objects deeper than ``limit``."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return  # it cannot nest deeper than it has openers: most small bodies stop here
    depth = json_depth(raw, stop_above=limit)
    if depth > limit:
        raise BadRequest(f"Malformed request body: JSON nested more than {limit} levels deep")
