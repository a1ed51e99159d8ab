"""Entries per commit: ``server.max_commit_updates`` / ``max_commit_requirements`` / ``max_commit_metadata_adds``.

Counted on the raw JSON entries, before pyiceberg parses them (``commit_bodies``): parsing and applying
10,000 of them takes seconds of a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from irc_proxy.errors import PayloadTooLarge


class TooManyEntries(PayloadTooLarge):
    """A commit carries more updates or requirements than the server applies at once: answered like a
    body over ``server.max_body_bytes``."""

    def __init__(self, what: str, count: int, limit: int) -> None:
        super().__init__(f"Too many {what} in one commit: {count} (the limit is {limit})")


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

    def check(self, updates: Sequence[Any], requirements: int) -> None:
        """Raise TooManyEntries (413) when a commit carries more than the limits allow."""
        if len(updates) > self.updates:
            raise TooManyEntries("updates", len(updates), self.updates)
        keys = sum(_property_keys(update) for update in updates)
        if keys > self.updates:
            raise TooManyEntries("property keys set or removed", keys, self.updates)
        if requirements > self.requirements:
            raise TooManyEntries("requirements", requirements, self.requirements)
        adds = sum(1 for update in updates if isinstance(update, dict) and update.get("action") in GROWING_ACTIONS)
        if adds > self.metadata_adds:
            raise TooManyEntries(
                "schema, spec, sort order, snapshot, ref, statistics or encryption key updates",
                adds,
                self.metadata_adds,
            )


def _property_keys(update: Any) -> int:
    """How many properties a ``set-properties`` or ``remove-properties`` update names: each key is an update of
    its own (one ``set-properties`` of a million keys made a 14 MB metadata file that every load then parses)."""
    if not isinstance(update, dict):
        return 0
    action = update.get("action")
    named = update.get("updates") if action == "set-properties" else update.get("removals")
    return len(named) if action in _PROPERTY_ACTIONS and isinstance(named, dict | list) else 0


_PROPERTY_ACTIONS = frozenset({"set-properties", "remove-properties"})
