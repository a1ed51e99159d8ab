"""JSON depth is measured on raw bytes, without recursion, ignoring brackets inside strings."""

from __future__ import annotations

import json

import pytest

from irc_proxy.errors import BadRequest
from irc_proxy.http.request_limits import check_depth, json_depth


@pytest.mark.parametrize(
    ("body", "depth"),
    [
        (b"1", 0),
        (b"[]", 1),
        (b'{"a": [1, {"b": []}]}', 4),
        (b'["[[[[", "\\"[[[", "\\\\", [[1]]]', 3),
        ('["café[[[", {}]'.encode("latin-1"), 2),
        (b"[" * 100_000, 100_000),
    ],
)
def test_json_depth_counts_nesting_outside_strings(body: bytes, depth: int) -> None:
    assert json_depth(body) == depth


def test_depth_matches_the_parsed_value_for_escaped_strings() -> None:
    value = {"a": ["\\", '"', '\\"[', {"b": [["]]"]]}]}
    assert json_depth(json.dumps(value).encode()) == 5


def test_nesting_over_the_limit_is_a_bad_request_and_within_it_is_not() -> None:
    check_depth(b"[" * 100 + b"]" * 100, 100)
    with pytest.raises(BadRequest, match="more than 100 levels"):
        check_depth(b"[" * 101 + b"]" * 101, 100)
