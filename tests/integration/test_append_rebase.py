"""Server-side rebase of blind appends (handling/tables/rebase.py), with pyiceberg writing real data and manifests.

"Blind" writers send pyiceberg's own commits minus ``assert-ref-snapshot-id``, so only
``assert-table-uuid`` guards them: their appends built on a stale parent must be rebased onto the
branch head, never lose a row and never see a 409. Writers that pin the branch still get their 409.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.table.update import AssertRefSnapshotId, TableRequirement, TableUpdate
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from tests.e2e.test_duckdb import connect
from tests.support.server import ProxyProcess

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "part", StringType(), required=False))
NO_CLIENT_RETRY = {"commit.retry.num-retries": "0"}


class BlindRestCatalog(RestCatalog):
    """pyiceberg's REST client with ``assert-ref-snapshot-id`` dropped: its commits pin only the table UUID.

    Counts the 409s it gets (pyiceberg would otherwise retry them silently).
    """

    conflicts = 0

    def commit_table(
        self, table: Table, requirements: tuple[TableRequirement, ...], updates: tuple[TableUpdate, ...]
    ) -> CommitTableResponse:
        kept = tuple(r for r in requirements if not isinstance(r, AssertRefSnapshotId))
        assert len(kept) == len(requirements) - 1  # pyiceberg pinned the branch; the assert-table-uuid stays
        try:
            response: CommitTableResponse = super().commit_table(table, kept, updates)
        except CommitFailedException:
            self.conflicts += 1
            raise
        return response


def blind(proxy: ProxyProcess, name: str = "blind") -> BlindRestCatalog:
    return BlindRestCatalog(name, uri=proxy.url, warehouse="local")


def ids(start: int, count: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "part": "p"} for i in range(start, start + count)], schema=SCHEMA.as_arrow())


def create(
    proxy: ProxyProcess, ns_name: str, properties: dict[str, str] | None = None, spec: PartitionSpec | None = None
) -> tuple[str, str]:
    setup = RestCatalog("setup", uri=proxy.url, warehouse="local")
    setup.create_namespace(ns_name)
    setup.create_table(
        (ns_name, "t"), schema=SCHEMA, properties=properties or {}, partition_spec=spec or UNPARTITIONED_PARTITION_SPEC
    )
    return ns_name, "t"


def chain(table: Table) -> list[Snapshot]:
    """The main branch's snapshots, oldest first, following parent ids from the head."""
    by_id = {s.snapshot_id: s for s in table.metadata.snapshots}
    lineage: list[Snapshot] = []
    current = table.current_snapshot()
    while current is not None:
        lineage.append(current)
        current = by_id.get(current.parent_snapshot_id) if current.parent_snapshot_id is not None else None
    return lineage[::-1]


def assert_linear_history(table: Table, appends: int, rows_per_append: int) -> list[Snapshot]:
    """One chain holding every snapshot, increasing sequence numbers (v2), running totals that add up."""
    lineage = chain(table)
    assert len(lineage) == len(table.metadata.snapshots) == appends
    files_size = 0
    for position, snapshot in enumerate(lineage, start=1):
        summary = snapshot.summary
        assert summary is not None and summary.operation.value == "append"
        files_size += int(summary["added-files-size"] or 0)
        assert summary["total-records"] == str(position * rows_per_append)
        assert summary["total-data-files"] == str(position)
        assert summary["total-files-size"] == str(files_size)
        assert summary["total-delete-files"] == "0"
    if table.metadata.format_version > 1:
        assert [s.sequence_number for s in lineage] == list(range(1, appends + 1))
        assert getattr(table.metadata, "last_sequence_number", None) == appends
    return lineage


def assert_entries_inherit_their_snapshot(table: Table, lineage: list[Snapshot]) -> None:
    """Each live data file carries the sequence number of the (rebased) snapshot that added it."""
    sequence = {s.snapshot_id: s.sequence_number for s in lineage}
    entries = table.inspect.entries().to_pylist()
    assert len(entries) == len(lineage)
    for entry in entries:
        assert entry["status"] == 1  # ADDED
        assert entry["sequence_number"] == sequence[entry["snapshot_id"]]
        assert entry["file_sequence_number"] == sequence[entry["snapshot_id"]]


def test_concurrent_blind_appends_are_rebased_and_nothing_is_lost(
    proxy: ProxyProcess, ns_name: str, tmp_path: Path
) -> None:
    writers, appends, rows = 4, 5, 3
    ident = create(proxy, ns_name)
    catalogs = [blind(proxy, f"w{n}") for n in range(writers)]
    tables = [c.load_table(ident) for c in catalogs]  # each writer keeps its own, soon stale, metadata
    start = threading.Barrier(writers)
    failures: list[BaseException] = []

    def write(number: int) -> None:
        try:
            start.wait()
            for i in range(appends):
                tables[number].append(ids((number * appends + i) * rows, rows))
        except BaseException as exc:  # reported below, on the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert sum(c.conflicts for c in catalogs) == 0

    table = blind(proxy).load_table(ident)
    total = writers * appends * rows
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == list(range(total))
    lineage = assert_linear_history(table, writers * appends, rows)
    assert_entries_inherit_their_snapshot(table, lineage)

    duck = connect(proxy, tmp_path / "duckdb")
    try:
        found = duck.execute(f"SELECT count(*), count(DISTINCT id) FROM irc.{ns_name}.t").fetchone()
    finally:
        duck.close()
    assert found == (total, total)


