"""The ``rewrite-manifests`` job on the local executor, with Iceberg Java's ``RewriteManifests`` semantics.

Many small appends leave one small manifest each; a scan opens every one. The job merges the small data
manifests of ``main``'s current snapshot, per partition spec, into manifests of up to the table's
``commit.manifest.target-size-bytes`` (8 MiB, Java's default) and commits a ``replace`` snapshot:

* every live entry is written ``EXISTING`` with its original snapshot id, data and file sequence numbers,
  so readers see exactly the same files and rows; the new manifests inherit the new snapshot's sequence
  number, kept manifests (delete manifests, manifests already at the target, a spec's lone small manifest)
  are listed after them unchanged, as ``BaseRewriteManifests.apply`` orders them;
* the summary has Java's ``manifests-created``, ``manifests-kept``, ``manifests-replaced`` and
  ``entries-processed`` and the previous snapshot's totals; the created manifests must hold as many live
  files as the replaced ones (Java's ``validateFilesCounts``), or nothing is committed;
* the commit goes through the catalog's normal commit path (``Catalog.commit_table``: here, or forwarded to a
  remote catalog as the proxy itself) with ``assert-table-uuid`` and
  ``assert-ref-snapshot-id`` on ``main``, on the metadata file planned from: any concurrent commit makes the
  job plan again (``COMMIT_ATTEMPTS``), then skip; the files an attempt wrote are deleted when its commit fails;
* the replaced manifests are not deleted here: older snapshots still name them (``expire-snapshots`` removes
  them once no retained snapshot does), so ``gc.enabled`` does not matter to this job.

Manifests are read through the catalog's bounded reader (``Catalog.open_table``), confined to the table, and the
new ones written through a FileIO with the proxy's storage access to the table (``job.storage_io``); the
entries read are bounded by ``max_files_per_run`` (bins past the budget wait for the next run,
``truncated``). Format v3 tables are ``skipped``: pyiceberg 0.12 cannot write v3 manifests (row lineage).
Planning and writing live in ``manifest_rewrite``; this module opens the table, commits and cleans up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyiceberg.io import FileIO
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
)

from irc_proxy.errors import CatalogError, CommitFailed, CommitStateUnknown
from irc_proxy.handling.loaded import Owns
from irc_proxy.handling.maintenance.deleting import discard
from irc_proxy.handling.maintenance.job import COMMIT_ATTEMPTS, Job, no_storage_access, refusal, skipped, storage_io
from irc_proxy.handling.maintenance.manifest_rewrite import (
    V3_NEEDS_SPARK,
    ManifestPlan,
    ManifestRewriter,
    Written,
    current_manifests,
    plan_rewrite,
    target_bytes,
)
from irc_proxy.handling.storage.storage_reads import TableFiles
from irc_proxy.handling.tables.tables import TableChange


@dataclass(frozen=True)
class Prepared:
    """One attempt, written and ready to commit: the table as planned from and what was written for it."""

    metadata_location: str | None
    """The metadata file planned from (None: a remote catalog named none; its requirements guard the commit)."""
    metadata: TableMetadata
    current: Snapshot
    plan: ManifestPlan
    written: Written
    owns: Owns
    io: FileIO


@dataclass(frozen=True)
class _Planned:
    metadata_location: str | None
    current: Snapshot
    plan: ManifestPlan
    rewriter: ManifestRewriter
    owns: Owns
    io: FileIO


def _result(rewritten: int, added: int, kept: int, entries: int, **more: Any) -> dict[str, Any]:
    counts = {"manifests-rewritten": rewritten, "manifests-added": added, "manifests-kept": kept}
    return {"status": "succeeded", **counts, "entries-processed": entries, **more}


class RewriteManifests:
    """Merge the small data manifests of ``main``'s current snapshot (see the module)."""

    def __init__(self, job: Job) -> None:
        self.job = job

    async def run(self) -> dict[str, Any]:
        if (reason := await refusal(self.job)) is not None:
            return skipped(reason)
        for _attempt in range(COMMIT_ATTEMPTS):
            prepared = await self.prepare()
            if not isinstance(prepared, Prepared):
                return prepared
            result = await self.attempt(prepared)
            if result is not None:
                return result
        return skipped(f"the table changed during each of {COMMIT_ATTEMPTS} attempts; no manifest rewritten")

    async def prepare(self) -> Prepared | dict[str, Any]:
        """Plan from the table as it is now and write the new manifests and manifest list; the job's result
        instead when there is nothing to commit (nothing to merge, a dry run, a table this job leaves alone)."""
        planned = await self._plan()
        if not isinstance(planned, _Planned):
            return planned
        plan = planned.plan
        if self.job.dry_run:
            counts = (len(plan.replaced), len(plan.bins), len(plan.kept), plan.live_entries)
            return _result(*counts, truncated=plan.truncated, **{"dry-run": True})
        metadata, owns, io = planned.rewriter.metadata, planned.owns, planned.io
        written = Written()
        try:
            await self.job.threads.run(planned.rewriter.write, planned.current, planned.plan, written)
        except (CatalogError, OSError, ValueError) as exc:
            await self._discard(written, owns, io, metadata)
            message = exc.message if isinstance(exc, CatalogError) else f"cannot write the manifests: {exc}"
            return {"status": "failed", "error": message}
        except BaseException:
            await self._discard(written, owns, io, metadata)
            raise
        return Prepared(planned.metadata_location, metadata, planned.current, planned.plan, written, owns, io)

    async def _plan(self) -> _Planned | dict[str, Any]:
        """The table opened and its rewrite planned, or the job's result when nothing is to be written."""
        job = self.job
        opened = await job.open()
        metadata = opened.load.metadata
        if (reason := V3_NEEDS_SPARK if metadata.format_version >= 3 else no_storage_access(opened)) is not None:
            return skipped(reason)
        main = metadata.refs.get(MAIN_BRANCH)
        current = metadata.snapshot_by_id(main.snapshot_id) if main is not None else None
        if current is None:
            return _result(0, 0, 0, 0, note="the table has no snapshot")
        read, owns = opened.files(metadata)
        io = storage_io(opened)
        target = (
            target_bytes(metadata)
            if job.manifest_target_size is None
            else target_bytes(metadata, job.manifest_target_size)
        )
        rewriter = ManifestRewriter(metadata, read, owns, io, target, job.limits.max_files)
        if not rewriter.confined():
            return skipped("the table's metadata directory lies outside its locations: nothing can be written")
        try:
            manifests = await job.threads.run(current_manifests, current, read, owns)
        except CatalogError as exc:
            return {"status": "failed", "error": exc.message}
        plan = plan_rewrite(manifests, target, job.limits.max_files)
        if not plan.bins:
            return _result(0, 0, len(manifests), 0, truncated=plan.truncated)
        return _Planned(opened.load.location or None, current, plan, rewriter, owns, io)

    async def attempt(self, prepared: Prepared) -> dict[str, Any] | None:
        """Commit a prepared rewrite: the job's result, or None when the table changed since it was planned
        (the attempt's files are deleted then)."""
        written, plan = prepared.written, prepared.plan
        assert written.snapshot is not None
        try:
            await self.commit(prepared)
        except CommitStateUnknown as exc:  # it may have landed: its files stay (orphans at worst)
            return {"status": "failed", "error": exc.message}
        except CommitFailed:
            await self._discard(written, prepared.owns, prepared.io, prepared.metadata)
            return None
        except CatalogError as exc:  # refused (the commit checks, the storage): not committed
            await self._discard(written, prepared.owns, prepared.io, prepared.metadata)
            return {"status": "failed", "error": exc.message}
        except BaseException:
            await self._discard(written, prepared.owns, prepared.io, prepared.metadata)
            raise
        counts = (len(plan.replaced), len(written.manifests), len(plan.kept), written.entries)
        return _result(*counts, truncated=plan.truncated, **{"snapshot-id": written.snapshot.snapshot_id})

    async def commit(self, prepared: Prepared) -> None:
        """Add the ``replace`` snapshot and move ``main`` to it, only on the metadata file planned from (its
        retention settings kept). Raises CommitFailed when the table changed, and the commit path's errors."""
        metadata, snapshot = prepared.metadata, prepared.written.snapshot
        assert snapshot is not None
        main = metadata.refs[MAIN_BRANCH]
        requirements: list[TableRequirement] = [
            AssertTableUUID(uuid=metadata.table_uuid),
            AssertRefSnapshotId.model_validate({"ref": MAIN_BRANCH, "snapshot-id": prepared.current.snapshot_id}),
        ]
        ref = {
            "ref-name": MAIN_BRANCH,
            "type": SnapshotRefType.BRANCH,
            "snapshot-id": snapshot.snapshot_id,
            "max-ref-age-ms": main.max_ref_age_ms,
            "max-snapshot-age-ms": main.max_snapshot_age_ms,
            "min-snapshots-to-keep": main.min_snapshots_to_keep,
        }
        updates: list[TableUpdate] = [AddSnapshotUpdate(snapshot=snapshot), SetSnapshotRefUpdate.model_validate(ref)]
        change = TableChange(self.job.ident, requirements, updates, base_location=prepared.metadata_location)
        await self.job.catalog.commit_table(self.job.context, change)

    async def _discard(self, written: Written, owns: Owns, io: FileIO, metadata: TableMetadata) -> None:
        roots = TableFiles(metadata, None).real_roots  # owns checks the catalog's allowed locations
        await self.job.threads.run(discard, list(written.paths), owns, io, roots)


async def rewrite_manifests(job: Job) -> dict[str, Any]:
    """The ``rewrite-manifests`` runner (``runners.RUNNERS``)."""
    return await RewriteManifests(job).run()
