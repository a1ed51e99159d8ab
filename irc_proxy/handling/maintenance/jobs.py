"""The maintenance jobs the proxy runs itself (the local executor): ``expire-snapshots`` and
``remove-orphan-files``. ``rewrite-manifests`` and ``rewrite-data-files`` are answered ``skipped`` for now.

Safety rules every job keeps (``docs/maintenance.md``):

* nothing is deleted when the table says ``gc.enabled=false`` (the job is ``skipped``, as Java refuses);
* a file is deleted only when it lies under the table's own roots and the catalog's allowed locations, and,
  for local paths, really does (``TableFiles.owns``: symbolic links resolved, checked again just before the
  delete). A manifest that names ``/etc/passwd`` or another table's files makes nothing outside go;
* an expiry commits through the normal commit path (requirements ``assert-table-uuid`` and
  ``assert-ref-snapshot-id``, confinement, compare-and-swap) *on the metadata file it planned from*
  (``TableChange.base_location``): any concurrent commit makes it plan again (``COMMIT_ATTEMPTS``), then skip,
  so it never undoes a change it did not see;
* what is kept is computed completely or nothing is deleted (``reach.Incomplete``); every run is bounded by
  ``max_files_per_run`` (files listed, reached and deleted);
* orphan removal refuses when the table's storage overlaps another object's (a table in the trash keeps its
  storage claim; ``allow_overlapping_locations`` lets tables share directories) and touches only files older
  than ``orphan_min_age`` (a write in flight has not committed its files yet). It lists local storage only in
  this version (an object store's table is ``skipped``).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol
from urllib.parse import quote

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import (
    AssertRefSnapshotId,
    AssertTableUUID,
    RemovePartitionStatisticsUpdate,
    RemoveSnapshotRefUpdate,
    RemoveSnapshotsUpdate,
    TableRequirement,
    TableUpdate,
)

from irc_proxy.backends.base import Capability
from irc_proxy.errors import CommitFailed
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.maintenance.pauses import AFTER_EXPIRY_COMMIT, pause
from irc_proxy.handling.maintenance.policy import Policy
from irc_proxy.handling.maintenance.reach import Incomplete, Reach, TooManyFiles, same
from irc_proxy.handling.maintenance.retention import ExpiryPlan, plan_expiry
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.storage.locations import is_under, table_paths
from irc_proxy.handling.storage.occupancy import LocationOverlap
from irc_proxy.handling.storage.storage import table_owner
from irc_proxy.handling.storage.storage_reads import TableFiles, local_path, within
from irc_proxy.handling.tables.metadata import GC_ENABLED
from irc_proxy.handling.tables.tables import LoadedTable, TableChange
from irc_proxy.threads import ThreadRunner

EXPIRE_SNAPSHOTS = "expire-snapshots"
REMOVE_ORPHAN_FILES = "remove-orphan-files"
REWRITE_MANIFESTS = "rewrite-manifests"
REWRITE_DATA_FILES = "rewrite-data-files"
JOBS = (EXPIRE_SNAPSHOTS, REMOVE_ORPHAN_FILES, REWRITE_MANIFESTS, REWRITE_DATA_FILES)
GC_DISABLED = "gc.enabled is false: the table's files may be shared with another table"
OTHER_CATALOGS = "the table's storage overlaps another catalog's allowed locations: its files may be that catalog's"
COMMIT_ATTEMPTS = 3
"""Plans of one expiry: a table that changed under each of them is skipped (the next run tries again)."""


@dataclass(frozen=True)
class Limits:
    max_files: int
    """Files one job lists, reaches (reads from manifests) and deletes, each."""
    orphan_min_age: timedelta


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


class Checkpoint(Protocol):
    """A job's notes that outlive its process: saved before a step that cannot be undone, read by the next run."""

    async def load(self) -> dict[str, Any]: ...

    async def save(self, notes: dict[str, Any]) -> None: ...


def skipped(reason: str) -> dict[str, Any]:
    return {"status": "skipped", "reason": reason}


def _gc_disabled(metadata: TableMetadata) -> bool:
    return metadata.properties.get(GC_ENABLED, "true").strip().lower() == "false"


