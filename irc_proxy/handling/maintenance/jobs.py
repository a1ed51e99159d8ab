"""The maintenance jobs ``expire-snapshots`` and ``remove-orphan-files`` on the local executor (``rewrite-manifests``
is in ``manifests``, ``rewrite-data-files`` in ``compaction``; what they share in ``job`` and ``deleting``).

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
  than ``orphan_min_age`` (a write in flight has not committed its files yet). It lists local file systems and
  S3 (``backends.object_store``: paginated, under each root with a trailing ``/``); other stores are ``skipped``.

Every catalog kind runs both jobs the same way, through what the catalog answers (``Catalog.open_table``: the
table, its confined reader, and the storage access the proxy has to it; ``Catalog.commit_table``: the normal
commit path, here or forwarded to a remote catalog as the proxy itself). A table the proxy has no storage
access to (a remote catalog that vended no credentials for it) is committed but its files are not deleted, and
its orphans are ``skipped``, each with the reason.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
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

from irc_proxy.backends.object_store import ObjectStore, ObjectStoreError, lists
from irc_proxy.errors import CommitFailed
from irc_proxy.handling.loaded import OpenedTable, TableLoad
from irc_proxy.handling.maintenance.deleting import Deleter
from irc_proxy.handling.maintenance.job import (
    COMMIT_ATTEMPTS,
    Job,
    gc_disabled,
    no_storage_access,
    not_alone,
    refusal,
    skipped,
)
from irc_proxy.handling.maintenance.pauses import AFTER_EXPIRY_COMMIT, pause
from irc_proxy.handling.maintenance.reach import Incomplete, Reach, TooManyFiles, same
from irc_proxy.handling.maintenance.retention import ExpiryPlan, plan_expiry
from irc_proxy.handling.storage.locations import (
    InvalidLocation,
    StorageLocations,
    parse_location,
    table_paths,
)
from irc_proxy.handling.storage.occupancy import LocationOverlap
from irc_proxy.handling.storage.storage import table_owner
from irc_proxy.handling.storage.storage_reads import TableFiles, local_path, within
from irc_proxy.handling.tables.tables import LoadedTable, TableChange


def metadata_files(loaded: LoadedTable | TableLoad) -> set[str]:
    """The table's current metadata file and those of its log: a rollback, a restore or a register reads
    them, so a statistics file or manifest list a client names after one of them never makes it go."""
    found = {same(entry.metadata_file) for entry in loaded.metadata.metadata_log}
    current = loaded.metadata_location if isinstance(loaded, LoadedTable) else loaded.location
    if current:
        found.add(same(current))
    return found


def _reach(job: Job, opened: OpenedTable, metadata: TableMetadata) -> Reach:
    read, owns = opened.files(metadata)
    return Reach.opened(metadata, read, owns, job.limits.max_files)


# Expire snapshots ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Planned:
    opened: OpenedTable
    plan: ExpiryPlan

    @property
    def metadata(self) -> TableMetadata:
        return self.opened.load.metadata


class ExpireSnapshots:
    """Iceberg Java's ``ExpireSnapshots``: remove the snapshots the retention rules let go
    (``retention.plan_expiry``), then delete the files only they reached."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.sizes: dict[str, int] = {}

    async def plan(self) -> Planned:
        opened = await self.job.open()
        retention = None if self.job.policy is None else self.job.policy.retention
        return Planned(opened, plan_expiry(opened.load.metadata, int(self.job.limits.clock() * 1000), retention))

    async def commit(self, planned: Planned) -> None:
        """Remove the planned snapshots and refs, only on the metadata file planned from (served here; a remote
        catalog checks the requirements). Raises CommitFailed."""
        metadata, plan = planned.metadata, planned.plan
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
        base = planned.opened.load.location or None
        change = TableChange(self.job.ident, requirements, updates, base_location=base)
        await self.job.catalog.commit_table(self.job.context, change)

    def _candidates(self, opened: OpenedTable, expired: set[int]) -> set[str]:
        """Files the expired snapshots reach (within the table's roots), their statistics included; the sizes
        their metadata gives are kept in ``sizes`` (an object store's delete answers none)."""
        metadata = opened.load.metadata
        reach = _reach(self.job, opened, metadata)
        found = reach.candidates(s for s in metadata.snapshots if s.snapshot_id in expired)
        self.sizes.update(reach.sizes)
        found |= {same(s.statistics_path) for s in metadata.statistics if s.snapshot_id in expired}
        found |= {same(s.statistics_path) for s in metadata.partition_statistics if s.snapshot_id in expired}
        return found

    def _would_delete(self, opened: OpenedTable, expired: set[int], candidates: set[str]) -> int:
        """How many files a real run would delete (a dry run's answer)."""
        metadata = opened.load.metadata
        kept = self._kept(opened, metadata, [s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in expired])
        kept |= metadata_files(opened.load)
        _read, owns = opened.files(metadata)
        return sum(1 for path in candidates - kept if owns(path))

    def _kept(
        self, opened: OpenedTable, metadata: TableMetadata, snapshot_ids: Iterable[int] | None = None
    ) -> set[str]:
        return _reach(self.job, opened, metadata).kept(snapshot_ids)

    async def run(self) -> dict[str, Any]:
        if (refused := await refusal(self.job)) is not None:
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
        threads, metadata, plan = self.job.threads, planned.metadata, planned.plan
        if (reason := not_alone(self.job, metadata)) is not None:
            return skipped(reason)
        expired = set(plan.snapshot_ids)
        counts: dict[str, Any] = {"snapshots-expired": len(expired), "refs-removed": list(plan.refs)}
        if plan.empty:
            return {"status": "succeeded", **counts, "files-deleted": 0, "bytes-deleted": 0}
        no_access = no_storage_access(planned.opened)
        try:
            candidates = await threads.run(self._candidates, planned.opened, expired) if no_access is None else set()
            if self.job.dry_run:
                return await self._dry_run(planned, counts, candidates, no_access)
        except (Incomplete, TooManyFiles) as exc:
            return {"status": "failed", "error": exc.message, **counts}
        doomed = candidates - metadata_files(planned.opened.load)
        if self.job.checkpoint is not None and doomed:  # a process killed between the commit and the deletes
            await self.job.checkpoint.save({"pending": sorted(doomed)})  # (see _resume)
        try:
            await self.commit(planned)
        except CommitFailed:
            return None  # the table changed: plan again from what it is now
        await pause(AFTER_EXPIRY_COMMIT)
        deleted = await self._delete(doomed, no_access)
        if self.job.checkpoint is not None and doomed:
            await self.job.checkpoint.save({})
        return {"status": "succeeded", **counts, **deleted}

    async def _dry_run(
        self, planned: Planned, counts: dict[str, Any], candidates: set[str], no_access: str | None
    ) -> dict[str, Any]:
        """What a run would delete, changing nothing."""
        if no_access is None:
            expired = set(planned.plan.snapshot_ids)
            counts["files-to-delete"] = await self.job.threads.run(
                self._would_delete, planned.opened, expired, candidates
            )
        else:
            counts["note"] = f"no files would be deleted: {no_access}"
        return {"status": "succeeded", "dry-run": True, **counts}

    async def _delete(self, candidates: set[str], no_access: str | None = None) -> dict[str, Any]:
        """Delete the candidates no snapshot of the table as it is *now* reaches (re-read after the commit) and
        that are none of its metadata files (none when the proxy has no storage access: ``no_access`` says why)."""
        if no_access is not None:
            return {"files-deleted": 0, "bytes-deleted": 0, "note": no_access}
        opened = await self.job.open()
        current = opened.load.metadata
        if gc_disabled(current):
            return {"files-deleted": 0, "bytes-deleted": 0, "note": "gc.enabled became false: nothing deleted"}
        threads = self.job.threads
        try:
            kept = await threads.run(self._kept, opened, current)
        except (Incomplete, TooManyFiles) as exc:
            return {"files-deleted": 0, "bytes-deleted": 0, "note": f"nothing deleted: {exc.message}"}
        deleter = Deleter(self.job, opened, current)
        await threads.run(deleter.delete, sorted(candidates - kept - metadata_files(opened.load)), self.sizes)
        return deleter.counts()


