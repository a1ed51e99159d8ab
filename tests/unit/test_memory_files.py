"""Bytes already read, served to pyiceberg as a read-only file."""

from __future__ import annotations

import pytest

from irc_proxy.memory_files import MemoryFileIO, MemoryInputFile


def test_a_memory_file_reads_back_its_bytes_from_any_position() -> None:
    file = MemoryInputFile("s3://b/m.avro", b"0123456789")
    assert (len(file), file.exists(), file.location) == (10, True, "s3://b/m.avro")
    stream = file.open()
    stream.seek(4)
    assert stream.read(3) == b"456"
    assert file.open().read() == b"0123456789"  # each open starts afresh


def test_the_file_io_hands_out_its_one_file_and_refuses_writes() -> None:
    file = MemoryInputFile("s3://b/m.avro", b"x")
    io = MemoryFileIO(file)
    assert io.new_input("s3://b/anything") is file
    with pytest.raises(PermissionError, match="read-only"):
        io.new_output("s3://b/m.avro")
    with pytest.raises(PermissionError):
        io.delete("s3://b/m.avro")