@pytest.mark.parametrize(("format_version", "partitioned"), [("1", False), ("2", False), ("2", True)])
def test_stale_blind_append_is_rebased_onto_the_head(
    proxy: ProxyProcess, ns_name: str, format_version: str, partitioned: bool
) -> None:
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part")) if partitioned else None
    ident = create(proxy, ns_name, {"format-version": format_version}, spec)
    ahead, behind = blind(proxy, "ahead").load_table(ident), blind(proxy, "behind").load_table(ident)
    for i in range(3):
        ahead.append(ids(i * 10, 10))
    head = ahead.current_snapshot()
    assert head is not None

    behind.append(ids(100, 10))  # built on the empty table: parent None, sequence number 1

    table = blind(proxy).load_table(ident)
    assert table.metadata.format_version == int(format_version)
    assert table.scan().to_arrow().num_rows == 40
    lineage = assert_linear_history(table, 4, 10)
    assert lineage[-1].parent_snapshot_id == head.snapshot_id
    assert_entries_inherit_their_snapshot(table, lineage)
    manifests = lineage[-1].manifests(table.io)
    assert manifests[0].added_snapshot_id == lineage[-1].snapshot_id  # its own manifest first
    assert {m.manifest_path for m in head.manifests(table.io)} <= {m.manifest_path for m in manifests}


def test_stale_blind_transaction_of_two_appends_is_rebased_as_a_chain(proxy: ProxyProcess, ns_name: str) -> None:
    ident = create(proxy, ns_name)
    ahead, behind = blind(proxy, "ahead").load_table(ident), blind(proxy, "behind").load_table(ident)
    ahead.append(ids(0, 5))
    with behind.transaction() as transaction:
        transaction.append(ids(5, 5))
        transaction.append(ids(10, 5))

    table = blind(proxy).load_table(ident)
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == list(range(15))
    assert_entries_inherit_their_snapshot(table, assert_linear_history(table, 3, 5))


@pytest.mark.parametrize("operation", ["delete", "overwrite"])
def test_stale_blind_non_append_is_409_and_changes_nothing(proxy: ProxyProcess, ns_name: str, operation: str) -> None:
    ident = create(proxy, ns_name, NO_CLIENT_RETRY)
    ahead, behind = blind(proxy, "ahead").load_table(ident), blind(proxy, "behind").load_table(ident)
    behind.append(ids(0, 5))
    ahead = ahead.refresh()
    ahead.append(ids(5, 5))
    before = blind(proxy).load_table(ident).metadata_location

    with pytest.raises(CommitFailedException, match="only appends are rebased by the server"):
        if operation == "delete":
            behind.delete("id < 3")
        else:
            behind.overwrite(ids(50, 1))

    table = blind(proxy).load_table(ident)
    assert table.metadata_location == before
    assert table.scan().to_arrow().num_rows == 10
    behind.refresh().delete("id < 3")  # refreshed: its parent is the head, nothing to rebase
    assert blind(proxy).load_table(ident).scan().to_arrow().num_rows == 7


def test_stale_blind_append_with_merged_manifests_is_409(proxy: ProxyProcess, ns_name: str) -> None:
    merging = {"commit.manifest-merge.enabled": "true", "commit.manifest.min-count-to-merge": "2"}
    ident = create(proxy, ns_name, NO_CLIENT_RETRY | merging)
    ahead, behind = blind(proxy, "ahead").load_table(ident), blind(proxy, "behind").load_table(ident)
    behind.append(ids(0, 1))
    behind.append(ids(1, 1))  # merge-append: its manifest holds EXISTING entries of the first
    ahead.refresh().append(ids(2, 1))
    with pytest.raises(CommitFailedException, match="not added data files"):
        behind.append(ids(3, 1))
    assert blind(proxy).load_table(ident).scan().to_arrow().num_rows == 3


def test_append_pinning_the_branch_still_gets_409(proxy: ProxyProcess, ns_name: str) -> None:
    ident = create(proxy, ns_name, NO_CLIENT_RETRY)
    pinning = RestCatalog("pinning", uri=proxy.url, warehouse="local")
    ahead, behind = pinning.load_table(ident), pinning.load_table(ident)
    ahead.append(ids(0, 5))
    with pytest.raises(CommitFailedException, match="Requirement failed: branch main was created concurrently"):
        behind.append(ids(5, 5))
    ahead.append(ids(10, 5))
    behind = behind.refresh()
    ahead.append(ids(15, 5))
    with pytest.raises(CommitFailedException, match="Requirement failed: branch main has changed"):
        behind.append(ids(20, 5))
    assert pinning.load_table(ident).scan().to_arrow().num_rows == 15