# Remove orphan files ---------------------------------------------------------------------------------------
class RemoveOrphanFiles:
    """Delete files under the table's roots that no metadata reaches and that are older than ``orphan_min_age``."""

    def __init__(self, job: Job) -> None:
        self.job = job

    async def run(self) -> dict[str, Any]:
        if (refused := await refusal(self.job)) is not None:
            return skipped(refused)
        job = self.job
        opened = await job.open()
        metadata = opened.load.metadata
        if (reason := await self._refused(opened)) is not None:
            return skipped(reason)
        threads = job.threads
        try:
            reached = await threads.run(self._reached, opened)
        except (Incomplete, TooManyFiles) as exc:
            return {"status": "failed", "error": exc.message}
        deleter = Deleter(job, opened, metadata)
        try:
            listed, orphans, truncated = await threads.run(self._orphans, opened, deleter.owns, reached)
        except ObjectStoreError as exc:
            return {"status": "failed", "error": f"Cannot list the table's storage: {exc}"}
        counts: dict[str, Any] = {"files-listed": listed, "orphans-found": len(orphans), "listing-truncated": truncated}
        if job.dry_run:
            return {"status": "succeeded", "dry-run": True, **counts}
        # Checked again just before deleting: the table may have been dropped or changed since it was listed.
        current = await job.open()
        if current.load.location != opened.load.location:
            reached |= await threads.run(self._reached, current)
        await threads.run(deleter.delete, [path for path in orphans if _key(path) not in reached], orphans)
        return {"status": "succeeded", **counts, **deleter.counts()}

    async def _refused(self, opened: OpenedTable) -> str | None:
        """Why this table's orphans cannot be removed safely now (None: they can)."""
        metadata = opened.load.metadata
        if (reason := not_alone(self.job, metadata)) is not None:
            return reason
        if (reason := no_storage_access(opened)) is not None:
            return reason
        roots = table_paths(metadata.location, metadata.properties)
        storage = self.job.catalog.tables.storage
        if (reason := _unlistable(roots, storage.locations)) is not None:
            return reason
        occupancy = storage.occupancy
        if occupancy.allows_overlap:
            return "allow_overlapping_locations is set: other tables may keep files in these directories"
        flat = self.job.catalog.codec.to_flat(self.job.ident.namespace)
        try:
            await occupancy.check_free(roots, table_owner(flat, self.job.ident.name), "Table location")
        except LocationOverlap:
            return "the table's storage overlaps another table's or view's (one in the trash, say)"
        return None

    def _reached(self, opened: OpenedTable) -> set[str]:
        """Every file the metadata reaches, each in the spellings a listed file may match."""
        metadata = opened.load.metadata
        found = _reach(self.job, opened, metadata).kept()
        found |= metadata_files(opened.load)
        return {key for path in found for key in _spellings(path)}

    def _orphans(
        self, opened: OpenedTable, owns: Callable[[str], bool], reached: set[str]
    ) -> tuple[int, dict[str, int], bool]:
        """(files listed, the old unreached ones with their sizes, whether the listing stopped early)."""
        cutoff = self.job.limits.clock() - self.job.orphan_min_age.total_seconds()
        listed, orphans = 0, dict[str, int]()
        for location, size, modified in self._listing(opened):
            listed += 1
            if listed > self.job.limits.max_files:
                return listed - 1, orphans, True
            if _key(location) in reached or modified >= cutoff:
                continue
            if owns(location):
                orphans[location] = size
        return listed, orphans, False

    def _listing(self, opened: OpenedTable) -> Iterator[tuple[str, int, float]]:
        """``(location, size, modified)`` of every file under the table's roots: local ones as ``file:``
        locations (``local_path`` decodes them back to exactly the path), S3 objects as listed."""
        metadata = opened.load.metadata
        for path, status in _walk(TableFiles(metadata, None).real_roots):
            yield "file://" + quote(path), status.st_size, status.st_mtime
        buckets = [root for root in table_paths(metadata.location, metadata.properties) if lists(root)]
        if not buckets:
            return
        store = ObjectStore(dict(opened.storage or {}), self.job.catalog.tables.files.reader.limits.timeout)
        try:
            for root in buckets:
                for found in store.list(root, self.job.limits.max_files + 1):
                    yield found.location, found.size, found.modified
        finally:
            store.close()


