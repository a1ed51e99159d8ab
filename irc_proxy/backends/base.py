"""The backend seam: a small async protocol over flat namespace names and table pointers.

A backend stores, per catalog, a set of flat namespace names with properties and, per table, a
pointer to its current metadata file. Everything Iceberg-specific (requirements, updates,
metadata files, nested namespaces, views) is done above it in ``irc_proxy.handling``, so every
backend gets the same semantics. Backends raise only ``irc_proxy.errors`` exceptions.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, cast

from pyiceberg.io import FileIO
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.view.metadata import ViewMetadata

Properties = dict[str, str]


class Capability(enum.Enum):
    """Optional abilities a backend may have; the catalog asks for these, never for a backend's type."""

    MULTI_TABLE_COMMIT = "multi-table-commit"
    """``swap_table_pointers`` applies several swaps atomically."""
    ENGINE_VIEWS = "engine-views"
    """The backend holds views written by other engines and serves them read-only (``EngineViewSource``)."""
    TABLE_COMMITS = "table-commits"
    """The backend moves table pointers itself: creates, commits, drops and renames (``TableCommits``)."""
    FORWARDING = "forwarding"
    """The catalog stands for a remote catalog: its operations are forwarded there (``Forwarding``)."""


@dataclass(frozen=True)
class Listing:
    """One batch of names and a backend-opaque token that resumes right after them (None: no more)."""

    names: list[str]
    next_token: str | None = None


@dataclass(frozen=True)
class PointerSwap:
    """Move one table's pointer from ``expected`` to ``new``; ``expected=None`` creates the table.

    ``metadata`` is the metadata at ``new``, for backends that mirror the schema (Glue columns).
    """

    namespace: str
    name: str
    expected: str | None
    new: str
    metadata: TableMetadata | None = None
    entry: Mapping[str, Any] | None = None
    """On a create: the attributes a dropped table's entry had (``DroppedTable.entry``), given back to it."""


@dataclass(frozen=True)
class DroppedTable:
    """What a dropped table's pointer was: its last metadata location and, for backends that keep more
    beside the pointer (Glue: parameters, description, owner), those attributes as JSON-able values."""

    metadata_location: str
    entry: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class EngineView:
    """A view another engine keeps in the backend, rendered as Iceberg view metadata (read-only here).

    ``metadata`` has one version with the engine's SQL and dialect; its ``default-namespace`` is the
    flat backend namespace as a single level (the catalog maps it to nested levels). No metadata
    file exists: LoadViewResult requires a ``metadata-location``, so ``metadata_location`` is a
    synthetic URI that names the owner and its version, e.g. ``glue://<catalog-id>/<db>/<table>?version=<n>``.
    ``origin`` names where the view lives, for messages (e.g. ``Glue``).
    """

    metadata_location: str
    metadata: ViewMetadata
    origin: str


class Backend(Protocol):
    """What a catalog backend must do. All names are flat (already mapped by the caller)."""

    warehouse: str
    """Root location under which new tables get their default location."""
    capabilities: frozenset[Capability]

    async def close(self) -> None:
        """Release connections."""

    async def ping(self) -> None:
        """A cheap round trip to the backend's store (readiness). Raises ServiceUnavailable when it is unreachable."""

    def file_io(self, location: str, properties: Mapping[str, str]) -> FileIO:
        """A FileIO that can read and write ``location`` (metadata files, purge)."""

    # Namespaces --------------------------------------------------------------------------
    async def list_namespaces(self, prefix: str, token: str | None, limit: int) -> Listing:
        """At most ``limit`` flat names starting with ``prefix``, resuming at ``token``."""

    async def namespace_exists(self, name: str) -> bool:
        """Whether the namespace exists."""

    async def create_namespaces(self, namespaces: Sequence[tuple[str, Properties]]) -> None:
        """Create all of them or none. Raises AlreadyExists (naming the first that exists)."""

    async def load_namespace(self, name: str) -> Properties:
        """Raises NoSuchNamespace."""

    async def update_namespace(self, name: str, removals: Sequence[str], updates: Mapping[str, str]) -> Properties:
        """Apply atomically and return the properties as they were before. Raises NoSuchNamespace."""

    async def drop_namespace(self, name: str) -> None:
        """Raises NoSuchNamespace, or NamespaceNotEmpty while it holds tables."""

    # Tables ------------------------------------------------------------------------------
    async def list_tables(self, namespace: str, token: str | None, limit: int) -> Listing:
        """At most ``limit`` Iceberg table names in ``namespace``, resuming at ``token``. Raises NoSuchNamespace."""

    async def load_table_pointer(self, namespace: str, name: str) -> str | None:
        """The table's current metadata location, or None if there is no such table.

        Raises NotAnIcebergTable when a table of another format holds the name.
        """


