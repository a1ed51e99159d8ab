"""Links to named objects: each name one path segment a browser keeps as it is, decoded back to the name."""

from __future__ import annotations

from urllib.parse import unquote_plus

import pytest

from irc_proxy.ui.links import ns_path, segment, unmarked

NAMES = ["..", ".", "/", "%", "?", "#", "a b", "ä/ö", "~..", "~", "a+b", "...", "%2E%2E", "x/../y"]


def decoded(raw: str) -> str:
    """What a console page decodes a raw path parameter to (``links.unmarked``, then the REST API's decoding)."""
    params = {"name": raw}
    unmarked(params)
    return unquote_plus(params["name"])


@pytest.mark.parametrize("name", NAMES)
def test_every_name_is_one_segment_that_decodes_back(name: str) -> None:
    raw = segment(name)
    assert "/" not in raw and "?" not in raw and "#" not in raw and " " not in raw
    assert raw not in (".", "..") and raw.lower() not in ("%2e", "%2e%2e", ".%2e", "%2e.")
    assert decoded(raw) == name


def test_dot_names_are_marked_and_a_real_tilde_is_escaped() -> None:
    assert segment("..") == "~.." and segment(".") == "~."
    assert segment("~..") == "%7E.." and ns_path(("..",)) == "~.." and ns_path(("..", "a")) == "..%1Fa"