def _unlistable(roots: Iterable[str], locations: StorageLocations | None) -> str | None:
    """Why a root cannot be listed (None: each can): local storage only inside the catalog's allowed locations (a
    remote catalog's table never names this machine's files), object stores only where listing is implemented."""
    for root in roots:
        if local_path(root) is not None:
            if locations is None or not locations.allows(root):
                return "the table's local storage is outside the catalog's allowed locations: not listed"
        elif not lists(root):
            scheme = root.partition(":")[0]
            return f"listing {scheme[:16]!r} storage is not implemented (local file systems and S3 only)"
    return None


def _key(path: str) -> str:
    """A listed file's path (or ``file:`` location) as the reached set spells it: a local file's path; an
    object's ``family://bucket/key`` (``s3a://b/k`` and ``s3://b/k`` are one object)."""
    local = local_path(path)
    if local is not None:
        return os.path.normpath(local)
    try:
        parsed = parse_location(path)
    except InvalidLocation:
        return path
    return f"{parsed.family}://{parsed.authority}{parsed.path}"


def _spellings(location: str) -> set[str]:
    """A reached location's file-system path, percent-decoded and as written (writers differ on escaping)."""
    keys = {location, _key(location)}
    local = local_path(location)
    if local is not None:
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


async def expire_snapshots(job: Job) -> dict[str, Any]:
    """The ``expire-snapshots`` runner (``runners.RUNNERS``)."""
    return await ExpireSnapshots(job).run()


async def remove_orphan_files(job: Job) -> dict[str, Any]:
    """The ``remove-orphan-files`` runner (``runners.RUNNERS``)."""
    return await RemoveOrphanFiles(job).run()
