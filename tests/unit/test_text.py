"""``irc_proxy.text``: no unsafe character survives, and escaped JSON is still the same value."""

from __future__ import annotations

import json

import pytest

from irc_proxy.text import UNSAFE, field, json_safe, printable

HOSTILE = "x\n2026-01-01T00:00:00Z root dropTable\r\x1b[2J\x00\x7f\x85\x9b\u2028\u2029\u202e\u2066\ufeff"


def test_printable_escapes_every_unsafe_character_and_keeps_the_rest() -> None:
    shown = printable(HOSTILE + " é 日本")
    assert UNSAFE.search(shown) is None
    assert shown.startswith("x\\n2026-01-01T00:00:00Z root dropTable\\r\\x1b[2J\\x00\\x7f\\x85\\x9b\\u2028")
    assert shown.endswith(" é 日本")


@pytest.mark.parametrize("value", ["alice", "svc-etl@example.com", "日本"])
def test_a_plain_token_is_printed_as_it_is(value: str) -> None:
    assert field(value) == value


@pytest.mark.parametrize("value", ["", "a b", 'a"b', "a\\b", HOSTILE, "a\u00a0b"])
def test_anything_else_is_one_json_quoted_column(value: str) -> None:
    shown = field(value)
    assert shown.startswith('"') and json.loads(shown) == value
    assert UNSAFE.search(shown) is None and len(shown.splitlines()) == 1


def test_json_safe_keeps_the_value() -> None:
    encoded = json_safe(json.dumps({"message": HOSTILE}, ensure_ascii=False))
    assert UNSAFE.search(encoded) is None and len(encoded.splitlines()) == 1
    assert json.loads(encoded) == {"message": HOSTILE}
