"""Table metadata files: read (cached by location — the files are immutable), write, delete, purge."""

from __future__ import annotations

import contextlib
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from threading import Lock

from pyiceberg.catalog import delete_data_files, delete_files
from pyiceberg.manifest import ManifestFile
from pyiceberg.serializers import FromInputFile, ToOutputFile
from pyiceberg.table.metadata import TableMetadata

from irc_proxy.backends.base import Backend
from irc_proxy.errors import BadRequest, NotFound
from irc_proxy.threads import ThreadRunner

METADATA_PATH = "write.metadata.path"
METADATA_CODEC = "write.metadata.compression-codec"
DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"
GC_ENABLED = "gc.enabled"


def metadata_version(location: str) -> int:
    """The version number at the start of a metadata file name (``00012-<uuid>...``), or -1."""
    head = location.rsplit("/", 1)[-1].split("-", 1)[0]
    return int(head) if head.isdigit() else -1


def new_metadata_location(metadata: TableMetadata, version: int) -> str:
    """Where the next metadata file of a table goes (honours write.metadata.path and gzip)."""
    directory = metadata.properties.get(METADATA_PATH) or f"{metadata.location.rstrip('/')}/metadata"
    codec = metadata.properties.get(METADATA_CODEC, "none").lower()
    suffix = ".gz.metadata.json" if codec == "gzip" else ".metadata.json"
    return f"{directory.rstrip('/')}/{version:05d}-{uuid.uuid4()}{suffix}"


class MetadataFiles:
    """Reads and writes a catalog's table metadata files through its backend's FileIO."""

    def __init__(self, backend: Backend, threads: ThreadRunner, cache_entries: int = 512) -> None:
        self._backend = backend
        self._threads = threads
        self._cache: OrderedDict[str, TableMetadata] = OrderedDict()
        self._cache_entries = cache_entries
        self._lock = Lock()

    async def read(self, location: str, *, check_exists: bool = False) -> TableMetadata:
        """Parse the metadata file at ``location``. Raises NotFound if it cannot be opened.

        With ``check_exists``, a cached file is only used while it still exists (one stat instead of a
        read), so a load reports a metadata file that was deleted or moved, as Iceberg Java does.
        """
        with self._lock:
            cached = self._cache.get(location)
            if cached is not None:
                self._cache.move_to_end(location)
        if cached is not None:
            if not check_exists or await self._threads.run(self._exists, location):
                return cached
            with self._lock:
                self._cache.pop(location, None)
        metadata = await self._threads.run(self._read, location)
        self._remember(location, metadata)
        return metadata

    def _exists(self, location: str) -> bool:
        try:
            return self._backend.file_io(location, {}).new_input(location).exists()
        except OSError:
            return False  # re-read it: the read reports the error

    def _read(self, location: str) -> TableMetadata:
        io = self._backend.file_io(location, {})
        try:
            return FromInputFile.table_metadata(io.new_input(location))
        except (FileNotFoundError, IsADirectoryError) as exc:
            raise NotFound(f"Failed to open input stream for file: {location}") from exc
        except (ValueError, OSError) as exc:
            raise BadRequest(f"Cannot read table metadata file {location}: {exc}") from exc

    def _remember(self, location: str, metadata: TableMetadata) -> None:
        with self._lock:
            self._cache[location] = metadata
            self._cache.move_to_end(location)
            while len(self._cache) > self._cache_entries:
                self._cache.popitem(last=False)

    async def write(self, metadata: TableMetadata, location: str) -> None:
        """Write a new metadata file (never overwrites)."""

        def write() -> None:
            io = self._backend.file_io(location, metadata.properties)
            ToOutputFile.table_metadata(metadata, io.new_output(location))

        await self._threads.run(write)
        self._remember(location, metadata)

    async def make_directory(self, location: str) -> None:
        """Create a local directory (some clients expect ``metadata/`` after a stage-create)."""
        if location.startswith("file:") or location.startswith("/"):
            from pathlib import Path
            from urllib.parse import urlparse

            path = urlparse(location).path if location.startswith("file:") else location
            await self._threads.run(lambda: Path(path).mkdir(parents=True, exist_ok=True))

    async def delete_replaced(self, base: TableMetadata, new: TableMetadata) -> None:
        """Delete metadata files that fell out of the metadata log, if the table asks for it."""
        if new.properties.get(DELETE_AFTER_COMMIT, "false").lower() != "true":
            return
        kept = {entry.metadata_file for entry in new.metadata_log}
        dropped = {entry.metadata_file for entry in base.metadata_log} - kept
        if dropped:
            await self._threads.run(self._delete, dropped, new.location, "previous metadata")

    def _delete(self, files: Iterable[str], location: str, kind: str) -> None:
        delete_files(self._backend.file_io(location, {}), set(files), kind)

    async def purge(self, metadata_location: str, metadata: TableMetadata) -> None:
        """Delete a dropped table's data, manifests and metadata files; nothing if gc.enabled=false.

        Only files the metadata references are deleted, never whole directories, so a new table
        that reuses the location keeps its files.
        """
        if metadata.properties.get(GC_ENABLED, "true").lower() == "false":
            return

        def purge() -> None:
            io = self._backend.file_io(metadata.location, metadata.properties)
            manifests: list[ManifestFile] = []
            manifest_lists: set[str] = set()
            for snapshot in metadata.snapshots:
                with contextlib.suppress(OSError):
                    manifests += snapshot.manifests(io)
                manifest_lists.add(snapshot.manifest_list)
            delete_data_files(io, manifests)
            delete_files(io, {m.manifest_path for m in manifests}, "manifest")
            delete_files(io, manifest_lists, "manifest list")
            delete_files(io, {s.statistics_path for s in metadata.statistics}, "statistics")
            delete_files(io, {e.metadata_file for e in metadata.metadata_log} | {metadata_location}, "metadata")

        await self._threads.run(purge)
