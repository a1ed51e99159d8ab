"""What a table's metadata reaches: manifest lists, manifests, data and delete files, statistics.

Two questions, asked differently because a wrong answer to each costs differently:

* *what to keep* (:meth:`Reach.kept`): every file the retained snapshots reach. It must be complete, or a
  live file would be deleted: a manifest list or manifest that cannot be read (outside the table's roots,
  missing, too large, not Avro) raises :class:`Incomplete`, and the caller deletes nothing;
* *what may go* (:meth:`Reach.candidates`): the files of expired snapshots. Only manifests under the table's
  roots are read (a client may name another table's manifest, which would list that table's files); what
  cannot be read is simply not a candidate (left for orphan removal).

Both are bounded by ``max_files``: past it :class:`TooManyFiles` is raised and nothing is deleted.
Paths are compared in their normalised spelling (``file:/p`` and ``file:///p`` are one file). Blocking:
run it in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from pyiceberg.manifest import ManifestFile, read_manifest_list
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot

from irc_proxy.errors import CatalogError, Unprocessable
from irc_proxy.handling.loaded import Owns, Read
from irc_proxy.handling.storage.locations import InvalidLocation, normalize
from irc_proxy.handling.storage.purge import read_failure, redact
from irc_proxy.handling.storage.storage_reads import BoundedReader, TableFiles
from irc_proxy.memory_files import MemoryFileIO, MemoryInputFile


class Incomplete(Unprocessable):
    """A file the retained snapshots reach could not be read: what they keep is unknown."""


class TooManyFiles(Unprocessable):
    """More files than one run may look at (``maintenance.max_files_per_run``)."""


def same(path: str) -> str:
    """The spelling paths are compared in (a path that is no valid location stays as it is)."""
    try:
        return normalize(path)
    except InvalidLocation:
        return path


class Reach:
    """Reads one table's manifest lists and manifests within its confinement and ``max_files``."""

    def __init__(self, metadata: TableMetadata, files: TableFiles, reader: BoundedReader, max_files: int) -> None:
        self._metadata, self._max = metadata, max_files
        self._owns: Owns = files.owns
        self._read: Read = partial(reader.read, roots=files.real_roots)
        self.files_read = 0
        self.sizes: dict[str, int] = {}
        """The size each reached manifest and data or delete file has by its metadata (by normalised path)."""

    @classmethod
    def opened(cls, metadata: TableMetadata, read: Read, owns: Owns, max_files: int) -> Reach:
        """Over a table the catalog opened (``Catalog.open_table``: served here or by a remote catalog)."""
        reach = cls.__new__(cls)
        reach._metadata, reach._max, reach._owns, reach._read = metadata, max_files, owns, read
        reach.files_read = 0
        reach.sizes = {}
        return reach

    def _count(self, found: set[str]) -> None:
        if len(found) > self._max:
            raise TooManyFiles(f"The table reaches more than {self._max} files (maintenance.max_files_per_run)")

    def _manifest_list(self, snapshot: Snapshot, strict: bool) -> list[ManifestFile]:
        path = snapshot.manifest_list
        if not path:
            return []
        data = self._bytes(path, "manifest list", strict)
        if data is None:
            return []
        try:
            return list(read_manifest_list(MemoryInputFile(path, data)))
        except Exception as exc:  # not Avro, not a manifest list
            if strict:
                raise Incomplete(f"Cannot read manifest list {redact(path)}: unreadable") from exc
            return []

    def _entries(self, manifest: ManifestFile, strict: bool) -> list[str]:
        """The paths of the manifest's data and delete files (their sizes noted in ``sizes``)."""
        path = manifest.manifest_path
        data = self._bytes(path, "manifest", strict)
        if data is None:
            return []
        memory = MemoryFileIO(MemoryInputFile(path, data))
        try:
            entries = manifest.fetch_manifest_entry(memory, discard_deleted=False)
            found = [(e.data_file.file_path, e.data_file.file_size_in_bytes) for e in entries]
        except Exception as exc:  # not Avro, not a manifest
            if strict:
                raise Incomplete(f"Cannot read manifest {redact(path)}: unreadable") from exc
            return []
        for file_path, size in found:
            self.sizes[same(file_path)] = size
        return [file_path for file_path, _size in found]

    def _bytes(self, path: str, what: str, strict: bool) -> bytes | None:
        if not self._owns(path):
            if strict:
                raise Incomplete(f"The {what} {redact(path)} lies outside the table's locations: not read")
            return None
        try:
            data = self._read(path, what)
        except CatalogError as exc:
            if strict:
                raise Incomplete(f"Cannot read {what} {redact(path)}: {read_failure(exc)}") from exc
            return None
        self.files_read += 1
        return data

    def _walk(self, snapshots: Iterable[Snapshot], strict: bool, found: set[str]) -> set[str]:
        seen_manifests: set[str] = set()
        for snapshot in snapshots:
            if snapshot.manifest_list:
                found.add(same(snapshot.manifest_list))
            for manifest in self._manifest_list(snapshot, strict):
                key = same(manifest.manifest_path)
                if key in seen_manifests:
                    continue
                seen_manifests.add(key)
                found.add(key)
                self.sizes[key] = manifest.manifest_length
                found.update(same(path) for path in self._entries(manifest, strict))
                self._count(found)
        return found

    def kept(self, snapshot_ids: Iterable[int] | None = None) -> set[str]:
        """Every file the given snapshots (all, by default) and the table's statistics reach. Raises
        Incomplete, TooManyFiles."""
        metadata = self._metadata
        wanted = None if snapshot_ids is None else set(snapshot_ids)
        snapshots = [s for s in metadata.snapshots if wanted is None or s.snapshot_id in wanted]
        found = {same(s.statistics_path) for s in metadata.statistics}
        found |= {same(s.statistics_path) for s in metadata.partition_statistics}
        return self._walk(snapshots, True, found)

    def candidates(self, snapshots: Iterable[Snapshot]) -> set[str]:
        """The files ``snapshots`` reach that could be read (within the roots). Raises TooManyFiles."""
        return self._walk(snapshots, False, set())
