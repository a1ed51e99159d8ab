"""Page requests for list operations, and the opaque tokens that resume them.

A next-page token carries the backend's own resume key (for most stores the last name it
returned), sealed with AES-GCM under a key every replica shares (kept in the state database). The
*scope* of the listing (principal, catalog, operation, parent) is the AEAD's associated data, so:

- a token reveals no name (not even its length beyond a 32-byte block);
- a token only resumes the listing it came from, for the caller it was given to: another
  principal's, catalog's, operation's or parent's token, a tampered one or garbage is a 400;
- any replica opens what another sealed.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from irc_proxy.errors import BadRequest

T = TypeVar("T")

_VERSION = b"\x01"
_NONCE_BYTES = 12
_BLOCK = 32
_TAG_BYTES = 16
KEY_BYTES = 32


def new_key() -> bytes:
    """A fresh 256-bit page-token key."""
    return AESGCM.generate_key(bit_length=KEY_BYTES * 8)


def listing_scope(principal: str, catalog: str, operation: str, parent: Sequence[str]) -> bytes:
    """What a token is bound to (unambiguous: JSON of the parts)."""
    return json.dumps([principal, catalog, operation, list(parent)], ensure_ascii=False).encode()


class PageTokens:
    """Seals and opens page tokens with the shared keys (the first seals; every one opens)."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("at least one page-token key is required")
        self._ciphers = [AESGCM(key) for key in keys]

    def seal(self, resume: str, scope: bytes) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._ciphers[0].encrypt(nonce, _pad(resume.encode()), _VERSION + scope)
        return base64.urlsafe_b64encode(_VERSION + nonce + sealed).decode().rstrip("=")

    def open(self, token: str, scope: bytes) -> str:
        """The resume key inside ``token``.

        Raises:
            BadRequest: the token was not sealed by us for this scope (or was changed); the message
                says which listing it does not fit without echoing anything decoded from it.
        """
        try:
            raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        version, nonce, sealed = raw[:1], raw[1 : 1 + _NONCE_BYTES], raw[1 + _NONCE_BYTES :]
        if version == _VERSION and len(nonce) == _NONCE_BYTES and len(sealed) >= _TAG_BYTES + _BLOCK:
            for cipher in self._ciphers:
                try:
                    return _unpad(cipher.decrypt(nonce, sealed, _VERSION + scope)).decode()
                except (InvalidTag, ValueError):
                    continue
        raise BadRequest("Invalid pageToken: not a token this server issued for this listing and caller")


def _pad(data: bytes) -> bytes:
    """ISO/IEC 7816-4 padding to a whole number of blocks (hides the resume key's exact length)."""
    data += b"\x80"
    return data + b"\x00" * (-len(data) % _BLOCK)


def _unpad(data: bytes) -> bytes:
    stripped = data.rstrip(b"\x00")
    if not stripped.endswith(b"\x80"):
        raise ValueError("bad padding")
    return stripped[:-1]


@dataclass(frozen=True)
class PageBinding:
    """The tokens of one listing request: sealed to (and opened only for) its scope."""

    tokens: PageTokens
    scope: bytes

    def seal(self, resume: str) -> str:
        return self.tokens.seal(resume, self.scope)

    def open(self, token: str) -> str:
        return self.tokens.open(token, self.scope)


@dataclass(frozen=True)
class PageRequest:
    """``token`` resumes a listing (the store's own key, already opened); ``limit`` None means "everything".

    ``binding`` seals the next token; a request without one (an internal look-up) gets no next token,
    so a raw store key can never reach a client.
    """

    token: str | None = None
    limit: int | None = None
    binding: PageBinding | None = None


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_token: str | None


Fetch = Callable[[str | None, int], Awaitable[tuple[list[str], str | None]]]
BATCH = 1000


async def collect(fetch: Fetch, page: PageRequest, keep: Callable[[str], bool] | None = None) -> Page[str]:
    """Fill one page from a store that lists in batches with its own resume tokens.

    Never asks for more than the page still needs, so a batch is always consumed whole and the
    store's token resumes exactly after it (stores like Glue cannot resume mid-batch). ``keep``
    filters names (e.g. direct children only); a page may then hold fewer names than asked, and
    the last page may be empty. The next token (sealed) resumes after the last name the store
    returned, whether or not the caller is shown it.
    """
    found: list[str] = []
    token = page.token
    while True:
        want = BATCH if page.limit is None else min(BATCH, page.limit - len(found))
        names, token = await fetch(token, want)
        found += [name for name in names if keep is None or keep(name)]
        if token is None or (page.limit is not None and len(found) >= page.limit):
            break
    if token is None or page.limit is None or page.binding is None:
        return Page(found, None)
    return Page(found, page.binding.seal(token))
