"""Commit bodies as changes: the path's identifier wins, entries are counted before they are parsed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from irc_proxy.errors import BadRequest, PayloadTooLarge
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.operations.commit_bodies import body_ident, table_change, table_changes, view_change
from tests.support.change_bodies import Change, Ident, Transaction

SET = {"action": "set-properties", "updates": {"k": "v"}}


@dataclass
class Counting:
    """Limits that record what they were asked and refuse more than ``updates`` updates."""

    updates: int = 10
    seen: list[tuple[int, int]] = field(default_factory=list)

    def check(self, updates: Sequence[Any], requirements: int) -> None:
        self.seen.append((len(updates), requirements))
        if len(updates) > self.updates:
            raise PayloadTooLarge("too many")


def test_a_commit_becomes_one_change_of_the_paths_table() -> None:
    change = table_change(TableIdent(("a",), "t"), Change(Ident(["a"], "t"), [], [SET]), Counting())
    assert change.ident == TableIdent(("a",), "t") and len(change.updates) == 1


def test_a_commit_naming_another_table_than_its_path_is_a_bad_request() -> None:
    with pytest.raises(BadRequest, match="does not match the path"):
        table_change(TableIdent(("a",), "t"), Change(Ident(["a"], "u")), Counting())


def test_entries_are_counted_before_they_are_parsed() -> None:
    not_an_update = {"action": "no-such-action"}
    with pytest.raises(PayloadTooLarge):
        table_change(TableIdent(("a",), "t"), Change(updates=[not_an_update] * 3), Counting(updates=2))


def test_a_transaction_is_counted_as_a_whole_and_needs_identifiers() -> None:
    limits = Counting()
    body = Transaction([Change(Ident(["a"], "t"), [{"type": "assert-create"}], [SET]), Change(Ident(["b"], "u"))])
    changes = table_changes(body, limits)
    assert [c.ident for c in changes] == [TableIdent(("a",), "t"), TableIdent(("b",), "u")]
    assert limits.seen == [(1, 1)]
    with pytest.raises(BadRequest, match="identifier is required"):
        table_changes(Transaction([Change()]), Counting())


def test_a_view_commit_is_its_requirements_and_updates() -> None:
    requirements, updates = view_change(TableIdent(("a",), "v"), Change(None, [], [SET]), Counting())
    assert requirements == [] and len(updates) == 1


def test_a_body_identifier_with_an_invalid_namespace_is_a_bad_request() -> None:
    assert body_ident(Ident(["a", "b"], "t")) == TableIdent(("a", "b"), "t")
    with pytest.raises(BadRequest):
        body_ident(Ident([], "t"))
