"""Client input errors told back briefly: long messages are clipped, a missing key is named."""

from __future__ import annotations

from irc_proxy.handling.input_errors import MAX_MESSAGE, clip, explain


def test_a_long_message_is_clipped_saying_how_much_was_left_out() -> None:
    assert clip("short") == "short"
    assert clip("x" * MAX_MESSAGE) == "x" * MAX_MESSAGE
    assert clip("x" * (MAX_MESSAGE + 5)) == "x" * MAX_MESSAGE + "... (5 more characters)"


def test_a_key_error_names_the_missing_field_and_an_empty_error_its_type() -> None:
    assert explain(KeyError("element")) == "missing field 'element'"
    assert explain(ZeroDivisionError()) == "ZeroDivisionError"
    assert explain(ValueError("bad " + "y" * 1000)).endswith("(704 more characters)")
