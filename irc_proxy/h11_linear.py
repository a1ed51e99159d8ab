"""h11's header-line grammar without its quadratic backtracking, installed into h11 for every reader of a head.

Why: h11 matches each header line with ``name:OWS(value)?OWS`` where both ``OWS`` are ``[ \\t]*`` and ``value``
may be empty, so on ``name:`` + n blanks + a byte no header may hold (a NUL) the regex engine tries every split of
the blanks between the two ``OWS``: O(n^2), about 10 s of CPU for 60,000 blanks. h11 bounds only an *incomplete*
head (hypercorn: 16 KiB; the upstream pool: 100 KiB); a complete one that arrives in one read (hypercorn reads
64 KiB at once) is matched whatever its size. Meanwhile the event loop is blocked: an anonymous client of the front
(hypercorn parses its head with h11) or a hostile remote catalog (the pool's fallback reader, and ``wire``, which
copies the grammar) stalls every caller, and no timeout fires.

The fix makes the first ``OWS`` possessive (``[ \\t]*+``, Python 3.11): it takes every blank after the colon and
never gives one back. The language and the groups are h11's: a match in which the first ``OWS`` stops before a
blank has an empty value (a value starts with a non-blank) and the rest of the line all blanks, which the
possessive form matches as well, with the same empty value. Refusals stay h11's own (``illegal header line``).
"""

from __future__ import annotations

import re

from h11 import _abnf, _readers

HEADER_FIELD = _abnf.header_field.replace(":" + _abnf.OWS, ":" + _abnf.OWS + "+", 1)
"""h11's ``header_field`` with the ``OWS`` after the colon possessive."""


def install() -> None:
    """Make h11 read header lines with ``HEADER_FIELD`` (idempotent; h11 looks the regex up at each head)."""
    if _abnf.header_field == HEADER_FIELD:  # h11 changed its grammar: leave it alone (a unit test fails)
        return
    if _readers.header_field_re.pattern != HEADER_FIELD.encode("ascii"):
        _readers.header_field_re = re.compile(HEADER_FIELD.encode("ascii"))
