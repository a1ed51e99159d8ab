"""Purge: delete what a dropped table owns, and nothing else.

Metadata is client data: a commit or a registered file can point statistics, manifest lists, the metadata
log or (through manifests) data files anywhere. A file is only read or deleted when it lies under the
table's own roots (``locations.table_paths``) and inside the catalog's allowed locations; for local paths
the directory is also resolved, so a symbolic link cannot lead a delete out of them. Everything else is
left in place, counted (``irc_proxy_purge_skipped_total``) and logged once per table. The pointer is
already gone when a purge runs, so it never raises: files it cannot read or delete are counted by reason
(``irc_proxy_purge_failures_total``) and logged.

Manifests are streamed: one manifest list or manifest is in memory at a time (each bounded like any read
on a client's behalf), plus the set of paths already deleted.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator

from pyiceberg.io import FileIO
from pyiceberg.manifest import ManifestFile, read_manifest_list
from pyiceberg.table.metadata import TableMetadata

from irc_proxy import metrics
from irc_proxy.errors import CatalogError, Forbidden, NotFound, ServiceUnavailable
from irc_proxy.handling.storage.locations import StorageLocations
from irc_proxy.handling.storage.storage_reads import (
    BoundedReader,
    FileTooLarge,
    NotARegularFile,
    ReadTimedOut,
    TableFiles,
)
from irc_proxy.memory_files import MemoryFileIO, MemoryInputFile

log = logging.getLogger("irc_proxy.purge")
_EXAMPLES = 3
_SHOWN = 120
_USER_INFO = re.compile(r"//[^/@]*@")


def redact(path: str) -> str:
    """A path as a log line shows it: short, without user info or a query."""
    text = _USER_INFO.sub("//***@", path.split("?", 1)[0])
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


_READ_FAILURES: list[tuple[type[BaseException] | tuple[type[BaseException], ...], str]] = [
    ((NotFound, FileNotFoundError), "missing"),
    ((Forbidden, PermissionError), "denied"),
    (FileTooLarge, "too_large"),
    (NotARegularFile, "not_regular"),
    (ReadTimedOut, "timeout"),
    ((ServiceUnavailable, OSError), "storage"),
]


def read_failure(exc: BaseException) -> str:
    """The ``reason`` label of a file that could not be read ("unreadable": not Avro, not metadata)."""
    return next((reason for types, reason in _READ_FAILURES if isinstance(exc, types)), "unreadable")


class Purge:
    """One purge of one dropped table (blocking: run it in a worker thread)."""

    def __init__(
        self, table: str, metadata: TableMetadata, io: FileIO, reader: BoundedReader, locations: StorageLocations | None
    ) -> None:
        self.table = table
        self._io = io
        self._reader = reader
        self._files = TableFiles(metadata, locations)
        self._deleted: set[str] = set()
        self.skipped: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self._skipped_examples: list[str] = []
        self._failed_examples: list[str] = []

    # Deciding -------------------------------------------------------------------------------------------
    def owns(self, path: str) -> bool:
        """Whether ``path`` lies under the table's roots and the allowed locations (and, locally, really does)."""
        return self._files.owns(path)

    def _skip(self, kind: str, path: str) -> None:
        self.skipped[kind] += 1
        metrics.PURGE_SKIPPED.labels(kind=kind).inc()
        if len(self._skipped_examples) < _EXAMPLES:
            self._skipped_examples.append(redact(path))

    def _fail(self, reason: str, path: str) -> None:
        self.failed[reason] += 1
        metrics.PURGE_FAILURES.labels(reason=reason).inc()
        if len(self._failed_examples) < _EXAMPLES:
            self._failed_examples.append(f"{redact(path)} ({reason})")

    # Acting ---------------------------------------------------------------------------------------------
    def delete(self, kind: str, paths: Iterable[str]) -> None:
        for path in paths:
            if path in self._deleted:
                continue
            if not self.owns(path):
                self._skip(kind, path)
                continue
            try:
                self._io.delete(path)
            except FileNotFoundError:
                self._fail("missing", path)
            except PermissionError:
                self._fail("denied", path)
            except Exception:  # any FileIO failure: the pointer is gone, the purge goes on
                self._fail("storage", path)
            self._deleted.add(path)

    def _read(self, kind: str, path: str) -> bytes | None:
        """The bytes of a manifest (list) the table owns, or None (skipped or failed, and counted)."""
        if not self.owns(path):
            self._skip(kind, path)
            return None
        try:
            return self._reader.read(path, kind)
        except CatalogError as exc:
            self._fail(read_failure(exc), path)
            return None

    def _manifests(self, manifest_list: str) -> list[ManifestFile]:
        data = self._read("manifest list", manifest_list)
        if data is None:
            return []
        try:
            return list(read_manifest_list(MemoryInputFile(manifest_list, data)))
        except Exception:  # not Avro, not a manifest list
            self._fail("unreadable", manifest_list)
            return []

    def _entries(self, manifest: ManifestFile) -> Iterator[str]:
        data = self._read("manifest", manifest.manifest_path)
        if data is None:
            return
        memory = MemoryFileIO(MemoryInputFile(manifest.manifest_path, data))
        try:
            paths = [
                entry.data_file.file_path for entry in manifest.fetch_manifest_entry(memory, discard_deleted=False)
            ]
        except Exception:  # not Avro, not a manifest
            self._fail("unreadable", manifest.manifest_path)
            return
        yield from paths

    def run(self, metadata_location: str, metadata: TableMetadata) -> None:
        seen_manifests: set[str] = set()
        for manifest_list in dict.fromkeys(s.manifest_list for s in metadata.snapshots if s.manifest_list):
            if not self.owns(manifest_list):
                self._skip("manifest list", manifest_list)  # not read either: it may list another table's files
                continue
            for manifest in self._manifests(manifest_list):
                if manifest.manifest_path in seen_manifests:
                    continue
                seen_manifests.add(manifest.manifest_path)
                self.delete("data", self._entries(manifest))  # data and delete files
                self.delete("manifest", [manifest.manifest_path])
            self.delete("manifest list", [manifest_list])
        self.delete("statistics", [s.statistics_path for s in metadata.statistics])
        self.delete("statistics", [s.statistics_path for s in metadata.partition_statistics])
        self.delete("metadata", [entry.metadata_file for entry in metadata.metadata_log])
        self.delete("metadata", [metadata_location])

    def report(self) -> None:
        """Log what was left in place and what failed (once per purge)."""
        if self.skipped:
            log.warning(
                "purge of table %s left %d referenced files outside its locations in place (%s), e.g. %s",
                self.table,
                sum(self.skipped.values()),
                ", ".join(f"{kind}: {n}" for kind, n in sorted(self.skipped.items())),
                ", ".join(self._skipped_examples),
            )
        if self.failed:
            log.warning(
                "purge of table %s could not read or delete %d files (%s), e.g. %s",
                self.table,
                sum(self.failed.values()),
                ", ".join(f"{reason}: {n}" for reason, n in sorted(self.failed.items())),
                ", ".join(self._failed_examples),
            )
