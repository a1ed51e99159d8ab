"""Manifest lists and manifests for planning: read inside the table's allowed locations, decoded once.

Manifest files never change once written, so :class:`ManifestCache` keeps them decoded (the Avro
decoding is what planning costs) by path, bounded by estimated bytes, shared by all catalogs of a
process. :class:`ManifestSource` is one table's view of it: it checks every path before reading,
reads with the format-v3 schemas (pyiceberg 0.12 reads with v2's and drops v3's fields) and applies
the spec's inheritance rules (sequence numbers, spec id, first row ids).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyiceberg.avro.decoder import new_decoder
from pyiceberg.avro.file import META_SCHEMA, AvroFile, AvroFileHeader
from pyiceberg.avro.reader import Reader as AvroReader
from pyiceberg.avro.resolver import construct_reader, resolve_reader
from pyiceberg.manifest import (
    MANIFEST_ENTRY_SCHEMAS,
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
    _inherit_from_manifest,
)
from pyiceberg.schema import Schema

from irc_proxy import metrics
from irc_proxy.errors import CatalogError, Forbidden, Unprocessable
from irc_proxy.memory_files import MemoryInputFile
from irc_proxy.planning.content_files import v3_field

DECODED_BYTES_PER_AVRO_BYTE = 13
"""Decoded manifest entries take about this many times their Avro size in memory (tracemalloc, pyiceberg 0.12:
a manifest of 500 files with stats on 10 columns is 146 KB of Avro and 1.86 MB decoded)."""
_LIST_POSITIONS = {field.name: i for i, field in enumerate(MANIFEST_LIST_FILE_SCHEMAS[3].fields)}
_FIRST_ROW_ID_POSITION = {
    field.name: i
    for i, field in enumerate(MANIFEST_ENTRY_SCHEMAS[3].find_type(2).fields)  # type: ignore[attr-defined]
}["first_row_id"]


_READERS_MAX = 256
_READERS: OrderedDict[tuple[str, str], tuple[Schema, AvroReader]] = OrderedDict()
_READERS_LOCK = threading.Lock()
_HEADER_READER = construct_reader(META_SCHEMA, {-1: AvroFileHeader})
"""The reader of an Avro file's header, whose schema is fixed: pyiceberg's ``AvroFile._read_header`` resolved it
anew for every file, ~7% of planning a table whose manifests were not decoded yet (py-spy, 500 manifests)."""


class _ResolvedAvroFile(AvroFile[Any]):
    """pyiceberg's AvroFile, resolving the reader once per (file schema, read schema) instead of once per file.

    Every manifest of a table carries the same Avro schema in its header; converting it and resolving the
    reader is about a fifth of decoding a manifest (pydantic models built per file).
    """

    def __init__(self, input_file: MemoryInputFile, read_schema: Schema, kind: str, **kwargs: Any) -> None:
        super().__init__(input_file, read_schema, **kwargs)
        self._kind = kind

    __slots__ = ("_kind",)

    def __enter__(self) -> _ResolvedAvroFile:
        with self.input_file.open() as f:
            self.decoder = new_decoder(f.read())
        self.header = _HEADER_READER.read(self.decoder)
        key = (self._kind, self.header.meta.get("avro.schema", ""))
        with _READERS_LOCK:
            found = _READERS.get(key)
            if found is not None:
                _READERS.move_to_end(key)
        if found is None:
            schema = self.header.get_schema()
            assert self.read_schema is not None
            found = (schema, resolve_reader(schema, self.read_schema, self.read_types, self.read_enums))
            with _READERS_LOCK:
                _READERS[key] = found
                while len(_READERS) > _READERS_MAX:
                    _READERS.popitem(last=False)
        self.schema, self.reader = found
        return self


@dataclass(frozen=True)
class _Cached:
    value: Any
    weight: int


class ManifestCache:
    """Least-recently-used decoded manifest (list) files by key, bounded by estimated bytes (thread-safe)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, ...], _Cached] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        """Estimated bytes held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple[str, ...]) -> Any | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        (metrics.MANIFEST_CACHE_HITS if entry is not None else metrics.MANIFEST_CACHE_MISSES).inc()
        return None if entry is None else entry.value

    def put(self, key: tuple[str, ...], value: Any, weight: int) -> None:
        if weight > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.weight
            self._entries[key] = _Cached(value, weight)
            self._bytes += weight
            while self._bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.weight
        metrics.MANIFEST_CACHE_BYTES.set(self._bytes)


Reader = Callable[[str, str], bytes]
"""Reads a whole file (``location``, what it is for messages), bounded; raises CatalogError."""


class ManifestSource:
    """One table's manifests: ``allows(path)`` is checked before any read; ``scope`` keys the cache."""

    def __init__(self, cache: ManifestCache | None, scope: str, read: Reader, allows: Callable[[str], bool]) -> None:
        self._cache, self._scope, self._read, self._allows = cache, scope, read, allows

    def _cached(self, path: str, what: str, decode: Callable[[bytes], list[Any]]) -> list[Any]:
        if not self._allows(path):  # before the cache too: another table's cached manifests are not this one's
            raise Forbidden(f"The table's {what} {path} lies outside the catalog's allowed locations")
        key = (self._scope, what, path)
        if self._cache is not None and (found := self._cache.get(key)) is not None:
            return list(found)
        data = self._read(path, what)
        try:
            value = decode(data)
        except CatalogError:
            raise
        except Exception:  # not Avro, or not a manifest (list): no details, they would echo the file
            raise Unprocessable(f"The table's {what} {path} is not a readable Iceberg {what}") from None
        if self._cache is not None:
            self._cache.put(key, value, len(data) * DECODED_BYTES_PER_AVRO_BYTE)
        return list(value)

    def manifest_list(self, path: str) -> list[ManifestFile]:
        """The manifests a snapshot's manifest list names."""

        def decode(data: bytes) -> list[Any]:
            with _ResolvedAvroFile(
                MemoryInputFile(path, data),
                MANIFEST_LIST_FILE_SCHEMAS[3],
                "manifest list",
                read_types={-1: ManifestFile, 508: PartitionFieldSummary},
                read_enums={517: ManifestContent},
            ) as reader:
                return list(reader)

        return self._cached(path, "manifest list", decode)

    def entries(self, manifest: ManifestFile) -> list[ManifestEntry]:
        """The live entries of ``manifest`` (added and existing), with inherited fields filled in."""

        def decode(data: bytes) -> list[Any]:
            with _ResolvedAvroFile(
                MemoryInputFile(manifest.manifest_path, data),
                MANIFEST_ENTRY_SCHEMAS[3],
                "manifest",
                read_types={-1: ManifestEntry, 2: DataFile},
                read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
            ) as reader:
                entries = [
                    _inherit_from_manifest(e, manifest) for e in reader if e.status != ManifestEntryStatus.DELETED
                ]
            _inherit_first_row_ids(manifest, entries)
            return entries

        return self._cached(manifest.manifest_path, "manifest", decode)


def manifest_first_row_id(manifest: ManifestFile) -> int | None:
    data = manifest._data
    position = _LIST_POSITIONS["first_row_id"]
    return data[position] if position < len(data) else None


def _inherit_first_row_ids(manifest: ManifestFile, entries: list[ManifestEntry]) -> None:
    """Data files without a first row id get the manifest's, advanced by the rows before them (v3)."""
    next_row_id = manifest_first_row_id(manifest)
    if next_row_id is None or manifest.content != ManifestContent.DATA:
        return
    for entry in entries:
        data_file = entry.data_file
        if data_file.content == DataFileContent.DATA and v3_field(data_file, "first_row_id") is None:
            data = data_file._data
            if len(data) > _FIRST_ROW_ID_POSITION:
                data[_FIRST_ROW_ID_POSITION] = next_row_id
            next_row_id += data_file.record_count
