"""Which snapshots and refs an expiry removes: Iceberg Java's ``RemoveSnapshots`` rules, as a pure function.

* ``main`` is always kept; another ref goes when its head is older than its ``max-ref-age-ms`` (else the
  table's ``history.expire.max-ref-age-ms``, default forever), or when its snapshot does not exist;
* a kept branch keeps its ancestors while fewer than its ``min-snapshots-to-keep`` are kept (else the table's
  ``history.expire.min-snapshots-to-keep``, default 1) or while they are younger than its
  ``max-snapshot-age-ms`` (else ``history.expire.max-snapshot-age-ms``, default 5 days); a kept tag keeps its
  snapshot;
* a snapshot no ref reaches is kept while younger than the table's maximum snapshot age.

Everything else is expired.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import Snapshot

MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"
DEFAULT_MAX_SNAPSHOT_AGE_MS = 5 * 24 * 60 * 60 * 1000
DEFAULT_MIN_SNAPSHOTS_TO_KEEP = 1
FOREVER = 2**63 - 1


@dataclass(frozen=True)
class Retention:
    """The table-wide defaults (refs may set their own)."""

    max_snapshot_age_ms: int = DEFAULT_MAX_SNAPSHOT_AGE_MS
    min_snapshots_to_keep: int = DEFAULT_MIN_SNAPSHOTS_TO_KEEP
    max_ref_age_ms: int = FOREVER

    @classmethod
    def of(cls, properties: Mapping[str, str]) -> Retention:
        """The table's ``history.expire.*`` properties (an unreadable value is Java's default, as Java's
        ``PropertyUtil`` would fail; we keep more rather than fail)."""
        return cls(
            _int(properties.get(MAX_SNAPSHOT_AGE_MS), DEFAULT_MAX_SNAPSHOT_AGE_MS),
            max(_int(properties.get(MIN_SNAPSHOTS_TO_KEEP), DEFAULT_MIN_SNAPSHOTS_TO_KEEP), 1),
            _int(properties.get(MAX_REF_AGE_MS), FOREVER),
        )


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


@dataclass(frozen=True)
class ExpiryPlan:
    snapshot_ids: tuple[int, ...]
    """Snapshots to remove (oldest first)."""
    refs: tuple[str, ...]
    """Refs to remove (their heads may be kept by another ref)."""
    kept_refs: Mapping[str, int]
    """Each kept ref's head at planning time (the commit asserts they did not move)."""

    @property
    def empty(self) -> bool:
        return not self.snapshot_ids and not self.refs


def ancestors(metadata: TableMetadata, snapshot_id: int) -> Iterator[Snapshot]:
    """``snapshot_id`` and its parents, newest first, as far as they exist (a loop is walked once)."""
    seen: set[int] = set()
    current = metadata.snapshot_by_id(snapshot_id)
    while current is not None and current.snapshot_id not in seen:
        seen.add(current.snapshot_id)
        yield current
        parent = current.parent_snapshot_id
        current = None if parent is None else metadata.snapshot_by_id(parent)


def _ref_kept(name: str, ref: SnapshotRef, metadata: TableMetadata, retention: Retention, now_ms: int) -> bool:
    if name == MAIN_BRANCH:
        return True
    snapshot = metadata.snapshot_by_id(ref.snapshot_id)
    if snapshot is None:
        return False
    max_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else retention.max_ref_age_ms
    return now_ms - snapshot.timestamp_ms <= max_age


def _branch_keeps(ref: SnapshotRef, metadata: TableMetadata, retention: Retention, now_ms: int) -> set[int]:
    max_age = ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else retention.max_snapshot_age_ms
    min_keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else retention.min_snapshots_to_keep
    older_than = now_ms - max_age
    kept: set[int] = set()
    for snapshot in ancestors(metadata, ref.snapshot_id):
        if len(kept) < min_keep or snapshot.timestamp_ms >= older_than:
            kept.add(snapshot.snapshot_id)
        else:
            break
    return kept


def plan_expiry(metadata: TableMetadata, now_ms: int, retention: Retention | None = None) -> ExpiryPlan:
    """What an expiry of ``metadata`` at ``now_ms`` removes (see the module)."""
    retention = retention or Retention.of(metadata.properties)
    kept_refs = {name: ref for name, ref in metadata.refs.items() if _ref_kept(name, ref, metadata, retention, now_ms)}
    keep = {ref.snapshot_id for ref in kept_refs.values()}
    referenced: set[int] = set()
    for ref in kept_refs.values():
        if ref.snapshot_ref_type == SnapshotRefType.BRANCH:
            keep |= _branch_keeps(ref, metadata, retention, now_ms)
            referenced |= {s.snapshot_id for s in ancestors(metadata, ref.snapshot_id)}
        else:
            referenced.add(ref.snapshot_id)
    older_than = now_ms - retention.max_snapshot_age_ms
    keep |= {
        s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in referenced and s.timestamp_ms >= older_than
    }
    expired = sorted((s for s in metadata.snapshots if s.snapshot_id not in keep), key=lambda s: s.timestamp_ms)
    return ExpiryPlan(
        tuple(s.snapshot_id for s in expired),
        tuple(sorted(set(metadata.refs) - set(kept_refs))),
        {name: ref.snapshot_id for name, ref in kept_refs.items()},
    )
