"""Opaque page tokens and page requests for list operations."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Generic, TypeVar

from irc_proxy.errors import BadRequest

T = TypeVar("T")


@dataclass(frozen=True)
class PageRequest:
    """``after`` is the last key of the previous page; ``limit`` None means "everything"."""

    after: str | None = None
    limit: int | None = None
    paginated: bool = False


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


def fetch_limit(page: PageRequest) -> int:
    """How many keys to ask a store for: one more than the page, to know whether another follows."""
    return 10**9 if page.limit is None else page.limit + 1


def page_of(keys: list[str], page: PageRequest) -> tuple[list[str], str | None]:
    """Cut ``keys`` (fetched with ``fetch_limit``) to the page and compute the next page's token."""
    if page.limit is not None and len(keys) > page.limit:
        kept = keys[: page.limit]
        return kept, encode_token(kept[-1])
    return keys, None
