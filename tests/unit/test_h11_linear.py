"""``h11_linear``: h11's header-line grammar, the same matches and groups, in linear time on the lines that made
h11's own backtrack quadratically (blanks then a byte no header may hold)."""

from __future__ import annotations

import re
import time

import h11
from h11 import _abnf, _readers
from hypothesis import example, given
from hypothesis import strategies as st

from irc_proxy import h11_linear

H11 = re.compile(_abnf.header_field.encode("ascii"))
OURS = re.compile(h11_linear.HEADER_FIELD.encode("ascii"))
PIECES = st.sampled_from([b" ", b"\t", b"a", b"-", b":", b"\x00", b"\x0b", b"\r", b"\x80", b"\x7f", b"=", b""])


def test_it_is_h11s_grammar_with_one_possessive_blank_run() -> None:
    """A new h11 with another grammar fails here: the fix is then to be looked at again."""
    assert _abnf.header_field != h11_linear.HEADER_FIELD
    assert h11_linear.HEADER_FIELD.replace(":[ \\t]*+", ":[ \\t]*", 1) == _abnf.header_field


@given(st.lists(PIECES, max_size=16).map(b"".join))
@example(b"a:   ")
@example(b"a: \t x \t ")
@example(b"a:  \x00")
def test_a_line_matches_as_with_h11s(line: bytes) -> None:
    theirs, ours = H11.fullmatch(line), OURS.fullmatch(line)
    assert (theirs is None) == (ours is None)
    if theirs is not None and ours is not None:
        assert theirs.groupdict() == ours.groupdict()


def test_blanks_then_a_nul_cost_no_seconds_in_h11() -> None:
    """Installed, h11 refuses a 100 KiB line of blanks then a NUL in milliseconds (h11's own regex: minutes)."""
    h11_linear.install()
    assert _readers.header_field_re.pattern == OURS.pattern
    parser = h11.Connection(h11.SERVER, max_incomplete_event_size=200 << 10)
    parser.receive_data(b"GET / HTTP/1.1\r\nhost: x\r\nx-pad:" + b" " * (100 << 10) + b"\x00\r\n\r\n")
    started = time.process_time()
    try:
        parser.next_event()
        raise AssertionError("h11 read the line")
    except h11.RemoteProtocolError as exc:
        assert "illegal header line" in str(exc)
    assert time.process_time() - started < 0.5
