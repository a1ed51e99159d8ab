"""Avro files (manifest lists, manifests) inflate within a bound of their compressed bytes.

Avro compresses block by block, and pyiceberg inflates each block whole: a manifest of a few hundred KB whose
entries carry a 64 MB lower bound each (zeros deflate about a thousand times) inflated to gigabytes. Measured
before this module: one such manifest under a writer's own table took the server's peak memory up by 3.6 GB
when a compaction and the table's health page read it, and a few more would kill every replica that read it
(scan planning, the health page, the expiry, orphan removal, purge and the rewrites all read manifests).

So every Avro file read in this process inflates at most ``FLOOR_BYTES`` plus ``MAX_RATIO`` times the
compressed bytes read so far (manifests inflate 3 to 15 times; a table's own stats cannot reach 64); a
block past it is refused with ``Unprocessable`` before it is inflated further. ``install`` puts the bounded
block reader in place of pyiceberg's (``AvroFile._read_block``, the one place every Avro read decompresses);
``app`` calls it when it is imported (the server, the command line and the tests all build the app).
"""

from __future__ import annotations

import bz2
import threading
import zlib
from io import BytesIO
from typing import Any

from pyiceberg.avro.codecs import zstandard_codec
from pyiceberg.avro.codecs.bzip2 import BZip2Codec
from pyiceberg.avro.codecs.deflate import DeflateCodec
from pyiceberg.avro.codecs.zstandard_codec import ZStandardCodec
from pyiceberg.avro.decoder import new_decoder
from pyiceberg.avro.file import SYNC_SIZE, AvroFile, Block

from irc_proxy.errors import Unprocessable

MAX_RATIO = 64
"""Inflated bytes per compressed byte an Avro file may reach (past ``FLOOR_BYTES``)."""
FLOOR_BYTES = 4 << 20
"""What any Avro file may inflate to, whatever its compressed size."""


_reading = threading.local()
"""Per thread, the Avro file being read (its header) and what it read and inflated so far: pyiceberg's
``AvroFile`` has ``__slots__``, and a file is read through on one thread (a new header starts over)."""


class InflationRefused(Unprocessable):
    """An Avro file inflates past its bound: a decompression bomb, not a manifest a writer could produce."""


def inflate(codec: Any, data: bytes, limit: int) -> bytes:
    """``data`` decompressed by ``codec`` (one of pyiceberg's codec classes), at most ``limit`` bytes of it;
    raises InflationRefused past it (deflate, zstandard and bzip2 stop there; others are checked after)."""
    if codec is DeflateCodec:
        out = zlib.decompressobj(-15).decompress(data, limit + 1)
    elif codec is BZip2Codec:
        out = bz2.BZ2Decompressor().decompress(data, limit + 1)
    elif codec is ZStandardCodec and (decompressor := getattr(zstandard_codec, "ZstdDecompressor", None)):
        with decompressor().stream_reader(BytesIO(data)) as reader:  # zstandard, when pyiceberg found it
            out = reader.read(limit + 1)
    else:  # snappy (at most ~21 times by its format) and whatever else pyiceberg knows
        out = codec.decompress(data)
    if len(out) > limit:
        raise InflationRefused(
            f"An Avro file inflates past {MAX_RATIO} times its compressed size (a decompression bomb): refused"
        )
    return bytes(out)


def _read_block(self: AvroFile[Any]) -> int:
    """pyiceberg's ``AvroFile._read_block``, with each block inflated within the file's bound."""
    if self.block:
        sync_marker = self.decoder.read(SYNC_SIZE)
        if sync_marker != self.header.sync:
            raise ValueError(f"Expected sync bytes {self.header.sync!r}, but got {sync_marker!r}")
    block_records = self.decoder.read_int()
    block_bytes = self.decoder.read_bytes()
    if codec := self.header.compression_codec():
        if getattr(_reading, "header", None) is not self.header:
            _reading.header, _reading.compressed, _reading.inflated = self.header, 0, 0
        _reading.compressed += len(block_bytes)
        block_bytes = inflate(codec, block_bytes, FLOOR_BYTES + MAX_RATIO * _reading.compressed - _reading.inflated)
        _reading.inflated += len(block_bytes)
    self.block = Block(reader=self.reader, block_records=block_records, block_decoder=new_decoder(block_bytes))
    return block_records


def install() -> None:
    """Bound every Avro read of this process (see the module); idempotent."""
    AvroFile._read_block = _read_block  # type: ignore[method-assign]
