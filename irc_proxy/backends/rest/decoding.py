"""An upstream answer's ``Content-Encoding`` undone with a bound on what it inflates to.

Why not httpx's decoders: they inflate whatever they are given at once, and the lean pool hands them the
whole body as one piece. A hostile remote catalog's 1 MB gzip body of zeros inflated to 1 GB in memory (2 GB
of peak RSS measured) before ``max_response_mb`` was checked; 128 MB on the wire (the default bound) would
have asked for 128 GB. Here every step stops one byte past the bound (``zlib``'s ``max_length``), so memory
is at most the raw body plus ``limit`` per layer.

The codings are ``gzip`` and ``deflate`` (what the proxy asks for) and ``identity``; a ``zstd`` answer, which
httpx would have inflated whole, is refused as undecodable; other unknown ones are skipped as httpx skips them.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import httpx

from irc_proxy.backends.rest.connection import ResponseTooLarge

ACCEPTED = "gzip, deflate"
"""The ``Accept-Encoding`` sent upstream (``RestUpstream``): what ``decode`` bounds. httpx would add ``zstd``
when ``zstandard`` happens to be installed, a package this project does not declare."""


def decode(body: bytes, encodings: Sequence[str], limit: int) -> bytes:
    """``body`` with ``encodings`` (as the header lists them, first applied first) undone.

    Raises:
        ResponseTooLarge: a step's output passes ``limit`` bytes.
        httpx.DecodingError: the body is not what its encoding says.
    """
    for name in reversed([e.strip().lower() for e in encodings]):
        if name in ("gzip", "x-gzip"):
            body = _inflate(body, zlib.MAX_WBITS | 16, limit)
        elif name == "deflate":
            try:
                body = _inflate(body, zlib.MAX_WBITS, limit)
            except httpx.DecodingError:  # as httpx: a raw deflate stream without the zlib header
                body = _inflate(body, -zlib.MAX_WBITS, limit)
        elif name == "zstd":
            raise httpx.DecodingError("zstd was not asked for (Accept-Encoding: " + ACCEPTED + ")")
    return body


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    decompressor = zlib.decompressobj(wbits)
    try:
        out = decompressor.decompress(data, limit + 1)
    except zlib.error as exc:
        raise httpx.DecodingError(str(exc)) from exc
    if len(out) > limit or decompressor.unconsumed_tail:
        raise ResponseTooLarge(f"the answer inflates past {limit} bytes")
    return out
