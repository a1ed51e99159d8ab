"""Table metadata files: read (cached by location — the files are immutable), write, delete, purge."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from threading import Lock
from urllib.parse import unquote, urlparse

from pyiceberg.catalog import delete_data_files, delete_files
from pyiceberg.exceptions import ValidationError as MetadataInvalid
from pyiceberg.manifest import ManifestFile
from pyiceberg.serializers import FromInputFile, ToOutputFile
from pyiceberg.table.metadata import TableMetadata

from irc_proxy import metrics
from irc_proxy.backends.base import Backend
from irc_proxy.errors import BadRequest, CatalogError, Forbidden, NotFound, ServiceUnavailable
from irc_proxy.threads import ThreadRunner

METADATA_PATH = "write.metadata.path"
METADATA_CODEC = "write.metadata.compression-codec"
DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"
GC_ENABLED = "gc.enabled"
DEFAULT_CACHE_BYTES = 64 << 20
DEFAULT_RECHECK_SECONDS = 10.0
PARSED_BYTES_PER_JSON_BYTE = 6
"""A parsed ``TableMetadata`` takes about six times its JSON size in memory (tracemalloc, pyiceberg 0.12)."""


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


def local_path(location: str) -> str | None:
    """The file-system path of a ``file:`` or absolute location; None for object stores."""
    if location.startswith("file:"):
        return unquote(urlparse(location).path)
    return location if location.startswith("/") else None


@dataclass(eq=False)
class CachedMetadata:
    """One metadata file, parsed, and its JSON as a LoadTableResult carries it (serialised once).

    ``seen`` is when the file was last known to exist (``time.monotonic()``).
    """

    metadata: TableMetadata
    json: bytes
    seen: float = field(default_factory=time.monotonic)

    @classmethod
    def of(cls, metadata: TableMetadata) -> CachedMetadata:
        return cls(metadata, metadata.model_dump_json().encode())

    @property
    def weight(self) -> int:
        """Estimated bytes held: the JSON plus the parsed objects."""
        return len(self.json) * (1 + PARSED_BYTES_PER_JSON_BYTE)


class MetadataCache:
    """Least-recently-used metadata files by location, bounded by estimated bytes (thread-safe).

    Metadata files are immutable, so an entry never goes stale; a location is only dropped when
    the budget needs room or the file turns out to be gone. One cache may serve several catalogs.
    ``recheck_seconds``: how long an object-store file, once seen, is trusted to still exist.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES, recheck_seconds: float = DEFAULT_RECHECK_SECONDS) -> None:
        self.max_bytes = max_bytes
        self.recheck_seconds = recheck_seconds
        self._entries: OrderedDict[str, CachedMetadata] = OrderedDict()
        self._bytes = 0
        self._lock = Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        """Estimated bytes held now."""
        return self._bytes

    def get(self, location: str) -> CachedMetadata | None:
        with self._lock:
            entry = self._entries.get(location)
            if entry is not None:
                self._entries.move_to_end(location)
        (metrics.METADATA_CACHE_HITS if entry is not None else metrics.METADATA_CACHE_MISSES).inc()
        return entry

    def put(self, location: str, metadata: TableMetadata) -> CachedMetadata:
        """Serialise ``metadata`` and keep it (unless it alone exceeds the budget)."""
        entry = CachedMetadata.of(metadata)
        if entry.weight > self.max_bytes:
            return entry
        with self._lock:
            old = self._entries.pop(location, None)
            if old is not None:
                self._bytes -= old.weight
            self._entries[location] = entry
            self._bytes += entry.weight
            while self._bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.weight
        return entry

    def discard(self, location: str) -> None:
        with self._lock:
            entry = self._entries.pop(location, None)
            if entry is not None:
                self._bytes -= entry.weight


_MISSING_BUCKET = ("NO_SUCH_BUCKET", "NoSuchBucket")
_NOT_A_FILE = ("is a directory", "Is a directory", "Not a directory")
_DENIED = ("ACCESS_DENIED", "AccessDenied", "Forbidden")


