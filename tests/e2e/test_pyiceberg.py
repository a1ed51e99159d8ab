"""pyiceberg's RestCatalog against the served proxy (the ``local`` catalog, file:// warehouse)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DateType, DoubleType, IntegerType, LongType, NestedField, StringType

from tests.support.rest import expunge_dropped
from tests.support.server import ProxyProcess

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False),
)
ARROW = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])
BY_REGION = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))


def rest_catalog(proxy: ProxyProcess, name: str = "irc") -> RestCatalog:
    return RestCatalog(name, uri=proxy.url, warehouse="local")


@pytest.fixture
def catalog(proxy: ProxyProcess) -> RestCatalog:
    return rest_catalog(proxy)


@pytest.fixture
def ns(catalog: RestCatalog, ns_name: str) -> Iterator[tuple[str, ...]]:
    """A fresh two-level namespace ``(<unique>, "sales")``."""
    namespace = (ns_name, "sales")
    catalog.create_namespace(namespace)
    yield namespace


def rows(*items: tuple[int, str, float]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "region": r, "amount": a} for i, r, a in items], schema=ARROW)


def ids(table: Table, **scan: object) -> list[int]:
    result = table.scan(**scan).to_arrow()  # type: ignore[arg-type]
    return sorted(result.column("id").to_pylist())


def local_path(location: str) -> Path:
    return Path(urlparse(location).path)


def test_nested_namespaces_list_and_properties(catalog: RestCatalog, ns_name: str) -> None:
    catalog.create_namespace((ns_name, "sales"), {"owner": "alice", "team": "blue"})
    catalog.create_namespace((ns_name, "ops"))
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace((ns_name, "sales"))

    assert (ns_name,) in catalog.list_namespaces()  # the parent was created implicitly
    assert sorted(catalog.list_namespaces((ns_name,))) == [(ns_name, "ops"), (ns_name, "sales")]
    assert catalog.list_namespaces((ns_name, "sales")) == []
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_namespaces((ns_name, "missing"))
    assert catalog.namespace_exists((ns_name, "sales"))
    assert not catalog.namespace_exists((ns_name, "missing"))

    assert catalog.load_namespace_properties((ns_name, "sales")) == {"owner": "alice", "team": "blue"}
    summary = catalog.update_namespace_properties(
        (ns_name, "sales"), removals={"team", "nope"}, updates={"owner": "bob", "cost-center": "42"}
    )
    assert sorted(summary.updated) == ["cost-center", "owner"]
    assert summary.removed == ["team"]
    assert summary.missing == ["nope"]
    assert catalog.load_namespace_properties((ns_name, "sales")) == {"owner": "bob", "cost-center": "42"}

    catalog.drop_namespace((ns_name, "ops"))
    assert catalog.list_namespaces((ns_name,)) == [(ns_name, "sales")]


def test_namespace_levels_with_special_characters(catalog: RestCatalog, ns_name: str) -> None:
    """pyiceberg percent-encodes each level of ``parent`` (Java sends them raw); both must list."""
    top = f"{ns_name} x+1"
    namespace = (top, "sa/les.eu%", "q 1")
    catalog.create_namespace(namespace, {"k": "v"})
    assert catalog.list_namespaces((top,)) == [(top, "sa/les.eu%")]
    assert catalog.list_namespaces((top, "sa/les.eu%")) == [namespace]
    assert catalog.list_namespaces(namespace) == []
    assert catalog.load_namespace_properties(namespace) == {"k": "v"}

    schema = pa.schema([("id", pa.int64())])
    table = catalog.create_table((*namespace, "t y/z"), schema)
    table.append(pa.Table.from_pylist([{"id": 1}], schema=schema))
    assert catalog.list_tables(namespace) == [(*namespace, "t y/z")]
    assert ids(catalog.load_table((*namespace, "t y/z"))) == [1]


def test_partitioned_table_append_overwrite_delete_scan(catalog: RestCatalog, ns: tuple[str, ...]) -> None:
    ident = (*ns, "orders")
    table = catalog.create_table(ident, SCHEMA, partition_spec=BY_REGION)
    assert catalog.table_exists(ident)
    assert (ident) in catalog.list_tables(ns)
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table(ident, SCHEMA)
    assert table.spec().fields[0].name == "region"

    table.append(rows((1, "eu", 10.0), (2, "eu", 20.0), (3, "us", 30.0), (4, "apac", 40.0)))
    table.append(rows((5, "us", 50.0)))
    assert ids(table) == [1, 2, 3, 4, 5]
    assert len(table.metadata.snapshots) == 2

    # Scans with filters, from a fresh load through the catalog.
    loaded = catalog.load_table(ident)
    assert ids(loaded, row_filter="region = 'us'") == [3, 5]
    assert ids(loaded, row_filter="amount >= 20.0 and region in ('eu', 'apac')") == [2, 4]
    assert ids(loaded, row_filter="region = 'eu' and amount < 15") == [1]
    projected = loaded.scan(row_filter="id = 4", selected_fields=("id", "amount")).to_arrow()
    assert projected.column_names == ["id", "amount"]
    assert projected.to_pylist() == [{"id": 4, "amount": 40.0}]

    # Overwrite with a filter replaces only the matching rows.
    table.overwrite(rows((6, "us", 60.0)), overwrite_filter="region = 'us'")
    assert ids(catalog.load_table(ident)) == [1, 2, 4, 6]

    # Delete with a filter (whole partition, then a row inside a partition).
    table.delete(delete_filter="region = 'apac'")
    table.delete(delete_filter="id = 1")
    final = catalog.load_table(ident)
    assert final.scan().to_arrow().sort_by("id").to_pylist() == [
        {"id": 2, "region": "eu", "amount": 20.0},
        {"id": 6, "region": "us", "amount": 60.0},
    ]
    assert final.metadata.current_snapshot_id == table.metadata.current_snapshot_id
    operations = [s.summary.operation.value for s in final.snapshots() if s.summary is not None]
    assert operations[:2] == ["append", "append"]
    assert "delete" in operations and "overwrite" in operations

    # A full overwrite replaces everything.
    table.overwrite(rows((7, "eu", 70.0)))
    assert ids(catalog.load_table(ident)) == [7]


def test_schema_evolution_then_append_and_read(catalog: RestCatalog, ns: tuple[str, ...]) -> None:
    ident = (*ns, "evolving")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "qty", IntegerType(), required=False),
        NestedField(3, "note", StringType(), required=False),
    )
    table = catalog.create_table(ident, schema)
    table.append(pa.Table.from_pylist([{"id": 1, "qty": 5, "note": "old"}], schema=schema.as_arrow()))

    with table.update_schema() as update:
        update.add_column("day", DateType(), doc="added later")
        update.rename_column("note", "comment")
        update.update_column("qty", field_type=LongType())  # int -> long promotion

    reloaded = catalog.load_table(ident)
    assert reloaded.metadata.current_schema_id == 1
    assert len(reloaded.metadata.schemas) == 2
    fields = {f.name: f for f in reloaded.schema().fields}
    assert set(fields) == {"id", "qty", "comment", "day"}
    assert fields["qty"].field_type == LongType()
    assert fields["comment"].field_id == 3  # renamed, same id
    assert fields["day"].doc == "added later"

    import datetime

    new_rows = pa.Table.from_pylist(
        [{"id": 2, "qty": 2**40, "comment": "new", "day": datetime.date(2026, 1, 2)}],
        schema=reloaded.schema().as_arrow(),
    )
    reloaded.append(new_rows)
    result = catalog.load_table(ident).scan().to_arrow().sort_by("id").to_pylist()
    assert result == [
        {"id": 1, "qty": 5, "comment": "old", "day": None},
        {"id": 2, "qty": 2**40, "comment": "new", "day": datetime.date(2026, 1, 2)},
    ]

    # Dropping a column and reading the old data back.
    with reloaded.update_schema() as update:
        update.delete_column("comment")
    assert catalog.load_table(ident).scan().to_arrow().column_names == ["id", "qty", "day"]


def test_partition_spec_evolution(catalog: RestCatalog, ns: tuple[str, ...]) -> None:
    ident = (*ns, "respec")
    table = catalog.create_table(ident, SCHEMA)
    assert table.spec().is_unpartitioned()
    table.append(rows((1, "eu", 1.0), (2, "us", 2.0)))

    with table.update_spec() as update:
        # Only identity transforms: pyarrow writes of the others need pyiceberg-core (not installed).
        update.add_identity("region")
        update.add_field("id", IdentityTransform(), "id_part")
    table.append(rows((3, "eu", 3.0), (4, "us", 4.0)))

    reloaded = catalog.load_table(ident)
    assert reloaded.metadata.default_spec_id == 1
    assert [f.name for f in reloaded.spec().fields] == ["region", "id_part"]
    assert len(reloaded.specs()) == 2
    assert ids(reloaded) == [1, 2, 3, 4]
    assert ids(reloaded, row_filter="region = 'us'") == [2, 4]
    # Data files were written with both specs.
    spec_ids = {task.file.spec_id for task in reloaded.scan().plan_files()}
    assert spec_ids == {0, 1}

    with reloaded.update_spec() as update:
        update.remove_field("id_part")
    assert [f.name for f in catalog.load_table(ident).spec().fields] == ["region"]


def test_create_table_transaction(catalog: RestCatalog, ns: tuple[str, ...]) -> None:
    ident = (*ns, "staged")
    with catalog.create_table_transaction(ident, SCHEMA, partition_spec=BY_REGION, properties={"a": "1"}) as tx:
        # Nothing is visible until the transaction commits.
        assert not catalog.table_exists(ident)
        tx.set_properties(b="2")
        tx.append(rows((1, "eu", 1.5), (2, "us", 2.5)))

    table = catalog.load_table(ident)
    assert table.properties["a"] == "1"
    assert table.properties["b"] == "2"
    assert [f.name for f in table.spec().fields] == ["region"]
    assert ids(table) == [1, 2]
    assert len(table.metadata.snapshots) == 1

    # A second create transaction for the same name fails with the spec's AlreadyExists.
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table_transaction(ident, SCHEMA)


def test_multi_step_transaction(catalog: RestCatalog, ns: tuple[str, ...]) -> None:
    ident = (*ns, "multi")
    table = catalog.create_table(ident, SCHEMA)
    table.append(rows((1, "eu", 1.0)))
    before = catalog.load_table(ident).metadata_location

    with table.transaction() as tx:
        tx.set_properties(stage="loaded", owner="etl")
        tx.append(rows((2, "us", 2.0), (3, "us", 3.0)))
        tx.remove_properties("owner")
        with tx.update_schema() as update:
            update.add_column("extra", StringType())

    reloaded = catalog.load_table(ident)
    # One commit: exactly one new metadata file after the transaction.
    assert reloaded.metadata_location != before
    assert [entry.metadata_file for entry in reloaded.metadata.metadata_log][-1] == before
    assert reloaded.properties["stage"] == "loaded"
    assert "owner" not in reloaded.properties
    assert "extra" in reloaded.schema().column_names
    assert ids(reloaded) == [1, 2, 3]
    assert len(reloaded.metadata.snapshots) == 2


def test_concurrent_appends_from_two_clients_all_land(proxy: ProxyProcess, ns: tuple[str, ...]) -> None:
    ident = (*ns, "concurrent")
    setup = rest_catalog(proxy, "setup")
    # Client-side retries refresh and re-apply the append after a 409 (the AssertRefSnapshotId
    # requirement of an append cannot hold against a newer main); the server re-bases commits
    # whose requirements still hold when its compare-and-swap loses a race.
    setup.create_table(
        ident,
        SCHEMA,
        properties={
            "commit.retry.num-retries": "30",
            "commit.retry.min-wait-ms": "5",
            "commit.retry.max-wait-ms": "200",
        },
    )
    clients = [rest_catalog(proxy, "writer-a"), rest_catalog(proxy, "writer-b")]
    per_client = 6
    start = threading.Barrier(len(clients))
    errors: list[BaseException] = []

    def writer(index: int, client: RestCatalog) -> None:
        try:
            table = client.load_table(ident)
            start.wait()
            for n in range(per_client):
                row_id = index * 100 + n
                table.append(rows((row_id, f"client-{index}", float(n))))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i, c)) for i, c in enumerate(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors

    table = setup.load_table(ident)
    expected = sorted(i * 100 + n for i in range(len(clients)) for n in range(per_client))
    assert ids(table) == expected
    assert len(table.metadata.snapshots) == len(expected)
    # The snapshots form one linear history.
    assert len(list(table.history())) == len(expected)


def test_concurrent_property_commits_are_rebased_by_the_server(proxy: ProxyProcess, ns: tuple[str, ...]) -> None:
    """pyiceberg never retries a commit without a snapshot: only the server's re-basing makes these all land."""
    ident = (*ns, "props")
    rest_catalog(proxy, "setup").create_table(ident, SCHEMA)
    clients = [rest_catalog(proxy, f"writer-{i}") for i in range(4)]
    tables = [client.load_table(ident) for client in clients]  # all load the same base metadata
    start = threading.Barrier(len(tables))
    errors: list[BaseException] = []

    def writer(index: int, table: Table) -> None:
        try:
            start.wait()
            for n in range(5):
                table.transaction().set_properties({f"k{index}-{n}": "v"}).commit_transaction()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i, t)) for i, t in enumerate(tables)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    properties = rest_catalog(proxy).load_table(ident).properties
    assert {f"k{i}-{n}" for i in range(4) for n in range(5)} <= set(properties)


