"""Table metadata files: read (cached by location — the files are immutable), write, delete, purge."""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from threading import Lock

from pyiceberg.serializers import ToOutputFile
from pyiceberg.table.metadata import TableMetadata

from irc_proxy import metrics
from irc_proxy.backends.base import Backend
from irc_proxy.errors import CatalogError
from irc_proxy.handling.storage.locations import METADATA_PATH, StorageLocations
from irc_proxy.handling.storage.purge import Purge, read_failure, redact
from irc_proxy.handling.storage.storage_reads import (
    BoundedReader,
    ReadLimits,
    local_path,
    parse_metadata,
    storage_error,
)
from irc_proxy.handling.tables.format_v3 import ServedTableMetadata
from irc_proxy.numbers import is_number
from irc_proxy.threads import ThreadRunner

log = logging.getLogger("irc_proxy.metadata")

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
    return int(head) if is_number(head) else -1


def new_metadata_location(metadata: TableMetadata, version: int) -> str:
    """Where the next metadata file of a table goes (honours write.metadata.path and gzip)."""
    directory = metadata.properties.get(METADATA_PATH) or f"{metadata.location.rstrip('/')}/metadata"
    codec = metadata.properties.get(METADATA_CODEC, "none").lower()
    suffix = ".gz.metadata.json" if codec == "gzip" else ".metadata.json"
    return f"{directory.rstrip('/')}/{version:05d}-{uuid.uuid4()}{suffix}"


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


class MetadataFiles:
    """Reads and writes a catalog's table metadata files through its backend's FileIO.

    Reads are bounded (``storage_reads``): at most ``max_bytes`` of a regular file, object-store requests
    within about ``timeout`` seconds. With ``locations``, reads and deletes stay inside the catalog's
    allowed locations (also through symbolic links); the callers check client-given locations first.
    """

    def __init__(
        self,
        backend: Backend,
        threads: ThreadRunner,
        cache: MetadataCache | None = None,
        *,
        locations: StorageLocations | None = None,
        limits: ReadLimits,
    ) -> None:
        self._backend = backend
        self._threads = threads
        self.cache = cache if cache is not None else MetadataCache()
        self._locations = locations
        self.reader = BoundedReader(backend, limits, locations)

    async def read(self, location: str, *, check_exists: bool = False) -> TableMetadata:
        """Parse the metadata file at ``location``. Raises NotFound if it cannot be opened."""
        return (await self.load(location, check_exists=check_exists)).metadata

    async def read_fresh(self, location: str) -> TableMetadata:
        """Parse the file as it is in storage now, not as cached (a register: it may have been purged since)."""
        self.cache.discard(location)
        return (await self._threads.run(self._read, location)).metadata

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
            return self.reader.file_io(location).new_input(location).exists()
        except OSError:
            return False  # re-read it: the read reports the error

    async def read_bytes(self, location: str, what: str) -> bytes:
        """A file's bytes (gunzipped), read within the limits. Raises CatalogError, never quoting the file."""
        return await self._threads.run(self.reader.read, location, what)

    def _read(self, location: str) -> CachedMetadata:
        what = "Table metadata file"
        data = self.reader.read(location, what)
        metadata = parse_metadata(ServedTableMetadata, data, location, what).root
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

    async def write_file(self, location: str, payload: bytes, properties: dict[str, str]) -> None:
        """Write a new metadata file of another kind (views); failures are classified as for tables."""

        def write() -> None:
            try:
                with self._backend.file_io(location, properties).new_output(location).create() as out:
                    out.write(payload)
            except OSError as exc:  # nothing was committed; a retry may work when storage is back
                raise storage_error(f"Cannot write metadata file {location}", exc) from exc

        await self._threads.run(write)

    async def make_directory(self, location: str) -> None:
        """Create a local directory (some clients expect ``metadata/`` after a stage-create)."""
        if location.startswith("file:") or location.startswith("/"):
            from pathlib import Path
            from urllib.parse import urlparse

            path = urlparse(location).path if location.startswith("file:") else location
            await self._threads.run(lambda: Path(path).mkdir(parents=True, exist_ok=True))

    async def delete_replaced(self, base: TableMetadata, new: TableMetadata) -> None:
        """Delete metadata files that fell out of the metadata log, if the table asks for it.

        Only files under the table's own locations (a commit may have put anything in the log); never raises.
        """
        if new.properties.get(DELETE_AFTER_COMMIT, "false").lower() != "true":
            return
        kept = {entry.metadata_file for entry in new.metadata_log}
        dropped = [e.metadata_file for e in base.metadata_log if e.metadata_file not in kept]
        if dropped:
            name = f"{redact(new.location)} (delete-after-commit)"
            await self._threads.run(self._purge_quietly, name, new, lambda purge: purge.delete("metadata", dropped))

    async def purge(self, metadata_location: str, metadata: TableMetadata, *, table: str | None = None) -> None:
        """Delete a dropped table's data, manifests and metadata files; nothing if gc.enabled=false.

        Only files the metadata references and that lie under the table's own locations (and the
        allowed locations) are deleted, never whole directories, so a new table that reuses the location
        keeps its files. Never raises: the pointer is already gone (see ``purge.py``).
        """
        if metadata.properties.get(GC_ENABLED, "true").lower() == "false":
            return
        name = table or redact(metadata.location)
        await self._threads.run(
            self._purge_quietly, name, metadata, lambda purge: purge.run(metadata_location, metadata)
        )
        for deleted in (metadata_location, *(entry.metadata_file for entry in metadata.metadata_log)):
            self.cache.discard(deleted)

    async def purge_dropped(self, metadata_location: str, table: str) -> None:
        """Purge a table whose pointer was just dropped, reading its metadata first. Never raises."""
        try:
            metadata = await self.read(metadata_location)
        except CatalogError as exc:
            reason = read_failure(exc)
            metrics.PURGE_FAILURES.labels(reason=reason).inc()
            log.warning("purge of table %s: its metadata file cannot be read (%s); nothing deleted", table, reason)
            return
        await self.purge(metadata_location, metadata, table=table)

    def _purge_quietly(self, table: str, metadata: TableMetadata, work: Callable[[Purge], None]) -> None:
        """Run ``work`` on a new Purge (in a worker thread: building the FileIO may refresh credentials)."""
        purge = None
        try:
            purge = Purge(table, metadata, self.reader.file_io(metadata.location), self.reader, self._locations)
            work(purge)
        except Exception:  # a bug or a broken FileIO: still never a 500 once the pointer is gone
            metrics.PURGE_FAILURES.labels(reason="error").inc()
            log.exception("purge of table %s stopped early", table)
        if purge is not None:
            purge.report()
