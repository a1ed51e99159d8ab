"""Windows on a page's long lists: the part asked for, links onward and back, offsets checked, texts cut."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from irc_proxy.errors import BadRequest
from irc_proxy.ui.windows import SORTED_AT_MOST, counted, cut, of_list, of_mapping, offset_of, window


def test_the_first_window_links_onward_only_and_keeps_the_other_parameters() -> None:
    shown = of_list(list(range(250)), {"tab": "schema"}, "columns", size=100)
    assert (shown.items, shown.offset, shown.total) == (list(range(100)), 0, 250)
    assert shown.next_href == "?tab=schema&columns=100"
    assert shown.first_href is None and shown.clipped


def test_a_middle_window_links_both_ways_and_the_last_one_back_only() -> None:
    middle = of_list(list(range(250)), {"columns": "100"}, "columns", size=100)
    assert (middle.items[0], middle.next_href, middle.first_href) == (100, "?columns=200", "?")
    last = of_list(list(range(250)), {"columns": "200"}, "columns", size=100)
    assert (len(last.items), last.next_href, last.first_href) == (50, None, "?")
    past = of_list(list(range(250)), {"columns": "900"}, "columns", size=100)
    assert (past.items, past.next_href) == ([], None)


@pytest.mark.parametrize("raw", ["-1", "1e3", "\u0661", "1234567890", " 1"])
def test_an_offset_that_is_not_up_to_nine_ascii_digits_is_a_bad_request(raw: str) -> None:
    with pytest.raises(BadRequest, match="offset must be a number"):
        offset_of({"columns": raw}, "columns")
    assert offset_of({}, "columns") == offset_of({"columns": ""}, "columns") == 0


def test_only_the_asked_part_of_a_stream_is_read_unless_it_must_be_counted() -> None:
    taken: list[int] = []

    def stream() -> Iterator[int]:
        for i in range(1000):
            taken.append(i)
            yield i

    shown = window(stream(), 1000, {"k": "10"}, "k", size=5)
    assert shown.items == [10, 11, 12, 13, 14] and len(taken) == 15
    total = counted(iter(range(42)), {"k": "40"}, "k", size=5)
    assert (total.items, total.total, total.next_href) == ([40, 41], 42, None)


def test_small_mappings_are_sorted_and_huge_ones_kept_in_stored_order() -> None:
    assert [k for k, _ in of_mapping({"b": 1, "a": 2}, {}, "p").items] == ["a", "b"]
    huge = {f"k{SORTED_AT_MOST - i:06d}": i for i in range(SORTED_AT_MOST + 1)}
    assert of_mapping(huge, {}, "p").items[0] == (f"k{SORTED_AT_MOST:06d}", 0)


def test_long_texts_are_cut_saying_how_much_is_left_out() -> None:
    assert cut("short") == "short"
    assert cut(12345, most=3) == "123… (2 more characters)"
    assert cut("x" * 5000, most=10).endswith("(4,990 more characters)")