def _not_alone(job: Job, metadata: TableMetadata) -> str | None:
    """Why the table's roots may hold files that are not its own to delete (None: they hold none).

    ``gc.enabled=false`` says so. A table of one catalog may be created over another catalog's tables when
    their allowed locations overlap (each catalog checks occupancy among its own objects only), or over the
    proxy's data directory when an allowed location contains it: orphan removal would delete everything
    there the table does not reach, and an expiry the other catalog's files the table's snapshots name."""
    if _gc_disabled(metadata):
        return GC_DISABLED
    roots = table_paths(metadata.location, metadata.properties)
    if any(is_under(root, other) or is_under(other, root) for root in roots for other in job.foreign):
        return OTHER_CATALOGS
    if any(is_under(own, root) for root in roots for own in job.protected):
        return "the table's storage contains the proxy's data directory or databases"
    return None


def _refused(job: Job) -> str | None:
    """Why the proxy cannot run a job on this catalog's tables itself (None: it can)."""
    if not job.catalog.supports(Capability.TABLE_COMMITS):
        return "the tables of this catalog are committed by its remote catalog: not implemented yet"
    return None


class _Deleter:
    """Deletes confined files one by one (blocking), within a budget, counting what it did."""

    def __init__(self, job: Job, metadata: TableMetadata) -> None:
        tables = job.catalog.tables
        self.files = TableFiles(metadata, tables.storage.locations)
        self._io = tables.files.reader.file_io(metadata.location)
        self._budget = job.limits.max_files
        self.deleted = self.bytes = self.failed = self.refused = 0
        self.truncated = False

    def delete(self, paths: Iterable[str]) -> None:
        for path in paths:
            if self.deleted + self.failed >= self._budget:
                self.truncated = True
                return
            if not self.files.owns(path):  # checked again now: a link swapped in meanwhile is refused
                self.refused += 1
                continue
            local = local_path(path)
            size = 0
            try:
                if local is not None:
                    size = unlink_beneath(os.path.realpath(local), self.files.real_roots)
                else:
                    self._io.delete(path)
            except FileNotFoundError:
                continue
            except OutsideRoots:  # a directory on the way became a link (or the file one) since the check
                self.refused += 1
                continue
            except Exception:  # any FileIO failure: counted, the rest goes on
                self.failed += 1
                continue
            self.deleted += 1
            self.bytes += size

    def counts(self) -> dict[str, Any]:
        return {
            "files-deleted": self.deleted,
            "bytes-deleted": self.bytes,
            "files-not-deleted": self.failed,
            "files-refused": self.refused,
            "truncated": self.truncated,
        }