def test_stale_conflicting_commit_fails(proxy: ProxyProcess, ns: tuple[str, ...]) -> None:
    ident = (*ns, "stale")
    first, second = rest_catalog(proxy, "first"), rest_catalog(proxy, "second")
    first.create_table(ident, SCHEMA, properties={"commit.retry.num-retries": "0"})
    stale = second.load_table(ident)
    fresh = first.load_table(ident)

    with fresh.update_schema() as update:
        update.add_column("added_by_first", StringType())

    # The stale schema change asserts current-schema-id 0 / last-assigned-field-id 3: both changed.
    with pytest.raises(CommitFailedException, match="changed"), stale.update_schema() as update:
        update.add_column("added_by_second", StringType())

    # A stale append asserts main's snapshot (or its absence): it fails too when retries are disabled.
    fresh.append(rows((1, "eu", 1.0)))
    with pytest.raises(CommitFailedException, match="branch main was created concurrently"):
        stale.append(rows((2, "us", 2.0)))
    stale = second.load_table(ident)
    fresh.append(rows((3, "eu", 3.0)))
    with pytest.raises(CommitFailedException, match="branch main has changed"):
        stale.append(rows((4, "us", 4.0)))

    table = first.load_table(ident)
    assert "added_by_second" not in table.schema().column_names
    assert ids(table) == [1, 3]


