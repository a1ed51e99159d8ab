"""Windows on a page's long lists: each list shows at most ``size`` entries from an offset given by its own
query parameter (``?properties=200``), with a link to the next window and one back to the start.

A table can carry a million properties, 190,000 columns or thousands of snapshots, schemas and specs: a
page that showed them all would take seconds to build and tens of megabytes to send. An offset is ASCII
digits (at most 9); anything else is a 400.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import urlencode

from irc_proxy.errors import BadRequest
from irc_proxy.numbers import is_number

T = TypeVar("T")
V = TypeVar("V")
SIZE = 100
"""Entries per window (per list)."""
SHOWN_CHARS = 2_000
"""Characters of one text from the metadata shown at most (a property value, a doc, a file name): a window
of 100 entries stays small however long the metadata's strings are."""
SORTED_AT_MOST = 10_000
"""Longer property maps are shown in their stored order: sorting a million keys holds the interpreter for
most of a second (no other request runs meanwhile)."""


@dataclass(frozen=True)
class Window(Generic[T]):
    """``items`` of a list of ``total`` entries, starting at ``offset``; hrefs to the next window and the start."""

    items: list[T]
    offset: int
    total: int
    next_href: str | None
    first_href: str | None

    @property
    def clipped(self) -> bool:
        """Some entries are not shown."""
        return len(self.items) < self.total


def cut(text: object, most: int = SHOWN_CHARS) -> str:
    """``text`` as a string of at most ``most`` characters (and a note of how many more there are)."""
    shown = str(text)
    if len(shown) <= most:
        return shown
    return f"{shown[:most]}… ({len(shown) - most:,} more characters)"


def offset_of(query: Mapping[str, str], key: str) -> int:
    """The list's offset from ``?<key>=``; 0 when absent. Raises BadRequest for anything but digits."""
    raw = query.get(key)
    if raw is None or raw == "":
        return 0
    if not is_number(raw, 9):
        raise BadRequest(f"The {key} offset must be a number of at most 9 digits")
    return int(raw)


def _href(query: Mapping[str, str], key: str, offset: int) -> str:
    pairs = {k: v for k, v in query.items() if k != key} | ({key: str(offset)} if offset else {})
    return "?" + urlencode(pairs) if pairs else "?"


def window(entries: Iterable[T], total: int, query: Mapping[str, str], key: str, size: int = SIZE) -> Window[T]:
    """The window of ``entries`` (``total`` of them) that ``?<key>=`` asks for; only that part is read."""
    offset = offset_of(query, key)
    items = list(itertools.islice(entries, offset, offset + size))
    return _framed(items, offset, total, query, key)


def of_list(entries: Sequence[T], query: Mapping[str, str], key: str, size: int = SIZE) -> Window[T]:
    return window(entries, len(entries), query, key, size)


def counted(entries: Iterable[T], query: Mapping[str, str], key: str, size: int = SIZE) -> Window[T]:
    """The window of ``entries`` of unknown length: all of them are read (and counted), the window kept."""
    offset = offset_of(query, key)
    items: list[T] = []
    total = 0
    for total, entry in enumerate(entries, 1):
        if offset < total <= offset + size:
            items.append(entry)
    return _framed(items, offset, total, query, key)


def _framed(items: list[T], offset: int, total: int, query: Mapping[str, str], key: str) -> Window[T]:
    """``items`` from ``offset`` of ``total``, with the links to the next window and back to the first."""
    after = offset + len(items)
    return Window(
        items,
        offset,
        total,
        _href(query, key, after) if after < total else None,
        _href(query, key, 0) if offset else None,
    )


def of_mapping(entries: Mapping[str, V], query: Mapping[str, str], key: str) -> Window[tuple[str, V]]:
    """Entries by key (in stored order when there are more than ``SORTED_AT_MOST``)."""
    items: Iterable[tuple[str, V]] = entries.items()
    if len(entries) <= SORTED_AT_MOST:
        items = sorted(entries.items(), key=lambda item: item[0])
    return window(items, len(entries), query, key)