def storage_error(what: str, exc: OSError) -> CatalogError:
    """An object-store or file-system failure: a missing bucket or a directory is 400, a refusal 403, else 503.

    pyarrow reports every S3 failure as a plain OSError naming the AWS error; an outage must not
    look like a bad request (clients do not retry a 400).
    """
    text = str(exc)
    if any(code in text for code in _MISSING_BUCKET):
        return BadRequest(f"{what}: the bucket does not exist")
    if isinstance(exc, IsADirectoryError | NotADirectoryError) or any(code in text for code in _NOT_A_FILE):
        return BadRequest(f"{what}: the path is not usable ({text[:200]})")
    if isinstance(exc, PermissionError) or any(code in text for code in _DENIED):
        return Forbidden(f"{what}: permission denied")
    return ServiceUnavailable(f"{what}: storage is unavailable ({text[:200]})")


class MetadataFiles:
    """Reads and writes a catalog's table metadata files through its backend's FileIO."""

    def __init__(self, backend: Backend, threads: ThreadRunner, cache: MetadataCache | None = None) -> None:
        self._backend = backend
        self._threads = threads
        self.cache = cache if cache is not None else MetadataCache()

    async def read(self, location: str, *, check_exists: bool = False) -> TableMetadata:
        """Parse the metadata file at ``location``. Raises NotFound if it cannot be opened."""
        return (await self.load(location, check_exists=check_exists)).metadata

    async def load(self, location: str, *, check_exists: bool = False) -> CachedMetadata:
        """The parsed file and its response JSON, from the cache when possible. Raises NotFound.

        With ``check_exists``, a cached file is only used while it still exists, so a load reports a
        metadata file that was deleted or moved, as Iceberg Java does: a local file is stat-ed on
        every load (microseconds, on the event loop); an object-store file costs a HEAD request, so
        it is trusted for ``cache.recheck_seconds`` after it was last seen.
        """
        cached = self.cache.get(location)
        if cached is not None:
            if not check_exists or await self._still_exists(location, cached):
                return cached
            self.cache.discard(location)
        return await self._threads.run(self._read, location)

    async def _still_exists(self, location: str, cached: CachedMetadata) -> bool:
        path = local_path(location)
        if path is not None:
            return os.path.isfile(path)
        now = time.monotonic()
        if now - cached.seen < self.cache.recheck_seconds:
            return True
        if await self._threads.run(self._exists_remote, location):
            cached.seen = now
            return True
        return False

    def _exists_remote(self, location: str) -> bool:
        try:
            return self._backend.file_io(location, {}).new_input(location).exists()
        except OSError:
            return False  # re-read it: the read reports the error

    def _read(self, location: str) -> CachedMetadata:
        io = self._backend.file_io(location, {})
        try:
            metadata = FromInputFile.table_metadata(io.new_input(location))
        except (FileNotFoundError, IsADirectoryError) as exc:
            raise NotFound(f"Failed to open input stream for file: {location}") from exc
        except (ValueError, MetadataInvalid) as exc:  # MetadataInvalid: not table metadata (a view's)
            raise BadRequest(f"Cannot read table metadata file {location}: {exc}") from exc
        except OSError as exc:
            raise storage_error(f"Cannot read table metadata file {location}", exc) from exc
        return self.cache.put(location, metadata)

    async def write(self, metadata: TableMetadata, location: str) -> None:
        """Write a new metadata file (never overwrites)."""

        def write() -> None:
            io = self._backend.file_io(location, metadata.properties)
            try:
                ToOutputFile.table_metadata(metadata, io.new_output(location))
            except OSError as exc:  # nothing was committed; a retry may work when storage is back
                raise storage_error(f"Cannot write metadata file {location}", exc) from exc
            self.cache.put(location, metadata)

        await self._threads.run(write)

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