def test_rename_table(catalog: RestCatalog, ns: tuple[str, ...], ns_name: str) -> None:
    source = (*ns, "before")
    catalog.create_table(source, SCHEMA).append(rows((1, "eu", 1.0)))
    catalog.create_namespace((ns_name, "archive"))
    target = (ns_name, "archive", "after")

    renamed = catalog.rename_table(source, target)
    assert renamed.name() == target
    assert not catalog.table_exists(source)
    assert catalog.list_tables(ns) == []
    assert catalog.list_tables((ns_name, "archive")) == [target]
    assert ids(catalog.load_table(target)) == [1]
    with pytest.raises(NoSuchTableError):
        catalog.rename_table(source, target)
    with pytest.raises(NoSuchNamespaceError):
        catalog.rename_table(target, (ns_name, "nowhere", "x"))


def test_drop_register_and_purge(catalog: RestCatalog, ns: tuple[str, ...]) -> None:
    ident = (*ns, "kept")
    table = catalog.create_table(ident, SCHEMA, partition_spec=BY_REGION)
    table.append(rows((1, "eu", 1.0), (2, "us", 2.0)))
    table.append(rows((3, "us", 3.0)))
    last_metadata = catalog.load_table(ident).metadata_location
    data_files = [local_path(t.file.file_path) for t in table.scan().plan_files()]
    assert data_files and all(p.exists() for p in data_files)

    # Drop without purge keeps the files; the last metadata file can be registered again.
    catalog.drop_table(ident)
    assert not catalog.table_exists(ident)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(ident)
    assert local_path(last_metadata).exists()
    assert all(p.exists() for p in data_files)

    restored_ident = (*ns, "restored")
    restored = catalog.register_table(restored_ident, last_metadata)
    assert restored.metadata_location == last_metadata
    assert ids(catalog.load_table(restored_ident)) == [1, 2, 3]
    with pytest.raises(TableAlreadyExistsError):
        catalog.register_table(restored_ident, last_metadata)

    # The registered table takes new commits on top of the registered metadata.
    restored.append(rows((4, "eu", 4.0)))
    reloaded = catalog.load_table(restored_ident)
    assert ids(reloaded) == [1, 2, 3, 4]
    assert reloaded.metadata.metadata_log[-1].metadata_file == last_metadata

    # Purge deletes the data and metadata files the table references.
    all_data = [local_path(t.file.file_path) for t in reloaded.scan().plan_files()]
    manifest_lists = [local_path(s.manifest_list) for s in reloaded.snapshots()]
    catalog.purge_table(restored_ident)
    assert not catalog.table_exists(restored_ident)
    assert all(p.exists() for p in all_data)  # the purge waits in the trash until expunged or expired
    expunge_dropped(catalog.properties["uri"], "local", ns, "restored")
    assert not any(p.exists() for p in all_data)
    assert not any(p.exists() for p in manifest_lists)
    assert not local_path(reloaded.metadata_location).exists()
    with pytest.raises(NoSuchTableError):
        catalog.drop_table(restored_ident)


def test_date_partitioned_table_with_filter_pruning(catalog: RestCatalog, ns: tuple[str, ...]) -> None:
    import datetime

    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "day", DateType(), required=False),
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="day"))
    table = catalog.create_table((*ns, "daily"), schema, partition_spec=spec)
    base = datetime.date(2026, 3, 1)
    data = [{"id": i, "day": base + datetime.timedelta(days=i % 3)} for i in range(9)]
    table.append(pa.Table.from_pylist(data, schema=schema.as_arrow()))
    scan = catalog.load_table((*ns, "daily")).scan(row_filter=f"day = '{base.isoformat()}'")
    assert len(list(scan.plan_files())) == 1  # partition pruning on the server-written metadata
    assert sorted(scan.to_arrow().column("id").to_pylist()) == [0, 3, 6]
