"""Numbers in a client's text: only what ``int()`` can read, and not too long."""

from __future__ import annotations

import pytest

from irc_proxy.numbers import is_number


@pytest.mark.parametrize("text", ["0", "7", "123456789012345678"])
def test_short_ascii_digit_strings_are_numbers(text: str) -> None:
    assert is_number(text)
    int(text)


@pytest.mark.parametrize("text", ["", "-1", "+1", " 1", "1.0", "1_000", "²", "١٢", "1234567890123456789", "0x1"])
def test_anything_else_is_not_a_number(text: str) -> None:
    assert not is_number(text)


def test_the_digit_bound_is_the_callers() -> None:
    assert is_number("9" * 40, most_digits=40)
    assert not is_number("9" * 41, most_digits=40)