class OutsideRoots(OSError):
    """The file to delete is not (or no longer) a regular file reached from a table root without links."""


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def unlink_beneath(real: str, roots: Iterable[str]) -> int:
    """Delete the regular file at the resolved path ``real`` under one of the resolved ``roots``, following no
    symbolic link on the way; returns its size.

    Each directory below the root is opened relative to its parent with ``O_NOFOLLOW`` and the file is
    unlinked relative to the last one, so a directory swapped for a link after ``TableFiles.owns`` checked
    the path cannot carry the delete into another table's directory (``os.unlink`` of the path would
    follow it). Raises OutsideRoots then, FileNotFoundError when the file is gone, OSError otherwise."""
    root = next((r for r in roots if real != r and within(real, [r])), None)
    if root is None:
        raise OutsideRoots(f"{real} is not under the table's roots")
    *directories, name = real[len(root.rstrip("/")) + 1 :].split("/")
    try:
        fd = os.open(root, _DIRECTORY)
    except FileNotFoundError:
        raise
    except OSError as exc:  # the root became a link since it was resolved
        raise OutsideRoots(f"{root} is not a directory") from exc
    try:
        for directory in directories:
            try:
                below = os.open(directory, _DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                raise
            except OSError as exc:  # ELOOP, ENOTDIR: a link or a file where a directory was
                raise OutsideRoots(f"{directory} is no longer a directory") from exc
            os.close(fd)
            fd = below
        status = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISREG(status.st_mode):
            raise OutsideRoots(f"{name} is not a regular file")
        os.unlink(name, dir_fd=fd)
        return status.st_size
    finally:
        os.close(fd)


def metadata_files(loaded: LoadedTable) -> set[str]:
    """The table's current metadata file and those of its log: a rollback, a restore or a register reads
    them, so a statistics file or manifest list a client names after one of them never makes it go."""
    found = {same(entry.metadata_file) for entry in loaded.metadata.metadata_log}
    if loaded.metadata_location:
        found.add(same(loaded.metadata_location))
    return found


# Expire snapshots ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Planned:
    loaded: LoadedTable
    plan: ExpiryPlan


class ExpireSnapshots:
    """Iceberg Java's ``ExpireSnapshots``: remove the snapshots the retention rules let go
    (``retention.plan_expiry``), then delete the files only they reached."""

    def __init__(self, job: Job) -> None:
        self.job = job

    async def plan(self) -> Planned:
        loaded = await self.job.catalog.tables.load(self.job.ident)
        retention = None if self.job.policy is None else self.job.policy.retention
        return Planned(loaded, plan_expiry(loaded.metadata, int(time.time() * 1000), retention))

    async def commit(self, planned: Planned) -> None:
        """Remove the planned snapshots and refs, only on the metadata file planned from. Raises CommitFailed."""
        metadata, plan = planned.loaded.metadata, planned.plan
        expired = set(plan.snapshot_ids)
        requirements: list[TableRequirement] = [AssertTableUUID(uuid=metadata.table_uuid)]
        requirements += [
            AssertRefSnapshotId.model_validate({"ref": name, "snapshot-id": ref.snapshot_id})
            for name, ref in metadata.refs.items()
        ]
        updates: list[TableUpdate] = [RemoveSnapshotRefUpdate.model_validate({"ref-name": name}) for name in plan.refs]
        updates += [
            RemovePartitionStatisticsUpdate.model_validate({"snapshot-id": s.snapshot_id})
            for s in metadata.partition_statistics
            if s.snapshot_id in expired
        ]
        if plan.snapshot_ids:
            updates.append(RemoveSnapshotsUpdate.model_validate({"snapshot-ids": list(plan.snapshot_ids)}))
        change = TableChange(self.job.ident, requirements, updates, base_location=planned.loaded.metadata_location)
        await self.job.catalog.tables.commit(change)

    def _candidates(self, metadata: TableMetadata, expired: set[int]) -> set[str]:
        """Files the expired snapshots reach (within the table's roots), their statistics included."""
        files = TableFiles(metadata, self.job.catalog.tables.storage.locations)
        reach = Reach(metadata, files, self.job.catalog.tables.files.reader, self.job.limits.max_files)
        found = reach.candidates(s for s in metadata.snapshots if s.snapshot_id in expired)
        found |= {same(s.statistics_path) for s in metadata.statistics if s.snapshot_id in expired}
        found |= {same(s.statistics_path) for s in metadata.partition_statistics if s.snapshot_id in expired}
        return found

    def _would_delete(self, loaded: LoadedTable, expired: set[int], candidates: set[str]) -> int:
        """How many files a real run would delete (a dry run's answer)."""
        metadata = loaded.metadata
        kept = self._kept(metadata, [s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in expired])
        kept |= metadata_files(loaded)
        files = TableFiles(metadata, self.job.catalog.tables.storage.locations)
        return sum(1 for path in candidates - kept if files.owns(path))

    def _kept(self, metadata: TableMetadata, snapshot_ids: Iterable[int] | None = None) -> set[str]:
        files = TableFiles(metadata, self.job.catalog.tables.storage.locations)
        reach = Reach(metadata, files, self.job.catalog.tables.files.reader, self.job.limits.max_files)
        return reach.kept(snapshot_ids)

    async def run(self) -> dict[str, Any]:
        if (refused := _refused(self.job)) is not None:
            return skipped(refused)
        resumed = await self._resume()
        for _attempt in range(COMMIT_ATTEMPTS):
            result = await self._attempt(await self.plan())
            if result is not None:
                return {**result, **resumed}
        return {**skipped(f"the table changed during each of {COMMIT_ATTEMPTS} attempts; nothing expired"), **resumed}

    async def _resume(self) -> dict[str, Any]:
        """Finish the deletes of an earlier attempt of this run that was killed after its commit (its checkpoint
        names the files its expired snapshots reached): those no snapshot of the table reaches now go. Had the
        commit not landed, the snapshots still reach them all and nothing goes."""
        checkpoint = self.job.checkpoint
        if checkpoint is None or self.job.dry_run:
            return {}
        pending = (await checkpoint.load()).get("pending")
        if not pending:
            return {}
        counts = await self._delete({str(path) for path in pending})
        await checkpoint.save({})
        return {f"resumed-{key}": value for key, value in counts.items() if key != "truncated"}

    async def _attempt(self, planned: Planned) -> dict[str, Any] | None:
        """One plan carried out: the job's result, or None when the table changed before the commit."""
        threads, metadata, plan = self.job.threads, planned.loaded.metadata, planned.plan
        if (reason := _not_alone(self.job, metadata)) is not None:
            return skipped(reason)
        expired = set(plan.snapshot_ids)
        counts: dict[str, Any] = {"snapshots-expired": len(expired), "refs-removed": list(plan.refs)}
        if plan.empty:
            return {"status": "succeeded", **counts, "files-deleted": 0, "bytes-deleted": 0}
        try:
            candidates = await threads.run(self._candidates, metadata, expired)
            if self.job.dry_run:
                counts["files-to-delete"] = await threads.run(self._would_delete, planned.loaded, expired, candidates)
                return {"status": "succeeded", "dry-run": True, **counts}
        except (Incomplete, TooManyFiles) as exc:
            return {"status": "failed", "error": exc.message, **counts}
        doomed = candidates - metadata_files(planned.loaded)
        if self.job.checkpoint is not None:  # a process killed between the commit and the deletes: see _resume
            await self.job.checkpoint.save({"pending": sorted(doomed)})
        try:
            await self.commit(planned)
        except CommitFailed:
            return None  # the table changed: plan again from what it is now
        await pause(AFTER_EXPIRY_COMMIT)
        deleted = await self._delete(doomed)
        if self.job.checkpoint is not None:
            await self.job.checkpoint.save({})
        return {"status": "succeeded", **counts, **deleted}

    async def _delete(self, candidates: set[str]) -> dict[str, Any]:
        """Delete the candidates no snapshot of the table as it is *now* reaches (re-read after the commit) and
        that are none of its metadata files."""
        loaded = await self.job.catalog.tables.load(self.job.ident)
        current = loaded.metadata
        if _gc_disabled(current):
            return {"files-deleted": 0, "bytes-deleted": 0, "note": "gc.enabled became false: nothing deleted"}
        threads = self.job.threads
        try:
            kept = await threads.run(self._kept, current)
        except (Incomplete, TooManyFiles) as exc:
            return {"files-deleted": 0, "bytes-deleted": 0, "note": f"nothing deleted: {exc.message}"}
        deleter = _Deleter(self.job, current)
        await threads.run(deleter.delete, sorted(candidates - kept - metadata_files(loaded)))
        return deleter.counts()


# Remove orphan files ---------------------------------------------------------------------------------------
class RemoveOrphanFiles:
    """Delete files under the table's roots that no metadata reaches and that are older than ``orphan_min_age``."""

    def __init__(self, job: Job) -> None:
        self.job = job

    async def run(self) -> dict[str, Any]:
        if (refused := _refused(self.job)) is not None:
            return skipped(refused)
        job, tables = self.job, self.job.catalog.tables
        loaded = await tables.load(job.ident)
        metadata = loaded.metadata
        if (reason := await self._refused(metadata)) is not None:
            return skipped(reason)
        threads = job.threads
        try:
            reached = await threads.run(self._reached, loaded)
        except (Incomplete, TooManyFiles) as exc:
            return {"status": "failed", "error": exc.message}
        deleter = _Deleter(job, metadata)
        listed, orphans, truncated = await threads.run(self._orphans, deleter.files, reached)
        counts: dict[str, Any] = {"files-listed": listed, "orphans-found": len(orphans), "listing-truncated": truncated}
        if job.dry_run:
            return {"status": "succeeded", "dry-run": True, **counts}
        # Checked again just before deleting: the table may have been dropped or changed since it was listed.
        current = await tables.load(job.ident)
        if current.metadata_location != loaded.metadata_location:
            reached |= await threads.run(self._reached, current)
        await threads.run(deleter.delete, [path for path in orphans if _key(path) not in reached])
        return {"status": "succeeded", **counts, **deleter.counts()}

    async def _refused(self, metadata: TableMetadata) -> str | None:
        """Why this table's orphans cannot be removed safely now (None: they can)."""
        if (reason := _not_alone(self.job, metadata)) is not None:
            return reason
        roots = table_paths(metadata.location, metadata.properties)
        if any(local_path(root) is None for root in roots):
            return "listing object storage is not implemented yet (local file systems only)"
        occupancy = self.job.catalog.tables.storage.occupancy
        if occupancy.allows_overlap:
            return "allow_overlapping_locations is set: other tables may keep files in these directories"
        flat = self.job.catalog.codec.to_flat(self.job.ident.namespace)
        try:
            await occupancy.check_free(roots, table_owner(flat, self.job.ident.name), "Table location")
        except LocationOverlap:
            return "the table's storage overlaps another table's or view's (one in the trash, say)"
        return None

    def _reached(self, loaded: LoadedTable) -> set[str]:
        """Every file the metadata reaches, each in the spellings a listed file may match."""
        metadata = loaded.metadata
        files = TableFiles(metadata, self.job.catalog.tables.storage.locations)
        reach = Reach(metadata, files, self.job.catalog.tables.files.reader, self.job.limits.max_files)
        found = reach.kept()
        found |= {same(loaded.metadata_location or "")} | {same(e.metadata_file) for e in metadata.metadata_log}
        return {key for path in found for key in _spellings(path)}

    def _orphans(self, files: TableFiles, reached: set[str]) -> tuple[int, list[str], bool]:
        """(files listed, the old unreached ones as ``file:`` locations, whether the listing stopped early)."""
        cutoff = time.time() - self.job.orphan_min_age.total_seconds()
        listed, orphans = 0, list[str]()
        for path, status in _walk(files.real_roots):
            listed += 1
            if listed > self.job.limits.max_files:
                return listed - 1, orphans, True
            if _key(path) in reached or status.st_mtime >= cutoff:
                continue
            location = "file://" + quote(path)  # local_path() decodes it back to exactly this path
            if files.owns(location):
                orphans.append(location)
        return listed, orphans, False


def _key(path: str) -> str:
    """A listed file's path (or ``file:`` location) as the reached set spells it."""
    return os.path.normpath(local_path(path) or path)


def _spellings(location: str) -> set[str]:
    """A reached location's file-system path, percent-decoded and as written (writers differ on escaping)."""
    keys = {location}
    local = local_path(location)
    if local is not None:
        keys.add(os.path.normpath(local))
        raw = location.removeprefix("file://").removeprefix("file:")
        if raw.startswith("/"):
            keys.add(os.path.normpath(raw))
    return keys


def _walk(roots: Iterable[str]) -> Iterator[tuple[str, os.stat_result]]:
    """Regular files under the resolved local ``roots`` (symbolic links neither followed nor listed)."""
    for root in dict.fromkeys(roots):
        if not os.path.isdir(root):
            continue
        for directory, subdirectories, names in os.walk(root, followlinks=False):
            subdirectories.sort()
            for name in sorted(names):
                path = os.path.join(directory, name)
                try:
                    status = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(status.st_mode) and within(path, [root]):
                    yield path, status


async def _expire_snapshots(job: Job) -> dict[str, Any]:
    return await ExpireSnapshots(job).run()


async def _remove_orphan_files(job: Job) -> dict[str, Any]:
    return await RemoveOrphanFiles(job).run()


RUNNERS: dict[str, Callable[[Job], Awaitable[dict[str, Any]]]] = {
    EXPIRE_SNAPSHOTS: _expire_snapshots,
    REMOVE_ORPHAN_FILES: _remove_orphan_files,
}
"""Each job the local executor runs, by name; a job not here answers ``skipped``. A new job adds its entry."""
