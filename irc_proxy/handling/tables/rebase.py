"""Server-side rebase of blind appends onto the branch head, as Iceberg Java's fast-append retry does.

A commit whose requirements do not pin a branch (only ``assert-table-uuid``, say) may add an
``append`` snapshot built on a stale parent and set the branch to it. Applied verbatim, its manifest
list lacks the appends that landed in between: their data would silently leave the table. Instead the
snapshot is rewritten onto the branch head as ``SnapshotProducer.apply()`` + ``FastAppend.apply()``
do on a client-side retry: same snapshot id, the manifests it added followed by the head's manifests
in a new manifest list, parent = head, the next sequence number and totals recomputed from the head's
summary. The added manifests' entries carry no sequence number (v2 inherits it from the manifest-list
entry, which the list writer assigns; v1 has none); they are copied to new paths (see ``_copy``).

Only a plain append is rebased: every manifest it added holds only ADDED data files with inherited
sequence numbers, and it kept every live manifest of its parent. Any other stale snapshot set on an
unpinned branch (overwrite, delete, replace, merged manifests) is refused with CommitFailed (409):
the client must refresh and retry. A branch pinned by ``assert-ref-snapshot-id`` is never rebased.
Nor is a stale append on a format v3 table (409 too): its snapshot's ``first-row-id`` and its manifests'
row id ranges would have to be re-assigned, and a rebase that got them wrong would give two rows one id.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from pyiceberg.avro.file import AvroFile
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_ENTRY_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import (
    TOTAL_DATA_FILES,
    TOTAL_DELETE_FILES,
    TOTAL_EQUALITY_DELETES,
    TOTAL_FILE_SIZE,
    TOTAL_POSITION_DELETES,
    TOTAL_RECORDS,
    Operation,
    Snapshot,
    Summary,
    update_snapshot_summaries,
)
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    RemoveSnapshotRefUpdate,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersionUpdate,
)

from irc_proxy.backends.base import Backend
from irc_proxy.errors import BadRequest, CommitFailed
from irc_proxy.handling.tables.format_v3 import ROW_LINEAGE_VERSION
from irc_proxy.threads import ThreadRunner

AVRO_COMPRESSION = "write.avro.compression-codec"
AVRO_COMPRESSION_DEFAULT = "gzip"
_TOTALS = (
    TOTAL_DATA_FILES,
    TOTAL_DELETE_FILES,
    TOTAL_RECORDS,
    TOTAL_FILE_SIZE,
    TOTAL_POSITION_DELETES,
    TOTAL_EQUALITY_DELETES,
)


class AppendRebase:
    """Rewrites a commit's stale blind appends onto the current branch heads (file I/O in threads)."""

    def __init__(self, backend: Backend, threads: ThreadRunner) -> None:
        self._backend = backend
        self._threads = threads

    async def __call__(
        self, base: TableMetadata | None, requirements: Sequence[TableRequirement], updates: Sequence[TableUpdate]
    ) -> Sequence[TableUpdate]:
        """``updates`` with each stale append rebased; unchanged (no I/O) when nothing is stale.

        Raises:
            CommitFailed: a stale snapshot that is not a plain append would be set on an unpinned branch.
            BadRequest: a stale append's manifest list or manifests cannot be read.
        """
        if base is None or not stale_snapshots(base, requirements, updates):
            return updates
        if tracks_row_lineage(base, updates):  # a rebased snapshot would need new first-row-ids in its list
            raise CommitFailed("A stale append on a format v3 table is not rebased: refresh the table and retry")
        io = self._backend.file_io(base.location, base.properties)
        return await self._threads.run(rebase_updates, io, base, requirements, updates)


def tracks_row_lineage(base: TableMetadata, updates: Sequence[TableUpdate]) -> bool:
    """Whether the table has row lineage (format v3) once ``updates`` apply: rebase does not re-assign row ids."""
    upgrades = (u.format_version for u in updates if isinstance(u, UpgradeFormatVersionUpdate))
    return max([base.format_version, *upgrades]) >= ROW_LINEAGE_VERSION


def stale_snapshots(
    base: TableMetadata, requirements: Sequence[TableRequirement], updates: Sequence[TableUpdate]
) -> dict[int, int]:
    """The snapshots added by ``updates`` that must be rebased: id -> id of the head to rebase onto.

    A snapshot is stale when the same commit sets an existing, unpinned branch to it and its parent
    is not that branch's head at that point of the commit (or is a snapshot rebased before it).
    Pure (reads no file); raises CommitFailed for a stale snapshot that is not an append.
    """
    pinned = {r.ref for r in requirements if isinstance(r, AssertRefSnapshotId)}
    heads = {name: ref.snapshot_id for name, ref in base.refs.items()}
    added: dict[int, Snapshot] = {}
    stale: dict[int, int] = {}
    for update in updates:
        if isinstance(update, AddSnapshotUpdate) and base.snapshot_by_id(update.snapshot.snapshot_id) is None:
            added.setdefault(update.snapshot.snapshot_id, update.snapshot)
        elif isinstance(update, RemoveSnapshotRefUpdate):
            heads.pop(update.ref_name, None)
        elif isinstance(update, SetSnapshotRefUpdate):
            snapshot = added.pop(update.snapshot_id, None)  # only the first branch set to it can be its base
            head = heads.get(update.ref_name)
            heads[update.ref_name] = update.snapshot_id
            if snapshot is None or update.type != SnapshotRefType.BRANCH or head is None:
                continue
            if (snapshot.parent_snapshot_id == head and head not in stale) or update.ref_name in pinned:
                continue
            _check_append(snapshot, update.ref_name, head)
            stale[snapshot.snapshot_id] = head
    return stale


