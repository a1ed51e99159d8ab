"""Where one catalog's tables and views may keep files: confinement to the allowed locations, no overlap
between live objects, and free default locations. Tables, views and namespaces ask this one place."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from urllib.parse import unquote

from pyiceberg.table.metadata import TableMetadata

from irc_proxy.backends.base import Backend
from irc_proxy.errors import BadRequest
from irc_proxy.handling.storage.locations import (
    PATH_PROPERTIES,
    Location,
    StorageLocations,
    normalize,
    parse_location,
    shown,
    table_paths,
)
from irc_proxy.handling.storage.occupancy import LocationOverlap, Occupancy
from irc_proxy.stores.locations import Owner

FilesExist = Callable[[str], Awaitable[bool]]
NamespaceAt = Callable[[Sequence[str]], Awaitable[bool]]
"""Whether a namespace with these levels exists."""
_KEPT = re.compile(r"[A-Za-z0-9_.=-]")


def path_part(name: str) -> str:
    """One namespace level or object name as a directory name: readable and injective.

    Characters other than ``A-Z a-z 0-9 _ . = -`` become ``~`` and two hex digits per UTF-8 byte (``~`` too),
    and ``.``/``..`` are spelt ``~2e``/``~2e~2e``: distinct names never share a default directory
    (``a/b`` → ``a~2fb``, ``a\\b`` → ``a~5cb``).
    """
    if name in (".", ".."):
        return name.replace(".", "~2e")
    return "".join(ch if _KEPT.fullmatch(ch) else "".join(f"~{b:02x}" for b in ch.encode()) for ch in name)


def path_name(part: str) -> str | None:
    """The name ``path_part`` spells as ``part``, or None when ``part`` is no such spelling."""
    raw = bytearray()
    index = 0
    while index < len(part):
        if part[index] == "~":
            try:
                raw.append(int(part[index + 1 : index + 3], 16))
            except ValueError:
                return None
            index += 3
        elif _KEPT.fullmatch(part[index]):
            raw += part[index].encode()
            index += 1
        else:
            return None
    try:
        name = raw.decode()
    except UnicodeDecodeError:
        return None
    return name if name and path_part(name) == part else None


def table_owner(namespace: str, name: str) -> Owner:
    return Owner("table", namespace, name)


def view_owner(namespace: str, name: str) -> Owner:
    return Owner("view", namespace, name)


class CatalogStorage:
    """One catalog's storage rules. Without ``locations`` (a REST-federated catalog's tables) nothing is confined."""

    def __init__(
        self,
        locations: StorageLocations | None,
        occupancy: Occupancy,
        files_exist: FilesExist | None = None,
        warehouse: str | None = None,
        namespace_exists: NamespaceAt | None = None,
    ) -> None:
        """``warehouse`` and ``namespace_exists`` let a location be recognised as a namespace's default directory."""
        self.locations = locations
        self.occupancy = occupancy
        self._files_exist = files_exist
        self._warehouse = parse_location(warehouse) if warehouse and locations is not None else None
        self._namespace_exists = namespace_exists

    async def claim(
        self, owner: Owner, roots: Sequence[str], what: str = "Location", adopting: Sequence[Owner] = ()
    ) -> None:
        """Take ``roots`` for ``owner``: refused over an allowed location itself, a namespace's directory,
        or another live object's storage (``adopting``: trash claims a restore takes over)."""
        await self._check_structure(roots, what)
        await self.occupancy.claim(owner, roots, what=what, adopting=adopting)

    async def check_free(self, roots: Sequence[str], exclude: Owner | None = None, what: str = "Location") -> None:
        """As ``claim`` would check, without taking anything (stage-create, a commit before its swap)."""
        await self._check_structure(roots, what)
        await self.occupancy.check_free(roots, exclude, what)

    async def _check_structure(self, roots: Sequence[str], what: str) -> None:
        """One table may not take a whole allowed location, or a namespace's default directory: it would
        hold every table created there later (a writer could block everybody else's CREATE TABLE)."""
        if self.locations is None:
            return
        for root in roots:
            parsed = parse_location(root)
            if any(parsed.contains(allowed) for allowed in self.locations.allowed):
                raise LocationOverlap(
                    f"{what} {shown(root)} is or contains an allowed location of catalog {self.locations.catalog}; "
                    "a table or view must lie beneath it"
                )
            if await self._is_namespace_directory(parsed):
                raise LocationOverlap(f"{what} {shown(root)} is the default directory of a namespace")

    async def _is_namespace_directory(self, location: Location) -> bool:
        warehouse = self._warehouse
        if warehouse is None or self._namespace_exists is None or not warehouse.contains(location):
            return False
        levels = [path_name(part) for part in location.path[len(warehouse.path) :].strip("/").split("/")]
        if not levels or any(level is None for level in levels):
            return False
        return await self._namespace_exists([level for level in levels if level is not None])

    def confine(self, location: str, what: str = "Location") -> str:
        """``location`` (without a trailing ``/``) once its normal form is inside the allowed locations
        (400/403 otherwise), before any I/O. The client's spelling is kept (``file:/x`` stays
        ``file:/x``, as Iceberg Java expects); only equivalent spellings of a checked path get through."""
        if self.locations is not None:
            self.locations.check(location, what)
        return location.rstrip("/")

    def confine_paths(self, location: str, properties: Mapping[str, str]) -> list[str]:
        """Check a table's or view's location and ``write.*.path`` properties; its storage roots."""
        self.confine(location, "Location")
        for key in PATH_PROPERTIES:
            if value := properties.get(key):
                self.confine(value, f"Property {key}:")
        return table_paths(normalize(location), properties) if self.locations is not None else [location]

    @staticmethod
    def held_roots(location: str, properties: Mapping[str, str]) -> list[str]:
        """A live object's storage roots as recorded, without refusing anything (it may predate a narrower
        ``allowed_locations``); roots that are no valid location are left out."""
        roots = []
        for root in table_paths(location, properties):
            try:
                roots.append(normalize(root))
            except BadRequest:
                continue
        return roots

    def confine_new_files(self, base: TableMetadata | None, new: TableMetadata) -> None:
        """Statistics, partition statistics and manifest lists a commit adds must be inside the allowed locations."""
        if self.locations is None:
            return
        for path, what in _new_files(base, new):
            self.confine(path, what)

    async def free_default(self, location: str) -> str:
        """``location`` when no live object holds it and no files are left there; else a unique sibling."""
        if await self.occupancy.taken(location) or (
            self._files_exist is not None and await self._files_exist(location)
        ):
            return f"{location}-{uuid.uuid4().hex[:8]}"
        return location


