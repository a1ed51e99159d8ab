"""Opaque page tokens and page requests for list operations."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from irc_proxy.errors import BadRequest

T = TypeVar("T")


@dataclass(frozen=True)
class PageRequest:
    """``token`` resumes a listing (the store's own token, decoded); ``limit`` None means "everything"."""

    token: str | None = None
    limit: int | None = None


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_token: str | None


def encode_token(key: str) -> str:
    """Token for the page after ``key`` (opaque to clients)."""
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def decode_token(token: str) -> str:
    """Inverse of ``encode_token``; raises BadRequest for a token we did not issue."""
    try:
        key = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"Invalid pageToken: {token!r}") from exc
    if not key:
        raise BadRequest(f"Invalid pageToken: {token!r}")
    return key


Fetch = Callable[[str | None, int], Awaitable[tuple[list[str], str | None]]]
BATCH = 1000


async def collect(fetch: Fetch, page: PageRequest, keep: Callable[[str], bool] | None = None) -> Page[str]:
    """Fill one page from a store that lists in batches with its own resume tokens.

    Never asks for more than the page still needs, so a batch is always consumed whole and the
    store's token resumes exactly after it (stores like Glue cannot resume mid-batch). ``keep``
    filters names (e.g. direct children only); a page may then hold fewer names than asked, and
    the last page may be empty.
    """
    found: list[str] = []
    token = page.token
    while True:
        want = BATCH if page.limit is None else min(BATCH, page.limit - len(found))
        names, token = await fetch(token, want)
        found += [name for name in names if keep is None or keep(name)]
        if token is None or (page.limit is not None and len(found) >= page.limit):
            break
    return Page(found, encode_token(token) if token is not None and page.limit is not None else None)
