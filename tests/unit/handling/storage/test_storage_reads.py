"""Pure parts of bounded reads: gzip within a limit, and invalid metadata described without quoting it."""

from __future__ import annotations

import gzip

import pytest
from pyiceberg.table.metadata import TableMetadataWrapper
from pyiceberg.view.metadata import ViewMetadata

from irc_proxy.errors import BadRequest
from irc_proxy.handling.storage.purge import redact
from irc_proxy.handling.storage.storage_reads import FileTooLarge, gunzip, parse_metadata
from irc_proxy.memory_files import MemoryInputFile

SECRET = "do-not-leak"


def test_gunzip_refuses_a_bomb_without_inflating_past_the_limit() -> None:
    bomb = gzip.compress(b"\0" * (10 << 20))
    with pytest.raises(FileTooLarge, match="decompresses to more than the limit of 4096 bytes"):
        gunzip(bomb, 4096, "file:///wh/m.gz.metadata.json", "Table metadata file")


def test_gunzip_reads_every_member_up_to_the_limit() -> None:
    assert gunzip(gzip.compress(b"ab") + gzip.compress(b"cd"), 4, "file:///m", "File") == b"abcd"
    with pytest.raises(FileTooLarge):
        gunzip(gzip.compress(b"ab") + gzip.compress(b"cde"), 4, "file:///m", "File")


@pytest.mark.parametrize("raw", [b"\x1f\x8bnot gzip at all", gzip.compress(b"{}")[:-12]], ids=["junk", "truncated"])
def test_gunzip_of_invalid_gzip_is_400(raw: bytes) -> None:
    with pytest.raises(BadRequest, match="is not valid gzip"):
        gunzip(raw, 1 << 20, "file:///m", "File")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (f"root:x:0:0:{SECRET}".encode(), "not valid JSON"),
        (f'{{"note": "{SECRET}"}}'.encode(), "no format-version"),
        (b'{"format-version": 99}', "an unsupported format-version"),
        (f'{{"format-version": 2, "table-uuid": "{SECRET}", "location": 5}}'.encode(), "invalid table-uuid"),
        (f'{{"format-version": 2, "refs": {{"{SECRET}": {{}}}}}}'.encode(), "missing field refs.….snapshot-id"),
        (b"[1]", "not a JSON object"),
    ],
)
def test_invalid_table_metadata_is_described_without_quoting_the_file(data: bytes, problem: str) -> None:
    with pytest.raises(BadRequest) as raised:
        parse_metadata(TableMetadataWrapper, data, "file:///wh/m.json", "Table metadata file")
    message = raised.value.message
    assert problem in message
    assert SECRET not in message and "input_value" not in message
    assert message.startswith("Table metadata file file:///wh/m.json is not valid table metadata (")


def test_invalid_view_metadata_names_missing_fields() -> None:
    with pytest.raises(BadRequest, match=r"is not valid view metadata .*missing field view-uuid") as raised:
        parse_metadata(ViewMetadata, f'{{"x": "{SECRET}"}}'.encode(), "s3://b/v.json", "View metadata file")
    assert SECRET not in raised.value.message


def test_memory_input_file_serves_its_bytes() -> None:
    file = MemoryInputFile("s3://b/m.avro", b"Obj\x01")
    assert len(file) == 4 and file.exists()
    with file.open() as stream:
        assert stream.read() == b"Obj\x01"


def test_purge_log_lines_show_paths_short_and_without_user_info() -> None:
    assert redact("s3://user:pw@bucket/p?X-Amz-Signature=s") == "s3://***@bucket/p"
    assert redact("s3://b/" + "x" * 500).endswith("…")
    assert len(redact("s3://b/" + "x" * 500)) <= 121
