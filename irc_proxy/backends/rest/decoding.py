"""An upstream answer's ``Content-Encoding`` undone with a bound on what it inflates to.

Why not httpx's decoders: they inflate whatever they are given at once, and the lean pool hands them the
whole body as one piece. A hostile remote catalog's 1 MB gzip body of zeros inflated to 1 GB in memory (2 GB
of peak RSS measured) before ``max_response_mb`` was checked; 128 MB on the wire (the default bound) would
have asked for 128 GB. Here every step stops one byte past the bound (``zlib``'s ``max_length``, a bounded
``zstd`` stream read), so memory is at most the raw body plus ``limit`` per layer.

The codings are httpx's (``gzip``, ``deflate``, ``zstd`` when ``zstandard`` is installed, ``identity``),
unknown ones are skipped as httpx skips them.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence
from types import ModuleType

import httpx

from irc_proxy.backends.rest.connection import ResponseTooLarge

zstandard: ModuleType | None
try:  # as httpx: zstd is decoded (and asked for in Accept-Encoding) only when zstandard is installed
    import zstandard
except ImportError:  # pragma: no cover - the venv has it
    zstandard = None

_ZSTD_WINDOW = 1 << 23
"""Largest zstd window accepted (8 MiB, what ``zstd -19`` uses): a frame cannot make the decoder reserve more."""


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
        elif name == "zstd" and zstandard is not None:
            body = _unzstd(body, limit)
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


def _unzstd(data: bytes, limit: int) -> bytes:
    assert zstandard is not None
    decompressor = zstandard.ZstdDecompressor(max_window_size=_ZSTD_WINDOW)
    pieces, size = [], 0
    try:
        with decompressor.stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
            while piece := reader.read(limit + 1 - size):
                pieces.append(piece)
                size += len(piece)
                if size > limit:
                    raise ResponseTooLarge(f"the answer inflates past {limit} bytes")
    except zstandard.ZstdError as exc:
        raise httpx.DecodingError(str(exc)) from exc
    return b"".join(pieces)
