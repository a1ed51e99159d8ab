"""What every maintenance job shares: the job names, a job on one table (``Job``: its catalog, limits, policy
and checkpoint), its result helpers and the checks that make a job leave a table alone. Job modules (``jobs``,
``manifests``, ``compaction``) import this one; ``runners`` registers them by name."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from pyiceberg.io import FileIO, load_file_io
from pyiceberg.table.metadata import TableMetadata

from irc_proxy.handling.catalog import COMMIT_TABLE, Catalog
from irc_proxy.handling.loaded import OpenedTable
from irc_proxy.handling.maintenance.policy import Policy
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.security.context import SYSTEM_PRINCIPAL, RequestContext
from irc_proxy.handling.storage.locations import is_under, table_paths
from irc_proxy.handling.tables.metadata import GC_ENABLED
from irc_proxy.threads import ThreadRunner

EXPIRE_SNAPSHOTS = "expire-snapshots"
REMOVE_ORPHAN_FILES = "remove-orphan-files"
REWRITE_MANIFESTS = "rewrite-manifests"
REWRITE_DATA_FILES = "rewrite-data-files"
JOBS = (EXPIRE_SNAPSHOTS, REMOVE_ORPHAN_FILES, REWRITE_MANIFESTS, REWRITE_DATA_FILES)
GC_DISABLED = "gc.enabled is false: the table's files may be shared with another table"
OTHER_CATALOGS = "the table's storage overlaps another catalog's allowed locations: its files may be that catalog's"
COMMIT_ATTEMPTS = 3
"""Plans (or commits) of one job: a table that changed under each of them is skipped (the next run tries again)."""


@dataclass(frozen=True)
class Limits:
    max_files: int
    """Files one job lists, reaches (reads from manifests) and deletes, each."""
    orphan_min_age: timedelta
    max_rewrite_bytes: int = 10 * 1024**3
    """Input bytes one ``rewrite-data-files`` job rewrites (groups beyond wait for the next run)."""
    rewrite_buffer_bytes: int = 64 * 1024**2
    """Arrow bytes ``rewrite-data-files`` buffers before writing a row group: its memory bound, with one batch."""
    clock: Callable[[], float] = time.time
    """Now, in epoch seconds: what snapshot and file ages are measured against (a test judges ages with it
    instead of waiting days; an object store's modification times cannot be set)."""


@dataclass(frozen=True)
class Job:
    """One job on one table."""

    catalog: Catalog
    ident: TableIdent
    dry_run: bool
    limits: Limits
    threads: ThreadRunner
    foreign: tuple[str, ...] = ()
    """Storage the catalog does not hold alone: the other catalogs' allowed locations (the occupancy index that
    keeps tables apart is per catalog). A table whose roots overlap one is left alone."""
    protected: tuple[str, ...] = ()
    """The proxy's own files (its data directory, SQLite databases): a table whose roots contain one is left alone."""
    policy: Policy | None = None
    """The table's maintenance policy (``policy.resolve``); None: the table's properties and ``limits`` alone."""
    checkpoint: Checkpoint | None = None
    """Where a job keeps what a run killed midway must finish (``runs`` keeps it in the run's row)."""

    @property
    def orphan_min_age(self) -> timedelta:
        own = None if self.policy is None else self.policy.settings.orphan_min_age
        return self.limits.orphan_min_age if own is None else own

    @property
    def target_file_size(self) -> int | None:
        """``rewrite-data-files``' target file size by the policy (the table's ``write.target-file-size-bytes``
        still wins); None: Iceberg's default."""
        return None if self.policy is None else self.policy.settings.target_file_size_bytes

    @property
    def manifest_target_size(self) -> int | None:
        """``rewrite-manifests``' target manifest size by the policy (the table's
        ``commit.manifest.target-size-bytes`` still wins); None: Iceberg's default."""
        return None if self.policy is None else self.policy.settings.manifest_target_size_bytes

    @property
    def context(self) -> RequestContext:
        """The proxy itself as the caller (a forwarded commit or load goes upstream with its own credentials)."""
        return RequestContext(request_id=f"maintenance-{uuid.uuid4().hex}", principal=SYSTEM_PRINCIPAL)

    async def open(self) -> OpenedTable:
        """The table as the catalog answers it now. Raises NoSuchTable and the remote catalog's errors."""
        return await self.catalog.open_table(self.context, self.ident)


class Checkpoint(Protocol):
    """A job's notes that outlive its process: saved before a step that cannot be undone, read by the next run."""

    async def load(self) -> dict[str, Any]: ...

    async def save(self, notes: dict[str, Any]) -> None: ...


def skipped(reason: str) -> dict[str, Any]:
    return {"status": "skipped", "reason": reason}


def gc_disabled(metadata: TableMetadata) -> bool:
    return metadata.properties.get(GC_ENABLED, "true").strip().lower() == "false"


def not_alone(job: Job, metadata: TableMetadata) -> str | None:
    """Why the table's roots may hold files that are not its own to delete (None: they hold none).

    ``gc.enabled=false`` says so. A table of one catalog may be created over another catalog's tables when
    their allowed locations overlap (each catalog checks occupancy among its own objects only), or over the
    proxy's data directory when an allowed location contains it: orphan removal would delete everything
    there the table does not reach, and an expiry the other catalog's files the table's snapshots name."""
    if gc_disabled(metadata):
        return GC_DISABLED
    roots = table_paths(metadata.location, metadata.properties)
    if any(is_under(root, other) or is_under(other, root) for root in roots for other in job.foreign):
        return OTHER_CATALOGS
    if any(is_under(own, root) for root in roots for own in job.protected):
        return "the table's storage contains the proxy's data directory or databases"
    return None


async def refusal(job: Job) -> str | None:
    """Why the proxy cannot run a job on this catalog's tables (None: it can)."""
    await job.catalog.discover(job.context)
    if not job.catalog.serves(COMMIT_TABLE):
        return "the catalog does not serve table commits"
    return None


def no_storage_access(opened: OpenedTable) -> str | None:
    """Why the proxy may not list or delete the table's files (None: it may)."""
    if opened.storage is None:
        return (
            "the proxy has no storage access to the table's files: its remote catalog vended no storage "
            "credentials for it"
        )
    return None


def storage_io(opened: OpenedTable) -> FileIO:
    """A FileIO with the proxy's storage access to the opened table (``OpenedTable.storage``: the catalog's own
    settings served here, e.g. S3 for Glue; the credentials a remote catalog vended when forwarded), through which a
    job writes its new files. Check ``no_storage_access`` first."""
    assert opened.storage is not None
    return load_file_io(dict(opened.storage), opened.load.metadata.location)