def _check_append(snapshot: Snapshot, branch: str, head: int) -> None:
    operation = snapshot.summary.operation if snapshot.summary is not None else None
    if operation != Operation.APPEND:
        kind = operation.value if operation is not None else "unknown operation"
        raise CommitFailed(
            f"Cannot commit snapshot {snapshot.snapshot_id} ({kind}) to branch {branch}: it is based on snapshot "
            f"{snapshot.parent_snapshot_id} but the branch is at {head} now, and only appends are rebased by the "
            "server; refresh the table and retry"
        )


def rebase_updates(
    io: FileIO, base: TableMetadata, requirements: Sequence[TableRequirement], updates: Sequence[TableUpdate]
) -> list[TableUpdate]:
    """``updates`` with every stale append (see ``stale_snapshots``) rewritten onto its branch head.

    Blocking: reads manifest lists and the appended manifests; writes, per rebase, a copy of each
    appended manifest and one manifest list.
    """
    stale = stale_snapshots(base, requirements, updates)
    snapshots = {s.snapshot_id: s for s in base.snapshots}
    originals: dict[int, Snapshot] = {}
    last_sequence = getattr(base, "last_sequence_number", 0)  # v1 metadata has none
    result = list(updates)
    for index, update in enumerate(updates):
        if isinstance(update, AddSnapshotUpdate):
            snapshot = update.snapshot
            if snapshot.snapshot_id in stale:
                head = snapshots.get(stale[snapshot.snapshot_id])
                if head is None:
                    raise BadRequest(
                        f"Cannot rebase snapshot {snapshot.snapshot_id}: its branch head is added after it"
                    )
                parent = _parent(snapshot, originals, snapshots)
                originals[snapshot.snapshot_id] = snapshot
                snapshot = _rebase(io, base, snapshot, parent, head, last_sequence + 1)
                result[index] = update.model_copy(update={"snapshot": snapshot})
            snapshots.setdefault(snapshot.snapshot_id, snapshot)
            if base.format_version > 1 and snapshot.sequence_number is not None:
                last_sequence = snapshot.sequence_number
    return result


def _parent(snapshot: Snapshot, originals: dict[int, Snapshot], snapshots: dict[int, Snapshot]) -> Snapshot | None:
    """The snapshot the client built on, as the client saw it (before a rebase in this commit)."""
    parent_id = snapshot.parent_snapshot_id
    if parent_id is None:
        return None
    parent = originals.get(parent_id) or snapshots.get(parent_id)
    if parent is None:
        raise CommitFailed(
            f"Cannot rebase snapshot {snapshot.snapshot_id}: its parent {parent_id} no longer exists; "
            "refresh the table and retry"
        )
    return parent


def _rebase(
    io: FileIO, base: TableMetadata, snapshot: Snapshot, parent: Snapshot | None, head: Snapshot, sequence: int
) -> Snapshot:
    """Write ``snapshot``'s added manifests + ``head``'s manifests to a new list; return the new snapshot."""
    sequence_number = sequence if base.format_version > 1 else snapshot.sequence_number  # v1: none kept
    own = _read_list(io, snapshot)
    added = [(m, _appended_entries(io, snapshot, m)) for m in own if m.added_snapshot_id == snapshot.snapshot_id]
    _check_kept_parent(snapshot, [m for m in own if m.added_snapshot_id != snapshot.snapshot_id], parent, io)
    directory = snapshot.manifest_list.rsplit("/", 1)[0]
    codec = base.properties.get(AVRO_COMPRESSION, AVRO_COMPRESSION_DEFAULT)
    manifests = [_copy(io, base, snapshot, m, entries, directory, codec) for m, entries in added]
    manifests += _read_list(io, head)
    location = f"{directory}/snap-{snapshot.snapshot_id}-1-{uuid.uuid4()}.avro"
    with write_manifest_list(
        format_version=base.format_version,
        output_file=io.new_output(location),
        snapshot_id=snapshot.snapshot_id,
        parent_snapshot_id=head.snapshot_id,
        sequence_number=sequence_number,
        avro_compression=codec,  # type: ignore[arg-type]  # a table property string, checked by the Avro writer
    ) as writer:
        writer.add_manifests(manifests)
    return snapshot.model_copy(
        update={
            "parent_snapshot_id": head.snapshot_id,
            "sequence_number": sequence_number,
            "timestamp_ms": max(snapshot.timestamp_ms, head.timestamp_ms, base.last_updated_ms),
            "manifest_list": location,
            "summary": _summary(snapshot, head),
        }
    )


