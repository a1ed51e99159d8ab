"""The console's line diff: any two texts give a diff that rebuilds both, in order, whichever path it takes
(prefix and suffix, unique-line anchors, difflib for small gaps, aligned slices for large ones)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irc_proxy.ui.diffing import CHUNK, SMALL_GAP, diff_lines


def rebuilt(diff: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The old and new texts a diff stands for."""
    kinds = {kind for kind, _ in diff}
    assert kinds <= {"same", "added", "removed"}
    return [t for k, t in diff if k != "added"], [t for k, t in diff if k != "removed"]


@settings(max_examples=200, deadline=None)
@given(
    a=st.lists(st.sampled_from(["select", "from t", "where x", "1", "2", "", "a", "b"]), max_size=40),
    b=st.lists(st.sampled_from(["select", "from t", "where x", "1", "2", "", "a", "c"]), max_size=40),
)
def test_any_diff_rebuilds_both_texts(a: list[str], b: list[str]) -> None:
    assert rebuilt(diff_lines(a, b)) == (a, b)


def test_identical_texts_are_all_same_and_a_changed_line_is_removed_then_added() -> None:
    assert diff_lines(["a", "b"], ["a", "b"]) == [("same", "a"), ("same", "b")]
    assert diff_lines(["a", "b", "c"], ["a", "x", "c"]) == [
        ("same", "a"),
        ("removed", "b"),
        ("added", "x"),
        ("same", "c"),
    ]
    assert diff_lines([], ["a"]) == [("added", "a")]


def test_unique_lines_anchor_the_diff_around_a_moved_block() -> None:
    a = ["header", "x", "x", "unique-1", "y", "unique-2", "footer"]
    b = ["header", "unique-1", "z", "unique-2", "x", "x", "footer"]
    diff = diff_lines(a, b)
    assert rebuilt(diff) == (a, b)
    assert ("same", "unique-1") in diff and ("same", "unique-2") in diff


def test_a_large_gap_without_anchors_is_diffed_in_slices_that_still_rebuild_both() -> None:
    side = int(SMALL_GAP**0.5) + CHUNK  # past the small-gap bound, with no line unique on either side
    a = ["p", "q"] * side
    b = ["q", "r", "q"] * side
    assert rebuilt(diff_lines(a, b)) == (a, b)


def test_the_callers_check_runs_and_may_stop_the_diff() -> None:
    calls: list[int] = []
    diff_lines(["a", "b", "c"], ["c", "b", "a"], lambda: calls.append(1))
    assert calls

    def deadline() -> None:
        raise TimeoutError("diff took too long")

    with pytest.raises(TimeoutError):
        diff_lines(["a"] * 10, ["b"] * 10, deadline)
