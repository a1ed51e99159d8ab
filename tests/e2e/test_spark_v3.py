"""Format v3 end to end with real PySpark (Iceberg 1.10.2 over REST): row lineage and deletion vectors.

Every scenario runs through the proxy on the embedded local catalog and, where marked, on a Glue catalog (moto,
``file://`` warehouse). The same statements also run on Spark's own ``hadoop`` catalog
(tests/support/spark_v3_reference.py), and after each statement the two are compared exactly: format version,
``next-row-id``, every snapshot's ``first-row-id``/``added-rows``, each branch's rows with ``_row_id`` and
``_last_updated_sequence_number``, and the live delete files. Each scenario also asserts its own invariants, so
a failure says which rule broke, not only that the proxy differs from Java.

One SparkSession is shared (tests/e2e/conftest.py); each test works in its own namespace.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

import httpx
import pytest

from tests.e2e.conftest import SPARK_CATALOG
from tests.support.aws import glue_catalog_config, moto_server
from tests.support.server import ProxyProcess
from tests.support.spark_v3_reference import (
    MOR_PROPERTIES,
    REFERENCE_CATALOG,
    ReferenceTable,
    Step,
    add_hadoop_catalog,
    current_metadata_file,
    mor_statements,
    row_lineage,
    run_and_observe,
    snapshot_lineage,
    upgrade_statements,
    write_reference_tables,
)

pytestmark = pytest.mark.spark

GLUE_CATALOG = "glue_v3"  # the proxy's Glue catalog name and the Spark catalog registered for it
FUTURE = "TIMESTAMP '2999-01-01 00:00:00'"

# A plan: (full Spark table name, catalog for CALL, table name inside the catalog) -> statements.
Plan = Callable[[str, str, str], list[str]]


def rows(spark: Any, statement: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in spark.sql(statement).collect()]


@dataclass(frozen=True)
class Target:
    """One proxy catalog as seen from Spark, with a fresh namespace."""

    label: str
    spark_catalog: str
    proxy: ProxyProcess
    prefix: str  # REST path prefix of the proxy's catalog
    ns: str
    warehouse: Path  # the catalog's file:// warehouse directory

    def table(self, name: str) -> str:
        return f"{self.spark_catalog}.{self.ns}.{name}"

    def load(self, name: str) -> dict[str, Any]:
        """The proxy's LoadTableResult for ``ns.name`` (over REST, not through Spark)."""
        response = httpx.get(
            f"{self.proxy.url}/v1/{self.prefix}/namespaces/{quote(self.ns, safe='')}/tables/{quote(name, safe='')}",
            timeout=30,
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def metadata(self, name: str) -> dict[str, Any]:
        metadata: dict[str, Any] = self.load(name)["metadata"]
        return metadata


@dataclass(frozen=True)
class Hadoop:
    """Spark's own hadoop catalog (registered on the shared session) and its warehouse directory."""

    catalog: str
    warehouse: Path

    def metadata(self, ns: str, name: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(current_metadata_file(self.warehouse / ns / name).read_text())
        return loaded


@pytest.fixture(scope="module")
def reference_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("v3-reference")


@pytest.fixture(scope="module")
def reference(spark: Any, reference_dir: Path) -> dict[str, ReferenceTable]:
    """The reference tables of tests/support/spark_v3_reference.py, written in the shared session."""
    return write_reference_tables(reference_dir, spark=spark)


@pytest.fixture(scope="module")
def hadoop(spark: Any, reference: dict[str, ReferenceTable], reference_dir: Path) -> Hadoop:
    warehouse = reference_dir / "warehouse"
    add_hadoop_catalog(spark, REFERENCE_CATALOG, warehouse)
    return Hadoop(REFERENCE_CATALOG, warehouse)


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with moto_server() as endpoint:
        httpx.post(f"{endpoint}/moto-api/reset")  # moto's backends are process-wide
        yield endpoint
        httpx.post(f"{endpoint}/moto-api/reset")


@pytest.fixture(scope="module")
def glue_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("glue-v3-warehouse")


@pytest.fixture(scope="module")
def glue_proxy(moto: str, glue_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    """A proxy whose catalog ``glue_v3`` is Glue on moto with a ``file://`` warehouse (Spark has no S3 FileIO)."""
    config = glue_catalog_config(GLUE_CATALOG, moto, glue_warehouse.as_uri())
    server = ProxyProcess(tmp_path_factory.mktemp("glue-v3-proxy"), config).start()
    yield server
    server.stop()


def rest_prefix(proxy: ProxyProcess, warehouse: str) -> str:
    config = httpx.get(f"{proxy.url}/v1/config", params={"warehouse": warehouse}, timeout=30)
    assert config.status_code == 200, config.text
    prefix: str = config.json().get("overrides", {}).get("prefix", warehouse)
    return prefix


def make_target(request: pytest.FixtureRequest, spark: Any, label: str, ns: str) -> Target:
    if label == "local":
        proxy: ProxyProcess = request.getfixturevalue("proxy")
        warehouse = proxy.workdir / "data" / "warehouse" / "local"  # tests/conftest.py's warehouse_dir
        return Target(label, SPARK_CATALOG, proxy, rest_prefix(proxy, "local"), ns, warehouse)
    glue_proxy: ProxyProcess = request.getfixturevalue("glue_proxy")
    settings = {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest", ".uri": glue_proxy.url}
    settings[".warehouse"] = GLUE_CATALOG
    for key, value in settings.items():
        spark.conf.set(f"spark.sql.catalog.{GLUE_CATALOG}{key}", value)
    glue_warehouse: Path = request.getfixturevalue("glue_warehouse")
    return Target(label, GLUE_CATALOG, glue_proxy, rest_prefix(glue_proxy, GLUE_CATALOG), ns, glue_warehouse)


def drop_namespace(spark: Any, catalog: str, ns: str) -> None:
    for row in spark.sql(f"SHOW TABLES IN {catalog}.{ns}").collect():
        spark.sql(f"DROP TABLE IF EXISTS {catalog}.{ns}.{row.tableName} PURGE")
    spark.sql(f"DROP NAMESPACE IF EXISTS {catalog}.{ns}")


def drop_hadoop_namespace(spark: Any, hadoop: Hadoop, ns: str) -> None:
    """The hadoop catalog's namespace is a directory: a registered copy may already have purged its files."""
    for row in spark.sql(f"SHOW TABLES IN {hadoop.catalog}.{ns}").collect():
        try:
            spark.sql(f"DROP TABLE IF EXISTS {hadoop.catalog}.{ns}.{row.tableName} PURGE")
        except Exception:  # its files are gone already: the directory goes instead
            shutil.rmtree(hadoop.warehouse / ns / row.tableName, ignore_errors=True)
    spark.sql(f"DROP NAMESPACE IF EXISTS {hadoop.catalog}.{ns}")


def target_in_namespace(request: pytest.FixtureRequest, spark: Any, hadoop: Hadoop, ns_name: str) -> Iterator[Target]:
    target = make_target(request, spark, request.param, ns_name)
    spark.sql(f"CREATE NAMESPACE {target.spark_catalog}.{ns_name}")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {hadoop.catalog}.{ns_name}")
    yield target
    drop_namespace(spark, target.spark_catalog, ns_name)
    drop_hadoop_namespace(spark, hadoop, ns_name)


# Scenarios run on both catalogs, or on the local catalog only (to keep the module's run time down).
@pytest.fixture(params=["local", "glue"])
def both(request: pytest.FixtureRequest, spark: Any, hadoop: Hadoop, ns_name: str) -> Iterator[Target]:
    yield from target_in_namespace(request, spark, hadoop, ns_name)


@pytest.fixture(params=["local"])
def local(request: pytest.FixtureRequest, spark: Any, hadoop: Hadoop, ns_name: str) -> Iterator[Target]:
    yield from target_in_namespace(request, spark, hadoop, ns_name)


# Comparing with Spark's hadoop catalog -----------------------------------------------------------
def twin_run(
    spark: Any, target: Target, hadoop: Hadoop, name: str, plan: Plan, want: list[Step] | None = None
) -> tuple[list[Step], list[Step]]:
    """Run ``plan`` for table ``name`` through the proxy and on the hadoop catalog: (proxy steps, reference).

    The reference run does not depend on the proxy: it is done once per plan in the module (``want`` when the
    reference fixture already holds it).
    """
    got = run_and_observe(
        spark,
        target.table(name),
        plan(target.table(name), target.spark_catalog, f"{target.ns}.{name}"),
        lambda: target.metadata(name),
    )
    if want is None:
        key = plan.__name__
        if key not in _REFERENCE_STEPS:
            _REFERENCE_STEPS[key] = reference_steps(spark, hadoop, target.ns, name, plan)
        want = _REFERENCE_STEPS[key]
    return got, want


_REFERENCE_STEPS: dict[str, list[Step]] = {}


def reference_steps(spark: Any, hadoop: Hadoop, ns: str, name: str, plan: Plan) -> list[Step]:
    table = f"{hadoop.catalog}.{ns}.{name}"
    return run_and_observe(spark, table, plan(table, hadoop.catalog, f"{ns}.{name}"), lambda: hadoop.metadata(ns, name))


def delete_file_shape(step: Step) -> list[tuple[Any, ...]]:
    """Delete files without their paths: (content, file_format, record_count, content_offset, content_size)."""
    return sorted((c, f, n, off, size) for (c, f, n, _ref, off, size) in step.delete_files)


def assert_same_as_reference(got: list[Step], want: list[Step]) -> None:
    assert len(got) == len(want)
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        where = f"after statement {index}: {w.statement}"
        assert (g.format_version, g.next_row_id) == (w.format_version, w.next_row_id), where
        assert g.snapshots == w.snapshots, where
        assert g.lineage == w.lineage, where
        assert delete_file_shape(g) == delete_file_shape(w), where


def assert_row_ids_counted(metadata: dict[str, Any]) -> None:
    """For a table that was v3 from the start: next-row-id is the sum of every snapshot's added-rows."""
    assert metadata["format-version"] == 3
    added = [s["added-rows"] for s in metadata["snapshots"]]
    assert metadata["next-row-id"] == sum(added), [(s["first-row-id"], s["added-rows"]) for s in metadata["snapshots"]]


def assert_vectors_only(step: Step) -> None:
    """Live deletes are deletion vectors (position deletes in Puffin), at most one per data file."""
    assert step.delete_files, step.statement
    assert {(content, file_format) for (content, file_format, *_rest) in step.delete_files} == {(1, "PUFFIN")}
    referenced = [ref for (_c, _f, _n, ref, _o, _s) in step.delete_files]
    assert None not in referenced
    assert len(referenced) == len(set(referenced)), referenced


def without(lineage: list[tuple[Any, ...]], *ids: int) -> list[tuple[Any, ...]]:
    return [r for r in lineage if r[0] not in ids]


def table_files(location: str) -> list[Path]:
    root = Path(urlparse(location).path)
    return sorted(p for p in root.rglob("*") if p.is_file())


# 1. Partitioned merge-on-read v3 table: inserts, DELETE, UPDATE, a branch, rewrite, expire -----------
def test_merge_on_read_row_lineage_deletion_vectors_branch_and_rewrite(
    spark: Any, both: Target, hadoop: Hadoop, reference: dict[str, ReferenceTable]
) -> None:
    target = both
    got, want = twin_run(spark, target, hadoop, "mor", mor_statements, reference["mor"].steps)
    create, insert1, insert2, delete, update, branch, branch_insert, rewrite = got

    # The create: v3 from the start, no rows yet, Java's default codec for new tables.
    assert (create.format_version, create.next_row_id, create.snapshots) == (3, 0, [])
    properties = target.metadata("mor")["properties"]
    assert properties["write.parquet.compression-codec"] == "zstd"
    assert properties["write.delete.mode"] == "merge-on-read"

    # Inserts number rows from 0, one commit after the other; each row carries its commit's sequence number.
    assert insert1.snapshots == [(1, "append", 0, 3)] and insert1.next_row_id == 3
    assert sorted(r[1] for r in insert1.lineage["main"]) == [0, 1, 2]
    assert insert2.snapshots[-1] == (2, "append", 3, 3) and insert2.next_row_id == 6
    assert sorted(r[1] for r in insert2.lineage["main"]) == list(range(6))
    assert {(r[0], r[2]) for r in insert2.lineage["main"]} == {(1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (6, 2)}

    # DELETE writes a deletion vector and leaves the other rows' lineage alone.
    assert_vectors_only(delete)
    assert delete.lineage["main"] == without(insert2.lineage["main"], 1)
    assert delete.snapshots[-1] == (3, "delete", 6, 0) and delete.next_row_id == 6

    # UPDATE: a vector on the old file; the row keeps its _row_id and takes the update's sequence number.
    assert_vectors_only(update)
    assert len(update.delete_files) == 2
    (old_4,) = [r for r in delete.lineage["main"] if r[0] == 4]
    (new_4,) = [r for r in update.lineage["main"] if r[0] == 4]
    assert new_4 == (4, old_4[1], 4)
    assert without(update.lineage["main"], 4) == without(delete.lineage["main"], 4)
    assert update.snapshots[-1] == (4, "overwrite", 6, 1) and update.next_row_id == 7

    # A branch commit takes row ids from the table-wide next-row-id; main does not move.
    assert branch.lineage["audit"] == branch.lineage["main"] == update.lineage["main"]
    assert branch_insert.lineage["main"] == update.lineage["main"]
    (row_7,) = [r for r in branch_insert.lineage["audit"] if r[0] == 7]
    assert row_7 == (7, 7, 5)
    assert branch_insert.next_row_id == 8

    # rewrite_data_files folds the vectors into new files and keeps every row's lineage.
    assert rewrite.lineage == branch_insert.lineage
    assert rewrite.delete_files == []
    assert rewrite.snapshots[-1] == (6, "replace", 8, 5) and rewrite.next_row_id == 13

    # Exactly what Spark's own catalog produced, statement by statement.
    assert_same_as_reference(got, want)
    assert_row_ids_counted(target.metadata("mor"))

    # A later commit on main never reuses the branch's row id.
    table = target.table("mor")
    spark.sql(f"INSERT INTO {table} VALUES (8, 'h', 'z')")
    assert row_lineage(spark, table)[-1] == (8, 13, 7)
    assert {r[1] for r in row_lineage(spark, f"{table}.branch_audit")} & {13} == set()
    assert_row_ids_counted(target.metadata("mor"))

    # expire_snapshots, once the branch is gone: old files go, lineage and next-row-id stay.
    before = target.metadata("mor")
    spark.sql(f"ALTER TABLE {table} DROP BRANCH audit")
    (expired,) = spark.sql(
        f"CALL {target.spark_catalog}.system.expire_snapshots(table => '{target.ns}.mor', "
        f"older_than => {FUTURE}, retain_last => 1)"
    ).collect()
    after = target.metadata("mor")
    assert len(after["snapshots"]) == 1 and after["next-row-id"] == before["next-row-id"] == 14
    assert expired.deleted_position_delete_files_count == 2  # both vectors, dropped by the rewrite
    assert expired.deleted_data_files_count == 7
    assert not [p for p in table_files(after["location"]) if p.suffix == ".puffin"]
    assert row_lineage(spark, table) == [*rewrite.lineage["main"], (8, 13, 7)]


# 2. MERGE keeps one vector per data file -----------------------------------------------------------
def merge_plan(table: str, catalog: str, name: str) -> list[str]:
    return [
        f"CREATE TABLE {table} (id bigint, name string, amount int) USING iceberg TBLPROPERTIES ({MOR_PROPERTIES})",
        f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ id, concat('n', id), CAST(id AS int) FROM range(0, 10)",
        f"DELETE FROM {table} WHERE id = 1",
        f"MERGE INTO {table} t USING (SELECT * FROM VALUES (2L, 'upsert'), (3L, 'delete'), (100L, 'upsert') "
        "AS s(id, op)) s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'delete' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET t.amount = -1 "
        "WHEN NOT MATCHED THEN INSERT (id, name, amount) VALUES (s.id, 'new', 100)",
        f"DELETE FROM {table} WHERE id = 9",
    ]


def test_merge_writes_one_vector_per_data_file_and_keeps_row_ids(spark: Any, local: Target, hadoop: Hadoop) -> None:
    target = local
    got, want = twin_run(spark, target, hadoop, "m", merge_plan)
    _create, insert, delete, merge, delete_again = got

    # One data file of ten rows: _row_id is the position, i.e. the id.
    assert insert.lineage["main"] == [(i, i, 1) for i in range(10)]
    assert_vectors_only(delete)
    # The MERGE replaces the file's vector with one that also covers the rows it deleted and updated.
    assert_vectors_only(merge)
    assert [n for (_c, _f, n, *_rest) in merge.delete_files] == [3]
    by_id = {r[0]: r for r in merge.lineage["main"]}
    assert sorted(by_id) == [0, 2, 4, 5, 6, 7, 8, 9, 100]
    assert by_id[2] == (2, 2, 3)  # updated: same row id, the MERGE's sequence number
    assert by_id[100][1:] in {(10, 3), (11, 3)}  # new: from next-row-id (10), in the MERGE's commit
    assert all(by_id[i] == (i, i, 1) for i in (0, 4, 5, 6, 7, 8, 9))
    assert_vectors_only(delete_again)
    assert sorted(n for (_c, _f, n, *_rest) in delete_again.delete_files) == [4]
    assert delete_again.lineage["main"] == without(merge.lineage["main"], 9)

    assert_same_as_reference(got, want)
    assert_row_ids_counted(target.metadata("m"))
    assert rows(spark, f"SELECT id, amount FROM {target.table('m')} WHERE id IN (2, 100) ORDER BY id") == [
        (2, -1),
        (100, 100),
    ]


# 3. A v2 table with data upgraded to v3 ---------------------------------------------------------------
def upgrade_plan(table: str, catalog: str, name: str) -> list[str]:
    return upgrade_statements(table)


def test_v2_table_with_data_upgrades_to_v3(
    spark: Any, both: Target, hadoop: Hadoop, reference: dict[str, ReferenceTable]
) -> None:
    target = both
    got, want = twin_run(spark, target, hadoop, "up", upgrade_plan, reference["upgraded"].steps)
    create, _insert1, insert2, v2_delete, upgrade, append, delete_v2_era, delete_other = got

    assert (create.format_version, create.next_row_id) == (2, None)
    assert v2_delete.format_version == 2
    assert [(c, f) for (c, f, *_rest) in v2_delete.delete_files] == [(1, "PARQUET")]  # a v2 position delete file
    assert all(r[1:] == (None, None) for r in insert2.lineage["main"])

    # The upgrade itself: v3, next-row-id 0, the v2 snapshots without row-id fields, rows not numbered yet.
    assert (upgrade.format_version, upgrade.next_row_id) == (3, 0)
    assert upgrade.snapshots == v2_delete.snapshots
    assert all(s[2:] == (None, None) for s in upgrade.snapshots)
    assert upgrade.lineage == v2_delete.lineage

    # The first v3 append numbers its own row and every row of the v2-era manifests: first-row-id 0.
    assert append.snapshots[-1] == (4, "append", 0, 6) and append.next_row_id == 6
    assert sorted(r[1] for r in append.lineage["main"]) == [0, 1, 2, 3, 4]  # row id 5 is the deleted id 3
    assert {(r[0], r[2]) for r in append.lineage["main"]} == {(1, 1), (2, 1), (4, 2), (5, 2), (6, 4)}

    # Deletes on v2-era files write vectors; the v2 Parquet position delete is folded into the first one.
    assert_vectors_only(delete_v2_era)
    assert [n for (_c, _f, n, *_rest) in delete_v2_era.delete_files] == [2]
    assert delete_v2_era.lineage["main"] == without(append.lineage["main"], 2)
    assert_vectors_only(delete_other)
    assert delete_other.lineage["main"] == without(append.lineage["main"], 2, 5)
    assert rows(spark, f"SELECT id, data FROM {target.table('up')} ORDER BY id") == [(1, "a"), (4, "d"), (6, "f")]

    assert_same_as_reference(got, want)
    metadata = target.metadata("up")
    assert metadata["format-version"] == 3 and metadata["next-row-id"] == 6


# 4. CTAS and RTAS ------------------------------------------------------------------------------------
def ctas_plan(table: str, catalog: str, name: str) -> list[str]:
    v3 = "TBLPROPERTIES ('format-version' = '3')"
    return [
        f"CREATE TABLE {table} USING iceberg {v3} AS "
        "SELECT /*+ REPARTITION(1) */ id, concat('c', id) AS data FROM range(0, 5)",
        f"REPLACE TABLE {table} USING iceberg {v3} AS "
        "SELECT /*+ REPARTITION(1) */ id, concat('r', id) AS data FROM range(10, 13)",
        f"INSERT INTO {table} VALUES (20, 'i')",
    ]


def rtas_from_v2_plan(table: str, catalog: str, name: str) -> list[str]:
    return [
        f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ('format-version' = '2') AS SELECT id FROM range(0, 3)",
        f"CREATE OR REPLACE TABLE {table} USING iceberg TBLPROPERTIES ('format-version' = '3') AS "
        "SELECT /*+ REPARTITION(1) */ id FROM range(100, 102)",
    ]


def test_ctas_and_rtas_write_v3_tables(spark: Any, both: Target, hadoop: Hadoop) -> None:
    target = both
    got, want = twin_run(spark, target, hadoop, "c", ctas_plan)
    ctas, rtas, insert = got
    assert (ctas.format_version, ctas.next_row_id) == (3, 5)
    assert ctas.lineage["main"] == [(i, i, 1) for i in range(5)]
    # REPLACE keeps the table, so row ids go on from next-row-id.
    assert (rtas.format_version, rtas.next_row_id) == (3, 8)
    assert rtas.lineage["main"] == [(10, 5, 2), (11, 6, 2), (12, 7, 2)]
    assert insert.lineage["main"][-1] == (20, 8, 3) and insert.next_row_id == 9
    assert_same_as_reference(got, want)
    assert_row_ids_counted(target.metadata("c"))

    got, want = twin_run(spark, target, hadoop, "r", rtas_from_v2_plan)
    v2, replaced = got
    assert (v2.format_version, v2.next_row_id) == (2, None)
    assert replaced.format_version == 3
    assert sorted(r[0] for r in replaced.lineage["main"]) == [100, 101]
    assert_same_as_reference(got, want)


# 5. DROP ... PURGE removes the vectors too -------------------------------------------------------------
def test_purge_removes_data_files_and_deletion_vectors(spark: Any, local: Target) -> None:
    target = local
    table = target.table("p")
    spark.sql(f"CREATE TABLE {table} (id bigint) USING iceberg TBLPROPERTIES ({MOR_PROPERTIES})")
    spark.sql(f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ id FROM range(0, 4)")
    spark.sql(f"DELETE FROM {table} WHERE id = 2")
    location = target.metadata("p")["location"]
    files = table_files(location)
    assert {p.suffix for p in files} >= {".parquet", ".puffin", ".json", ".avro"}
    spark.sql(f"DROP TABLE {table} PURGE")
    assert [p for p in files if p.exists()] == []


# 6. Concurrent writers: each retry takes fresh row ids -------------------------------------------------
def test_concurrent_appends_and_deletes_never_share_a_row_id(spark: Any, local: Target) -> None:
    """Writers in parallel threads of one session: commits conflict (409), Iceberg retries on fresh metadata."""
    target = local
    table = target.table("c")
    spark.sql(f"CREATE TABLE {table} (id bigint, w int) USING iceberg TBLPROPERTIES ({MOR_PROPERTIES})")
    spark.sql(f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ id, -1 FROM range(0, 10)")
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('commit.retry.num-retries' = '20')")

    def write(worker: int) -> None:
        for n in range(3):
            base = 1000 * (worker + 1) + 10 * n
            spark.sql(f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ id, {worker} FROM range({base}, {base + 4})")

    def delete() -> None:
        for i in range(3):
            spark.sql(f"DELETE FROM {table} WHERE id = {i}")

    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(write, w) for w in range(3)] + [pool.submit(delete)]
        for future in futures:
            future.result()

    lineage = row_lineage(spark, table)
    assert len(lineage) == 10 - 3 + 3 * 3 * 4
    row_ids = [r[1] for r in lineage]
    assert len(set(row_ids)) == len(row_ids)
    assert [r for r in lineage if r[0] < 10] == [(i, i, 1) for i in range(3, 10)]
    metadata = target.metadata("c")
    assert_row_ids_counted(metadata)
    assert metadata["next-row-id"] == 10 + 3 * 3 * 4
    # Snapshots' row id ranges tile [0, next-row-id) in commit order.
    ranges = sorted((s["sequence-number"], s["first-row-id"], s["added-rows"]) for s in metadata["snapshots"])
    position = 0
    for _sequence, first, added in ranges:
        assert first == position
        position += added
    assert max(row_ids) < metadata["next-row-id"]


# 7. Rolling main back does not give row ids out twice ---------------------------------------------------
def rollback_plan(table: str, catalog: str, name: str) -> list[str]:
    return [
        f"CREATE TABLE {table} (id bigint) USING iceberg TBLPROPERTIES ({MOR_PROPERTIES})",
        f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ id FROM range(0, 3)",
        f"ALTER TABLE {table} CREATE TAG first",
        f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ id FROM range(10, 12)",
        f"CALL {catalog}.system.set_current_snapshot(table => '{name}', ref => 'first')",
        f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ id FROM range(20, 22)",
    ]


def test_rollback_keeps_next_row_id(spark: Any, local: Target, hadoop: Hadoop) -> None:
    got, want = twin_run(spark, local, hadoop, "rb", rollback_plan)
    _create, first, _tag, second, rolled_back, third = got
    assert second.lineage["main"] == [*first.lineage["main"], (10, 3, 2), (11, 4, 2)]
    assert rolled_back.lineage["main"] == first.lineage["main"] and rolled_back.next_row_id == 5
    assert third.lineage["main"] == [(0, 0, 1), (1, 1, 1), (2, 2, 1), (20, 5, 3), (21, 6, 3)]
    assert third.next_row_id == 7
    assert_same_as_reference(got, want)
    assert_row_ids_counted(local.metadata("rb"))


# 8. Registering v3 metadata that Iceberg Java wrote ------------------------------------------------------
def test_register_v3_metadata_written_by_spark_hadoop_catalog(spark: Any, both: Target) -> None:
    """register_table with v3 metadata Spark's hadoop catalog wrote (inside the catalog's warehouse, where the
    proxy allows registered locations): same rows, same row ids, and next-row-id goes on from Java's."""
    target = both
    java = Hadoop(f"v3java_{target.label}", target.warehouse)
    add_hadoop_catalog(spark, java.catalog, java.warehouse)
    java_ns = f"{target.ns}_java"
    spark.sql(f"CREATE NAMESPACE {java.catalog}.{java_ns}")
    try:
        source = reference_steps(spark, java, java_ns, "src", mor_statements)[-1]
        metadata_file = current_metadata_file(java.warehouse / java_ns / "src")
        call = f"CALL {target.spark_catalog}.system.register_table(table => '{target.ns}.reg', metadata_file => "
        (registered,) = spark.sql(f"{call}'{metadata_file.as_uri()}')").collect()
        assert registered.current_snapshot_id is not None

        metadata = target.metadata("reg")
        assert (metadata["format-version"], metadata["next-row-id"]) == (3, 13)
        assert snapshot_lineage(metadata) == source.snapshots
        table = target.table("reg")
        assert row_lineage(spark, table) == source.lineage["main"]
        assert row_lineage(spark, f"{table}.branch_audit") == source.lineage["audit"]

        spark.sql(f"INSERT INTO {table} VALUES (9, 'i', 'x')")
        assert row_lineage(spark, table)[-1] == (9, 13, 7)
        assert_row_ids_counted(target.metadata("reg"))
        spark.sql(f"DROP TABLE {table}")  # not PURGE: the files are the hadoop table's
    finally:
        drop_hadoop_namespace(spark, java, java_ns)
