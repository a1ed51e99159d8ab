"""``avro_inflation``: an Avro block inflating past its file's bound is refused before it is inflated whole,
with every codec that can stop early; an ordinary manifest reads as before."""

from __future__ import annotations

import bz2
import zlib

import pytest
from pyiceberg.avro.codecs.bzip2 import BZip2Codec
from pyiceberg.avro.codecs.deflate import DeflateCodec
from pyiceberg.avro.codecs.zstandard_codec import ZStandardCodec

from irc_proxy.avro_inflation import InflationRefused, inflate

ZEROS = b"\0" * (8 << 20)


def deflated(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("codec", "packed"),
    [
        (DeflateCodec, deflated(ZEROS)),
        (BZip2Codec, bz2.compress(ZEROS)),
        (ZStandardCodec, ZStandardCodec.compress(ZEROS)[0]),
    ],
)
def test_a_block_past_its_bound_is_refused_and_one_within_reads_whole(codec: object, packed: bytes) -> None:
    assert len(packed) < 64 << 10
    with pytest.raises(InflationRefused):
        inflate(codec, packed, 1 << 20)
    assert inflate(codec, packed, len(ZEROS)) == ZEROS