def _new_files(base: TableMetadata | None, new: TableMetadata) -> Iterable[tuple[str, str]]:
    known_stats = {s.statistics_path for s in base.statistics} if base else set()
    known_partition = {s.statistics_path for s in base.partition_statistics} if base else set()
    known_lists = {s.manifest_list for s in base.snapshots} if base else set()
    for stats in new.statistics:
        if stats.statistics_path not in known_stats:
            yield stats.statistics_path, "Statistics file"
    for partition in new.partition_statistics:
        if partition.statistics_path not in known_partition:
            yield partition.statistics_path, "Partition statistics file"
    for snapshot in new.snapshots:
        if snapshot.manifest_list not in known_lists:
            yield snapshot.manifest_list, "Manifest list"


def files_exist(backend: Backend, location: str) -> bool:
    """Whether anything is stored at ``location`` (a file, a directory, or objects under the prefix).

    Blocking (call it in a worker thread). An error counts as "nothing there": this only picks names.
    """
    parsed = parse_location(location)
    if parsed.scheme == "file":
        return os.path.lexists(unquote(parsed.path))
    # deferred: pyarrow (~0.3 s) only for an object store, which pyiceberg reads with it anyway
    from pyarrow.fs import FileType
    from pyiceberg.io.pyarrow import PyArrowFileIO

    try:
        io = backend.file_io(location, {})
        filesystem = getattr(io, "fs_by_scheme", None)
        if filesystem is None:
            return False
        scheme, netloc, path = PyArrowFileIO.parse_location(location)
        return bool(filesystem(scheme, netloc).get_file_info(path).type != FileType.NotFound)
    except Exception:
        return False
