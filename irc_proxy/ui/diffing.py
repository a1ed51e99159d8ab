"""Line diffs of two SQL texts in near-linear time, and a cache of a view's version diffs.

difflib's ``SequenceMatcher`` is quadratic and worse in the worst case (two 2,000-line texts took 8 to 97 s of
a worker thread). This is a patience diff: lines that occur exactly once in both texts are anchors, their
longest increasing run is matched (``O(n log n)``), and the gaps between anchors are diffed the same way; a
gap without anchors goes to ``SequenceMatcher`` when it is small (``SMALL_GAP`` line pairs), else in aligned
slices of at most ``CHUNK`` lines a side (linear; a valid diff, not always the shortest). Texts over
``MAX_DIFF_LINES`` lines together are not compared at all, and the caller's ``check`` (a deadline) runs
between gaps and slices.
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Callable, Sequence

MAX_DIFF_LINES = 4000
"""Most lines of both texts together (over all dialects of a pair of versions) compared line by line."""
MAX_DIFF_CHARS = 1_000_000
"""Most characters of both texts together (over all dialects) compared: a diff shows every line it compares."""
SMALL_GAP = 10_000
"""Largest gap (lines of one side times lines of the other) left to difflib whole when it has no anchor."""
CHUNK = 100
"""Lines a side of one slice of a larger gap without anchors."""
Line = tuple[str, str]
"""``(kind, text)``: kind is ``same``, ``added`` or ``removed``."""


def _anchors(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` of lines unique in both ``a`` and ``b``, the longest run increasing in both."""
    in_a, in_b = Counter(a), Counter(b)
    where_b = {line: j for j, line in enumerate(b) if in_b[line] == 1 and in_a[line] == 1}
    pairs = [(i, where_b[line]) for i, line in enumerate(a) if line in where_b]
    # the longest increasing subsequence of the j's (patience sorting), with back links
    tails: list[int] = []
    tail_at: list[int] = []
    back: list[int] = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        slot = bisect.bisect_left(tails, j)
        if slot == len(tails):
            tails.append(j)
            tail_at.append(k)
        else:
            tails[slot], tail_at[slot] = j, k
        back[k] = tail_at[slot - 1] if slot else -1
    run: list[tuple[int, int]] = []
    k = tail_at[-1] if tail_at else -1
    while k >= 0:
        run.append(pairs[k])
        k = back[k]
    return run[::-1]


def _small(a: Sequence[str], b: Sequence[str]) -> list[Line]:
    out: list[Line] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [("same", text) for text in a[i1:i2]]
            continue
        out += [("removed", text) for text in a[i1:i2]]
        out += [("added", text) for text in b[j1:j2]]
    return out


def _sliced(a: Sequence[str], b: Sequence[str], check: Callable[[], None]) -> list[Line]:
    """A large gap without anchors: slice ``k`` of ``a`` against slice ``k`` of ``b`` (the same number of
    slices on both sides, each at most ``CHUNK`` lines)."""
    slices = -(-max(len(a), len(b)) // CHUNK)
    out: list[Line] = []
    for k in range(slices):
        check()
        part_a = a[k * len(a) // slices : (k + 1) * len(a) // slices]
        out += _small(part_a, b[k * len(b) // slices : (k + 1) * len(b) // slices])
    return out


def diff_lines(a: Sequence[str], b: Sequence[str], check: Callable[[], None] = lambda: None) -> list[Line]:
    """``a`` against ``b``, line by line (see the module docstring)."""
    out: list[Line] = []
    # a stack of work in reverse order: a gap to diff (a tuple of 4 ints) or lines to emit (a list)
    stack: list[tuple[int, int, int, int] | list[Line]] = [(0, len(a), 0, len(b))]
    while stack:
        task = stack.pop()
        if isinstance(task, list):
            out += task
            continue
        check()
        alo, ahi, blo, bhi = task
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            out.append(("same", a[alo]))
            alo, blo = alo + 1, blo + 1
        tail = 0
        while alo < ahi - tail and blo < bhi - tail and a[ahi - 1 - tail] == b[bhi - 1 - tail]:
            tail += 1
        stack.append([("same", text) for text in a[ahi - tail : ahi]])
        ahi, bhi = ahi - tail, bhi - tail
        if alo == ahi or blo == bhi:
            out += [("removed", text) for text in a[alo:ahi]] + [("added", text) for text in b[blo:bhi]]
            continue
        anchors = _anchors(a[alo:ahi], b[blo:bhi])
        if not anchors:
            small = (ahi - alo) * (bhi - blo) <= SMALL_GAP
            out += _small(a[alo:ahi], b[blo:bhi]) if small else _sliced(a[alo:ahi], b[blo:bhi], check)
            continue
        # gaps between anchors, pushed last first so the first is done first
        ends = [(alo + i, blo + j) for i, j in anchors] + [(ahi, bhi)]
        starts = [(alo, blo)] + [(alo + i + 1, blo + j + 1) for i, j in anchors]
        for k in range(len(ends) - 1, -1, -1):
            if k < len(anchors):
                stack.append([("same", a[ends[k][0]])])
            stack.append((starts[k][0], ends[k][0], starts[k][1], ends[k][1]))
    return out