class TableCommits(Protocol):
    """The optional methods of a backend that advertises ``Capability.TABLE_COMMITS``."""

    async def swap_table_pointers(self, swaps: Sequence[PointerSwap]) -> bool:
        """Compare-and-swap every pointer, all or nothing; False if any expectation failed.

        A backend without ``MULTI_TABLE_COMMIT`` accepts exactly one swap.
        """

    async def drop_table_pointer(self, namespace: str, name: str) -> DroppedTable:
        """Forget the table and return what its pointer was (never older than the last commit). Raises NoSuchTable."""

    async def rename_table(self, namespace: str, name: str, to_namespace: str, to_name: str) -> None:
        """Raises NoSuchTable or AlreadyExists."""

    def moved_elsewhere(self, namespace: str, name: str) -> AbstractContextManager[None]:
        """While inside, another process of this server (a maintenance child) may move the table's pointer: this
        process serves it from no cache meanwhile and forgets it after, so that what the other process committed
        is read right away (read-your-writes) even when no change signal reaches this process (Glue)."""


class EngineViewSource(Protocol):
    """The optional methods of a backend that advertises ``Capability.ENGINE_VIEWS``."""

    async def list_engine_views(self, namespace: str, token: str | None, limit: int) -> Listing:
        """At most ``limit`` engine view names in ``namespace``, resuming at ``token``. Raises NoSuchNamespace."""

    async def load_engine_view(self, namespace: str, name: str) -> EngineView | None:
        """The engine view ``name``, or None if there is no such view."""


def table_commits(backend: Backend) -> TableCommits | None:
    """The backend's pointer moves when it advertises ``TABLE_COMMITS``, else None."""
    if Capability.TABLE_COMMITS in backend.capabilities:
        return cast(TableCommits, backend)
    return None


def engine_views(backend: Backend) -> EngineViewSource | None:
    """The backend's engine views when it advertises ``ENGINE_VIEWS``, else None."""
    if Capability.ENGINE_VIEWS in backend.capabilities:
        return cast(EngineViewSource, backend)
    return None


@dataclass(frozen=True)
class UpstreamConfig:
    """What a remote catalog's ``/v1/config`` said."""

    prefix: str
    defaults: dict[str, str]
    overrides: dict[str, str]
    endpoints: frozenset[str]
    idempotency_key_lifetime: str | None = None

    @property
    def serves_views(self) -> bool:
        return any("/views" in endpoint or "/register-view" in endpoint for endpoint in self.endpoints)


class UpstreamAnswer(Protocol):
    """What a remote catalog answered, whatever its status."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def content(self) -> bytes: ...
    @property
    def is_success(self) -> bool: ...


class Upstream(Protocol):
    """A remote REST catalog as the handling layer forwards to it (``Forwarding.upstream``)."""

    @property
    def mapped_namespaces(self) -> bool:
        """Nested namespace levels are joined into the upstream's one level (the ``:`` mapping)."""

    @property
    def discovered(self) -> UpstreamConfig:
        """What ``config()`` learnt. Raises ServiceUnavailable before it succeeded."""

    async def config(self) -> UpstreamConfig:
        """Read the upstream's ``/v1/config`` (once). Raises ServiceUnavailable."""

    def path(self, tail: str) -> str:
        """``/v1/<the upstream's prefix>/<tail>``."""

    def calling(self, authorization: str | None, request_id: str | None) -> AbstractContextManager[None]:
        """Upstream calls made inside carry ``request_id`` and may use the caller's ``authorization``."""

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: bytes = b"",
        headers: Sequence[tuple[str, str]] = (),
        content: bytes = b"",
        ambiguous: bool = False,
    ) -> UpstreamAnswer:
        """Send one request and return the answer, whatever its status.

        Raises:
            ServiceUnavailable: the upstream is unreachable, or refused the proxy's own credentials.
            CommitStateUnknown: an ``ambiguous`` request (a commit) may have reached it and got no answer.
        """


class Forwarding(Protocol):
    """The optional part of a backend that advertises ``Capability.FORWARDING``."""

    @property
    def upstream(self) -> Upstream:
        """The remote catalog: what it serves (its ``/v1/config``) and the pooled client that reaches it."""

    def use_separator(self, separator: str) -> None:
        """The catalog's namespace separator, for flat names <-> upstream levels."""


def forwarding(backend: Backend) -> Forwarding | None:
    """The backend's remote catalog when it advertises ``FORWARDING``, else None."""
    if Capability.FORWARDING in backend.capabilities:
        return cast(Forwarding, backend)
    return None
