"""The nested-namespace mapping is reversible for any level, and rejects what cannot be mapped."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irc_proxy.errors import BadRequest
from irc_proxy.handling.naming import NamespaceCodec

levels = st.text(min_size=1, max_size=20).filter(lambda s: "\x1f" not in s and "\x00" not in s)


@given(st.lists(levels, min_size=1, max_size=5), st.sampled_from([":", "|", "~", "#"]))
def test_any_levels_round_trip(namespace: list[str], separator: str) -> None:
    codec = NamespaceCodec(separator)
    try:
        flat = codec.to_flat(namespace)
    except BadRequest:
        assert len(separator.join(namespace).encode()) > 60  # only over-long names are refused
        return
    assert codec.from_flat(flat) == tuple(namespace)
    assert flat.count(separator) == len(namespace) - 1
    assert "." not in flat and "/" not in flat


def test_levels_containing_the_separator_are_escaped() -> None:
    codec = NamespaceCodec(":")
    assert codec.to_flat(["team", "sales"]) == "team:sales"
    assert codec.to_flat(["a:b"]) == "a%3Ab"
    assert codec.to_flat(["new.db", "100%"]) == "new%2Edb:100%25"


def test_children_prefix_distinguishes_siblings() -> None:
    codec = NamespaceCodec(":")
    assert codec.children_prefix(["a"]) == "a:"
    assert codec.children_prefix([]) == ""


@pytest.mark.parametrize("namespace", [[], [""], ["ok", ""], ["a\x1fb"], ["x" * 300]])
def test_unmappable_namespaces_are_bad_requests(namespace: list[str]) -> None:
    with pytest.raises(BadRequest):
        NamespaceCodec(":").to_flat(namespace)
