"""Bounds on request bodies beyond their size (``BodyLimit``): JSON nesting depth and entries per commit.

``json.loads`` and pydantic recurse once per nesting level, so a body of ``[`` x 100000 is a
RecursionError (a 500) and deep nesting costs stack in a worker thread. The depth is therefore
measured on the raw bytes, without recursion and before anything is parsed: escapes and strings
are cut out, the brackets left are counted up and down. Quotes, backslashes and brackets are
ASCII, and neither UTF-8 nor ISO-8859-1 (what Java clients send, see ``parsing.json_body``) uses
those bytes for anything else, so one scan serves both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from starlette.requests import Request

from irc_proxy.errors import BadRequest, PayloadTooLarge

_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1
_CHUNK = 1 << 20  # brackets counted per step; between steps other threads (the event loop) get the GIL


class TooManyEntries(PayloadTooLarge):
    """A commit carries more updates or requirements than the server applies at once: answered like a
    body over ``server.max_body_bytes``."""

    def __init__(self, what: str, count: int, limit: int) -> None:
        super().__init__(f"Too many {what} in one commit: {count} (the limit is {limit})")


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


GROWING_ACTIONS = frozenset(
    {
        "add-schema",
        "add-spec",
        "add-sort-order",
        "add-snapshot",
        "set-snapshot-ref",
        "set-statistics",
        "set-partition-statistics",
        "add-view-version",
        "add-encryption-key",
    }
)
"""Updates that add an entry to a metadata list: pyiceberg scans the list per update, so their cost grows
with the square of their number (10,000 ``add-spec`` take ~12 s of a worker thread; 1,000 ~0.1 s)."""


@dataclass(frozen=True)
class CommitLimits:
    """``server.max_commit_updates`` / ``max_commit_requirements`` / ``max_commit_metadata_adds``: per
    request, all tables together."""

    updates: int
    requirements: int
    metadata_adds: int

    @classmethod
    def of(cls, request: Request) -> CommitLimits:
        server = request.state.settings.server
        return cls(server.max_commit_updates, server.max_commit_requirements, server.max_commit_metadata_adds)

    def check(self, updates: Sequence[Any], requirements: int) -> None:
        """Raise TooManyEntries (413) when a commit carries more than the limits allow."""
        if len(updates) > self.updates:
            raise TooManyEntries("updates", len(updates), self.updates)
        if requirements > self.requirements:
            raise TooManyEntries("requirements", requirements, self.requirements)
        adds = sum(1 for update in updates if isinstance(update, dict) and update.get("action") in GROWING_ACTIONS)
        if adds > self.metadata_adds:
            raise TooManyEntries(
                "schema, spec, sort order, snapshot, ref, statistics or encryption key updates",
                adds,
                self.metadata_adds,
            )