def _summary(snapshot: Snapshot, head: Snapshot) -> Summary:
    """The snapshot's own summary with totals recomputed from the head's, as SnapshotProducer does."""
    own = {k: v for k, v in (snapshot.summary.additional_properties if snapshot.summary else {}).items()}
    for key in _TOTALS:
        own.pop(key, None)
    previous = head.summary if head.summary is not None else Summary(Operation.APPEND)  # no totals: none carried
    return update_snapshot_summaries(Summary(Operation.APPEND, **own), previous)


def _copy(
    io: FileIO,
    base: TableMetadata,
    snapshot: Snapshot,
    manifest: ManifestFile,
    entries: list[ManifestEntry],
    directory: str,
    codec: str,
) -> ManifestFile:
    """The appended manifest rewritten to a new path, its sequence numbers left for the list writer to assign.

    Same entries (ADDED, inheriting). A new path, because clients cache manifest-list entries by manifest
    path (pyiceberg's ``_manifest_cache``): a writer that read its own unrebased list (a transaction of
    several appends does) would otherwise keep the stale sequence number for that path.
    """
    spec = base.specs()[manifest.partition_spec_id]
    schema = base.schema_by_id(snapshot.schema_id) if snapshot.schema_id is not None else None
    output = io.new_output(f"{directory}/{uuid.uuid4()}-m0.avro")
    with write_manifest(
        base.format_version,
        spec,
        schema or base.schema(),
        output,
        snapshot.snapshot_id,
        codec,  # type: ignore[arg-type]
    ) as writer:
        for entry in entries:
            writer.add(entry)
    return writer.to_manifest_file()


def _read_list(io: FileIO, snapshot: Snapshot) -> list[ManifestFile]:
    """The manifest list, read afresh (pyiceberg's manifest cache hands out shared, mutable objects)."""
    try:
        return list(read_manifest_list(io.new_input(snapshot.manifest_list)))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BadRequest(
            f"Cannot rebase onto or from snapshot {snapshot.snapshot_id}: "
            f"cannot read manifest list {snapshot.manifest_list}: {exc}"
        ) from exc


def _check_kept_parent(snapshot: Snapshot, kept: list[ManifestFile], parent: Snapshot | None, io: FileIO) -> None:
    """An append keeps every parent manifest that still has live files (pyiceberg drops empty ones)."""
    parent_manifests = {m.manifest_path: m for m in _read_list(io, parent)} if parent is not None else {}
    kept_paths = {m.manifest_path for m in kept}
    foreign = kept_paths - parent_manifests.keys()
    dropped = [m for path, m in parent_manifests.items() if path not in kept_paths and _may_have_live_files(m)]
    if foreign or dropped:
        raise CommitFailed(
            f"Cannot rebase snapshot {snapshot.snapshot_id}: it is labelled append but does not only add "
            f"manifests to its parent {snapshot.parent_snapshot_id}; refresh the table and retry"
        )


def _may_have_live_files(manifest: ManifestFile) -> bool:
    return manifest.has_added_files() or manifest.has_existing_files()


def _appended_entries(io: FileIO, snapshot: Snapshot, manifest: ManifestFile) -> list[ManifestEntry]:
    """The manifest's entries, after checking each is a data file ADDED by ``snapshot`` that inherits
    its sequence numbers (raises CommitFailed otherwise)."""
    problem = None
    entries: list[ManifestEntry] = []
    if manifest.content != ManifestContent.DATA:
        problem = "adds a delete manifest"
    else:
        entries = _raw_entries(io, manifest)
        for entry in entries:
            if entry.status != ManifestEntryStatus.ADDED or entry.data_file.content != DataFileContent.DATA:
                problem = "has entries that are not added data files"
            elif entry.snapshot_id not in (None, snapshot.snapshot_id):
                problem = f"has an entry of snapshot {entry.snapshot_id}"
            elif entry.sequence_number is not None or entry.file_sequence_number is not None:
                problem = "has an entry with an explicit sequence number"
            if problem:
                break
    if problem:
        raise CommitFailed(
            f"Cannot rebase snapshot {snapshot.snapshot_id}: manifest {manifest.manifest_path} {problem}; "
            "refresh the table and retry"
        )
    return entries


def _raw_entries(io: FileIO, manifest: ManifestFile) -> list[ManifestEntry]:
    """The manifest's entries as written, deleted ones included and nothing inherited from the list."""
    try:
        with AvroFile[ManifestEntry](
            io.new_input(manifest.manifest_path),
            MANIFEST_ENTRY_SCHEMAS[DEFAULT_READ_VERSION],
            read_types={-1: ManifestEntry, 2: DataFile},
            read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
        ) as reader:
            return list(reader)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BadRequest(f"Cannot rebase: cannot read manifest {manifest.manifest_path}: {exc}") from exc
