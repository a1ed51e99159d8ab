"""What a catalog answers when the proxy itself reads one of its tables or views (the console, the scan
planner): the same records whether the catalog serves the table here or forwards ``loadTable`` to its
remote catalog (``Catalog.load_table``, ``load_view``, ``open_table``), so no caller asks which.

Table metadata is always the v3-aware model (``handling.tables.format_v3.ServedTableMetadata``): an
upstream's LoadTableResult is parsed the way the proxy reads its own metadata files, keeping the v3
fields pyiceberg's own parser drops (encryption keys, a snapshot's key id).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.view.metadata import ViewMetadata

Read = Callable[[str, str], bytes]
"""Reads one whole small file (its location, what it is for messages), bounded. Blocking: run it in a worker."""
Owns = Callable[[str], bool]
"""Whether a path is one of the table's files (checked before any read)."""


class FilesOf(Protocol):
    """The bounded reader of the files a table's ``metadata`` names, and which paths belong to it."""

    def __call__(self, metadata: TableMetadata, max_bytes: int | None = None) -> tuple[Read, Owns]: ...


@dataclass(frozen=True)
class TableLoad:
    """A table as ``loadTable`` answers it."""

    location: str
    """The current metadata file ("" when a remote catalog named none)."""
    metadata: TableMetadata
    config: dict[str, str] = field(default_factory=dict)
    """The table's config, as a remote catalog answered it (served here: empty)."""
    storage_credentials: list[dict[str, Any]] | None = None
    """Storage credentials a remote catalog vended for the table; None when the proxy vends its own."""


@dataclass(frozen=True)
class ViewLoad:
    """A view as ``loadView`` answers it."""

    location: str
    metadata: ViewMetadata
    stored_here: bool
    """Kept in the proxy's view store (so its versions' authors are known)."""


@dataclass(frozen=True)
class OpenedTable:
    """A table opened for reading the files its metadata names (scan planning): what ``loadTable`` answered,
    how to read an earlier metadata file of the same table, and how to read its manifests, confined to it."""

    load: TableLoad
    cache_key: str
    """Names this table's files in a cache of decoded files shared by the catalogs of the process."""
    metadata_at: Callable[[str], Awaitable[TableMetadata]]
    """An earlier metadata file of the table. Raises NotFound when it is gone or not one of the table's."""
    files: FilesOf
    """The bounded reader of the files ``metadata`` names (each read at most ``max_bytes``, or the catalog's
    ``server.max_metadata_bytes`` when None), and which paths belong to it."""
    storage: Mapping[str, str] | None = None
    """How the proxy reaches the table's storage to list and delete its files (table maintenance), as FileIO
    properties (endpoint, region, credentials; empty: the default chain); None when it has no such access (a
    remote catalog that vended no storage credentials for the table)."""
