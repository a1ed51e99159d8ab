"""Bytes already read, as pyiceberg files: the bounded readers (``handling.storage.storage_reads``) read a file once,
within their limits, and pyiceberg's Avro readers (the planner's manifests, the purge's walk) parse it from
memory. It sits below every layer so ``planning`` and ``handling`` share it without importing each other."""

from __future__ import annotations

from io import BytesIO

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile


class MemoryInputFile(InputFile):
    """Bytes already read (within the limits) as a pyiceberg InputFile, for its Avro readers."""

    def __init__(self, location: str, data: bytes) -> None:
        super().__init__(location)
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def exists(self) -> bool:
        return True

    def open(self, seekable: bool = True) -> InputStream:
        return BytesIO(self._data)


class MemoryFileIO(FileIO):
    """A read-only FileIO over one file's bytes (``ManifestFile.fetch_manifest_entry`` asks a FileIO)."""

    def __init__(self, file: MemoryInputFile) -> None:
        super().__init__()
        self._file = file

    def new_input(self, location: str) -> InputFile:
        return self._file

    def new_output(self, location: str) -> OutputFile:
        raise PermissionError(f"read-only: {location}")

    def delete(self, location: str | InputFile | OutputFile) -> None:
        raise PermissionError("read-only")
