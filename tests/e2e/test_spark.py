"""Real PySpark (Iceberg 1.10.2 over REST) against the served proxy: every statement's result is read back.

One SparkSession is shared by the module; each test works in its own namespace.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

import httpx
import pytest

from tests.support.rest import expunge_dropped
from tests.support.server import ProxyProcess

pytestmark = pytest.mark.spark

CAT = "irc"  # the Spark catalog name (tests/e2e/conftest.py)
WAREHOUSE = "local"  # the proxy's catalog name (REST prefix)
FUTURE = "TIMESTAMP '2999-01-01 00:00:00'"


def rows(spark: Any, statement: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in spark.sql(statement).collect()]


def scalar(spark: Any, statement: str) -> Any:
    (row,) = rows(spark, statement)
    (value,) = row
    return value


def rest_table(proxy: ProxyProcess, namespace: str, table: str) -> dict[str, Any]:
    """The proxy's LoadTableResult for ``namespace.table`` (fetched over REST, not through Spark)."""
    response = httpx.get(
        f"{proxy.url}/v1/{WAREHOUSE}/namespaces/{quote(namespace, safe='')}/tables/{quote(table, safe='')}",
        timeout=30,
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def local_path(uri: str) -> Path:
    parsed = urlparse(uri)
    assert parsed.scheme in ("file", ""), uri
    return Path(parsed.path)


def data_file_paths(spark: Any, table: str) -> list[Path]:
    return [local_path(p) for (p,) in rows(spark, f"SELECT file_path FROM {table}.files")]


def snapshot_ids(spark: Any, table: str) -> list[int]:
    return [s for (s,) in rows(spark, f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at, snapshot_id")]


@pytest.fixture
def ns(spark: Any, ns_name: str) -> Iterator[str]:
    """A fresh namespace in the Spark catalog; its tables are purged afterwards."""
    spark.sql(f"CREATE NAMESPACE {CAT}.{ns_name}")
    yield ns_name
    for row in spark.sql(f"SHOW TABLES IN {CAT}.{ns_name}").collect():
        spark.sql(f"DROP TABLE IF EXISTS {CAT}.{ns_name}.{row.tableName} PURGE")
    spark.sql(f"DROP NAMESPACE IF EXISTS {CAT}.{ns_name}")


# 1. Namespaces --------------------------------------------------------------------------------
def test_nested_namespace_creates_parent_lists_child_and_non_empty_parent_cannot_be_dropped(
    spark: Any, ns_name: str
) -> None:
    parent = ns_name
    spark.sql(f"CREATE NAMESPACE {CAT}.{parent}.b")

    assert (parent,) in rows(spark, f"SHOW NAMESPACES IN {CAT}")
    assert rows(spark, f"SHOW NAMESPACES IN {CAT}.{parent}") == [(f"{parent}.b",)]
    assert rows(spark, f"SHOW NAMESPACES IN {CAT}.{parent}.b") == []

    with pytest.raises(Exception, match=r"(?i)not empty|non-?empty"):
        spark.sql(f"DROP NAMESPACE {CAT}.{parent}")
    assert rows(spark, f"SHOW NAMESPACES IN {CAT}.{parent}") == [(f"{parent}.b",)]

    # A table in the nested namespace works like any other.
    spark.sql(f"CREATE TABLE {CAT}.{parent}.b.t (id bigint) USING iceberg")
    spark.sql(f"INSERT INTO {CAT}.{parent}.b.t VALUES (1), (2)")
    assert rows(spark, f"SELECT id FROM {CAT}.{parent}.b.t ORDER BY id") == [(1,), (2,)]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {CAT}.{parent}.b").collect()] == ["t"]
    with pytest.raises(Exception, match=r"(?i)not empty|non-?empty"):
        spark.sql(f"DROP NAMESPACE {CAT}.{parent}.b")

    spark.sql(f"DROP TABLE {CAT}.{parent}.b.t PURGE")
    spark.sql(f"DROP NAMESPACE {CAT}.{parent}.b")
    assert rows(spark, f"SHOW NAMESPACES IN {CAT}.{parent}") == []
    spark.sql(f"DROP NAMESPACE {CAT}.{parent}")
    assert (parent,) not in rows(spark, f"SHOW NAMESPACES IN {CAT}")


def test_namespace_properties_round_trip(spark: Any, ns_name: str) -> None:
    spark.sql(f"CREATE NAMESPACE {CAT}.{ns_name} WITH DBPROPERTIES ('owner_team' = 'data', 'k' = 'v1')")
    spark.sql(f"ALTER NAMESPACE {CAT}.{ns_name} SET DBPROPERTIES ('k' = 'v2')")
    described = dict(rows(spark, f"DESCRIBE NAMESPACE EXTENDED {CAT}.{ns_name}"))
    assert "(owner_team,data)" in described["Properties"]
    assert "(k,v2)" in described["Properties"] and "v1" not in described["Properties"]
    spark.sql(f"DROP NAMESPACE {CAT}.{ns_name}")


# 2-3. Create, insert, overwrite -------------------------------------------------------------------
def test_partitioned_create_insert_select(spark: Any, proxy: ProxyProcess, ns: str) -> None:
    table = f"{CAT}.{ns}.events"
    spark.sql(f"CREATE TABLE {table} (id bigint, data string, category string) USING iceberg PARTITIONED BY (category)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')")
    spark.sql(f"INSERT INTO {table} VALUES (4, 'd', 'z')")

    assert rows(spark, f"SELECT id, data, category FROM {table} ORDER BY id") == [
        (1, "a", "x"),
        (2, "b", "y"),
        (3, "c", "x"),
        (4, "d", "z"),
    ]
    assert rows(spark, f"SELECT id FROM {table} WHERE category = 'x' ORDER BY id") == [(1,), (3,)]
    partitions = rows(spark, f"SELECT partition.category, record_count FROM {table}.partitions ORDER BY 1")
    assert partitions == [("x", 2), ("y", 1), ("z", 1)]

    metadata = rest_table(proxy, ns, "events")["metadata"]
    (spec,) = [s for s in metadata["partition-specs"] if s["spec-id"] == metadata["default-spec-id"]]
    assert [(f["name"], f["transform"]) for f in spec["fields"]] == [("category", "identity")]
    assert len(metadata["snapshots"]) == 2
    assert metadata["refs"]["main"]["snapshot-id"] == metadata["current-snapshot-id"]


def test_spark_follows_the_catalogs_suggestions_hadoop_file_io_and_no_metrics_reports(
    spark: Any, proxy: ProxyProcess, ns: str
) -> None:
    """``/v1/config`` defaults reach Spark's REST catalog: a ``file://`` warehouse's tables get ``HadoopFileIO``
    (not ``ResolvingFileIO``), and no scan or commit report is sent (the proxy keeps none)."""
    table = f"{CAT}.{ns}.suggested"
    spark.sql(f"CREATE TABLE {table} (id bigint) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1), (2)")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 2
    loaded = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
    assert loaded.io().getClass().getName() == "org.apache.iceberg.hadoop.HadoopFileIO"
    log = proxy.log()
    assert f"POST /v1/{WAREHOUSE}/namespaces/{ns}/tables/suggested 200" in log  # the INSERT's commit
    assert f"/namespaces/{ns}/tables/suggested/metrics" not in log


def test_insert_overwrite_dynamic_and_static_partitions(spark: Any, ns: str) -> None:
    table = f"{CAT}.{ns}.t"
    spark.sql(f"CREATE TABLE {table} (id bigint, category string) USING iceberg PARTITIONED BY (category)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'x'), (2, 'x'), (3, 'y'), (4, 'z')")

    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {table} VALUES (10, 'x'), (11, 'w')")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    # Only partitions x and w were replaced; y and z are untouched.
    assert rows(spark, f"SELECT id, category FROM {table} ORDER BY id") == [
        (3, "y"),
        (4, "z"),
        (10, "x"),
        (11, "w"),
    ]

    spark.sql(f"INSERT OVERWRITE {table} PARTITION (category = 'y') VALUES (30)")
    assert rows(spark, f"SELECT id, category FROM {table} ORDER BY id") == [
        (4, "z"),
        (10, "x"),
        (11, "w"),
        (30, "y"),
    ]
    operations = [op for (op,) in rows(spark, f"SELECT operation FROM {table}.snapshots ORDER BY committed_at")]
    assert operations == ["append", "overwrite", "overwrite"]


# 4. Row-level operations ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_update_delete_merge(spark: Any, ns: str, mode: str) -> None:
    table = f"{CAT}.{ns}.t"
    spark.sql(
        f"CREATE TABLE {table} (id int, name string, amount int) USING iceberg TBLPROPERTIES ("
        f"'format-version' = '2', 'write.delete.mode' = '{mode}', 'write.update.mode' = '{mode}', "
        f"'write.merge.mode' = '{mode}')"
    )
    spark.sql(
        f"INSERT INTO {table} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (4, 'd', 4), (5, 'e', 5), (6, 'f', 6)"
    )

    spark.sql(f"DELETE FROM {table} WHERE id = 2")
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (3,), (4,), (5,), (6,)]

    spark.sql(f"UPDATE {table} SET amount = amount * 10 WHERE id IN (3, 4)")
    assert rows(spark, f"SELECT id, amount FROM {table} ORDER BY id") == [(1, 1), (3, 30), (4, 40), (5, 5), (6, 6)]

    source = f"src_{ns}"
    spark.createDataFrame(
        [(1, "a1", 100, "upsert"), (5, "e", 0, "delete"), (7, "g", 70, "upsert")],
        "id int, name string, amount int, op string",
    ).createOrReplaceTempView(source)
    try:
        spark.sql(
            f"MERGE INTO {table} t USING {source} s ON t.id = s.id "
            "WHEN MATCHED AND s.op = 'delete' THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET t.name = s.name, t.amount = s.amount "
            "WHEN NOT MATCHED THEN INSERT (id, name, amount) VALUES (s.id, s.name, s.amount)"
        )
    finally:
        spark.catalog.dropTempView(source)
    assert rows(spark, f"SELECT id, name, amount FROM {table} ORDER BY id") == [
        (1, "a1", 100),
        (3, "c", 30),
        (4, "d", 40),
        (6, "f", 6),
        (7, "g", 70),
    ]

    delete_files = scalar(spark, f"SELECT count(*) FROM {table}.delete_files")
    if mode == "merge-on-read":
        assert delete_files > 0
    else:
        assert delete_files == 0
    assert len(snapshot_ids(spark, table)) == 4

    if mode == "merge-on-read":
        (result,) = spark.sql(
            f"CALL {CAT}.system.rewrite_position_delete_files(table => '{ns}.t', options => map('rewrite-all', 'true'))"
        ).collect()
        assert result.rewritten_delete_files_count == delete_files
        assert rows(spark, f"SELECT id, amount FROM {table} ORDER BY id") == [
            (1, 100),
            (3, 30),
            (4, 40),
            (6, 6),
            (7, 70),
        ]


# 5. Schema and partition evolution ------------------------------------------------------------------
def test_schema_and_partition_evolution(spark: Any, proxy: ProxyProcess, ns: str) -> None:
    table = f"{CAT}.{ns}.t"
    spark.sql(f"CREATE TABLE {table} (id int, name string, ts timestamp, extra string) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a', TIMESTAMP '2024-01-01 10:00:00', 'e1')")

    spark.sql(f"ALTER TABLE {table} ADD COLUMN score double COMMENT 'a score'")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN name TO full_name")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN id TYPE bigint")
    spark.sql(f"ALTER TABLE {table} DROP COLUMN extra")
    fields = [(f.name, f.dataType.simpleString()) for f in spark.table(table).schema.fields]
    assert fields == [("id", "bigint"), ("full_name", "string"), ("ts", "timestamp"), ("score", "double")]

    spark.sql(f"INSERT INTO {table} VALUES (2, 'b', TIMESTAMP '2024-01-02 10:00:00', 2.5)")
    assert rows(spark, f"SELECT id, full_name, score FROM {table} ORDER BY id") == [(1, "a", None), (2, "b", 2.5)]

    spark.sql(f"ALTER TABLE {table} ADD PARTITION FIELD bucket(4, id)")
    spark.sql(f"INSERT INTO {table} VALUES (3, 'c', TIMESTAMP '2024-01-03 10:00:00', 3.5)")
    spark.sql(f"ALTER TABLE {table} ADD PARTITION FIELD days(ts)")
    spark.sql(f"INSERT INTO {table} VALUES (4, 'd', TIMESTAMP '2024-01-04 10:00:00', 4.5)")
    spark.sql(f"ALTER TABLE {table} DROP PARTITION FIELD bucket(4, id)")
    spark.sql(f"INSERT INTO {table} VALUES (5, 'e', TIMESTAMP '2024-01-05 10:00:00', 5.5)")
    spark.sql(f"ALTER TABLE {table} WRITE ORDERED BY id DESC")
    spark.sql(f"INSERT INTO {table} VALUES (6, 'f', TIMESTAMP '2024-01-06 10:00:00', 6.5)")

    assert rows(spark, f"SELECT id, full_name FROM {table} ORDER BY id") == [
        (1, "a"),
        (2, "b"),
        (3, "c"),
        (4, "d"),
        (5, "e"),
        (6, "f"),
    ]
    assert rows(spark, f"SELECT id FROM {table} WHERE ts >= TIMESTAMP '2024-01-04 00:00:00' ORDER BY id") == [
        (4,),
        (5,),
        (6,),
    ]
    assert sorted(s for (s,) in rows(spark, f"SELECT DISTINCT spec_id FROM {table}.files")) == [0, 1, 2, 3]

    metadata = rest_table(proxy, ns, "t")["metadata"]
    assert len(metadata["schemas"]) == 5
    assert len(metadata["partition-specs"]) == 4
    (spec,) = [s for s in metadata["partition-specs"] if s["spec-id"] == metadata["default-spec-id"]]
    assert [(f["name"], f["transform"]) for f in spec["fields"]] == [("ts_day", "day")]
    (order,) = [o for o in metadata["sort-orders"] if o["order-id"] == metadata["default-sort-order-id"]]
    assert [(f["transform"], f["direction"]) for f in order["fields"]] == [("identity", "desc")]

    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('owner.team' = 'data', 'drop.me' = 'x')")
    spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES ('drop.me')")
    properties = dict(rows(spark, f"SHOW TBLPROPERTIES {table}"))
    assert properties["owner.team"] == "data"
    assert "drop.me" not in properties


# 6. CTAS and RTAS --------------------------------------------------------------------------------
def test_ctas_and_replace_table_as_select_keep_history(spark: Any, proxy: ProxyProcess, ns: str) -> None:
    src = f"{CAT}.{ns}.src"
    spark.sql(f"CREATE TABLE {src} (id bigint, data string, category string) USING iceberg")
    spark.sql(f"INSERT INTO {src} VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')")

    ctas = f"{CAT}.{ns}.ctas"
    spark.sql(f"CREATE TABLE {ctas} USING iceberg PARTITIONED BY (category) AS SELECT * FROM {src} WHERE id < 3")
    assert rows(spark, f"SELECT id, data, category FROM {ctas} ORDER BY id") == [(1, "a", "x"), (2, "b", "y")]
    uuid_before = rest_table(proxy, ns, "ctas")["metadata"]["table-uuid"]
    with pytest.raises(Exception, match=r"(?i)already exists"):
        spark.sql(f"CREATE TABLE {ctas} USING iceberg AS SELECT * FROM {src}")

    spark.sql(f"CREATE OR REPLACE TABLE {ctas} USING iceberg AS SELECT id, upper(data) AS data FROM {src} WHERE id > 1")
    assert [f.name for f in spark.table(ctas).schema.fields] == ["id", "data"]
    assert rows(spark, f"SELECT id, data FROM {ctas} ORDER BY id") == [(2, "B"), (3, "C")]

    spark.sql(f"REPLACE TABLE {ctas} USING iceberg AS SELECT id FROM {src} WHERE id = 3")
    assert rows(spark, f"SELECT * FROM {ctas}") == [(3,)]

    assert scalar(spark, f"SELECT count(*) FROM {ctas}.snapshots") == 3
    assert scalar(spark, f"SELECT count(*) FROM {ctas}.history") == 3
    first = snapshot_ids(spark, ctas)[0]
    assert rows(spark, f"SELECT id, data FROM {ctas} VERSION AS OF {first} ORDER BY id") == [(1, "a"), (2, "b")]

    metadata = rest_table(proxy, ns, "ctas")["metadata"]
    assert metadata["table-uuid"] == uuid_before
    assert len(metadata["schemas"]) >= 2
    (spec,) = [s for s in metadata["partition-specs"] if s["spec-id"] == metadata["default-spec-id"]]
    assert spec["fields"] == []

    with pytest.raises(Exception, match=r"(?i)not found|cannot be found|does not exist"):
        spark.sql(f"REPLACE TABLE {CAT}.{ns}.missing USING iceberg AS SELECT 1 AS id")


# 7. Branches, tags, time travel -----------------------------------------------------------------
def test_branches_tags_and_time_travel(spark: Any, proxy: ProxyProcess, ns: str) -> None:
    table = f"{CAT}.{ns}.t"
    spark.sql(f"CREATE TABLE {table} (id bigint, data string) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    (first,) = snapshot_ids(spark, table)
    first_committed = scalar(spark, f"SELECT CAST(committed_at AS STRING) FROM {table}.snapshots")

    spark.sql(f"ALTER TABLE {table} CREATE BRANCH b RETAIN 7 DAYS WITH SNAPSHOT RETENTION 2 SNAPSHOTS")
    spark.sql(f"INSERT INTO {table}.branch_b VALUES (3, 'c')")
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {table} VERSION AS OF 'b' ORDER BY id") == [(1,), (2,), (3,)]

    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('write.wap.enabled' = 'true')")
    spark.conf.set("spark.wap.branch", "b")
    try:
        spark.sql(f"INSERT INTO {table} VALUES (4, 'd')")
    finally:
        spark.conf.unset("spark.wap.branch")
    assert rows(spark, f"SELECT id FROM {table}.branch_b ORDER BY id") == [(1,), (2,), (3,), (4,)]
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (2,)]

    spark.sql(f"ALTER TABLE {table} CREATE TAG v1 AS OF VERSION {first}")
    time.sleep(0.01)  # the next snapshot must be committed strictly after `first`
    spark.sql(f"INSERT INTO {table} VALUES (5, 'e')")
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (2,), (5,)]
    assert rows(spark, f"SELECT id FROM {table} VERSION AS OF 'v1' ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {table} VERSION AS OF {first} ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {table} TIMESTAMP AS OF '{first_committed}' ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {table} FOR SYSTEM_TIME AS OF {FUTURE} ORDER BY id") == [(1,), (2,), (5,)]

    refs = dict(rows(spark, f"SELECT name, type FROM {table}.refs"))
    assert refs == {"main": "BRANCH", "b": "BRANCH", "v1": "TAG"}
    metadata = rest_table(proxy, ns, "t")["metadata"]
    assert metadata["refs"]["v1"] == {"snapshot-id": first, "type": "tag"}
    assert metadata["refs"]["b"]["type"] == "branch"
    assert metadata["refs"]["b"]["max-ref-age-ms"] == 7 * 86400 * 1000
    assert metadata["refs"]["b"]["min-snapshots-to-keep"] == 2

    # Write-audit-publish with a WAP id: the snapshot is staged (not on main) until cherry-picked.
    spark.conf.set("spark.wap.id", "wap-1")
    try:
        spark.sql(f"INSERT INTO {table} VALUES (9, 'staged')")
    finally:
        spark.conf.unset("spark.wap.id")
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (2,), (5,)]
    (staged,) = rows(spark, f"SELECT snapshot_id FROM {table}.snapshots WHERE summary['wap.id'] = 'wap-1'")
    main_before = metadata["refs"]["main"]["snapshot-id"]
    assert staged[0] != main_before
    (result,) = rows(spark, f"CALL {CAT}.system.cherrypick_snapshot('{ns}.t', {staged[0]})")
    assert result == (staged[0], rest_table(proxy, ns, "t")["metadata"]["refs"]["main"]["snapshot-id"])
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (2,), (5,), (9,)]
    spark.sql(f"DELETE FROM {table} WHERE id = 9")

    # Fast-forward main to a branch that is ahead of it, then drop the refs.
    spark.sql(f"ALTER TABLE {table} CREATE BRANCH c")
    spark.sql(f"INSERT INTO {table}.branch_c VALUES (6, 'f')")
    main_before = rest_table(proxy, ns, "t")["metadata"]["refs"]["main"]["snapshot-id"]
    (result,) = rows(spark, f"CALL {CAT}.system.fast_forward('{ns}.t', 'main', 'c')")
    c_head = rest_table(proxy, ns, "t")["metadata"]["refs"]["c"]["snapshot-id"]
    assert result == ("main", main_before, c_head)
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (2,), (5,), (6,)]

    (result,) = rows(spark, f"CALL {CAT}.system.rollback_to_snapshot('{ns}.t', {first})")
    assert result == (c_head, first)
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (2,)]
    (result,) = rows(spark, f"CALL {CAT}.system.set_current_snapshot(table => '{ns}.t', ref => 'c')")
    assert result == (first, c_head)
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (2,), (5,), (6,)]

    spark.sql(f"ALTER TABLE {table} DROP TAG v1")
    spark.sql(f"ALTER TABLE {table} DROP BRANCH b")
    spark.sql(f"ALTER TABLE {table} DROP BRANCH c")
    assert dict(rows(spark, f"SELECT name, type FROM {table}.refs")) == {"main": "BRANCH"}
    assert set(rest_table(proxy, ns, "t")["metadata"]["refs"]) == {"main"}


# 8. Metadata tables --------------------------------------------------------------------------------
def test_metadata_tables(spark: Any, ns: str) -> None:
    table = f"{CAT}.{ns}.t"
    spark.sql(f"CREATE TABLE {table} (id bigint, category string) USING iceberg PARTITIONED BY (category)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'x'), (2, 'y')")
    spark.sql(f"INSERT INTO {table} VALUES (3, 'x')")

    snapshots = rows(spark, f"SELECT snapshot_id, parent_id, operation FROM {table}.snapshots ORDER BY committed_at")
    assert [(op, parent) for (_, parent, op) in snapshots] == [("append", None), ("append", snapshots[0][0])]
    history = rows(
        spark, f"SELECT snapshot_id, parent_id, is_current_ancestor FROM {table}.history ORDER BY made_current_at"
    )
    assert history == [(snapshots[0][0], None, True), (snapshots[1][0], snapshots[0][0], True)]
    files = rows(spark, f"SELECT partition.category, record_count, file_format FROM {table}.files ORDER BY 1, 2")
    assert files == [("x", 1, "PARQUET"), ("x", 1, "PARQUET"), ("y", 1, "PARQUET")]
    assert all(path.is_file() for path in data_file_paths(spark, table))
    assert scalar(spark, f"SELECT count(*) FROM {table}.manifests") == 2
    assert scalar(spark, f"SELECT sum(added_data_files_count) FROM {table}.manifests") == 3
    assert scalar(spark, f"SELECT count(*) FROM {table}.entries") == 3
    assert scalar(spark, f"SELECT count(*) FROM {table}.all_data_files") == 3
    # The metadata log: the create, then one file per commit.
    assert scalar(spark, f"SELECT count(*) FROM {table}.metadata_log_entries") == 3


# 9. Procedures --------------------------------------------------------------------------------------
def test_maintenance_procedures(spark: Any, proxy: ProxyProcess, ns: str) -> None:
    table = f"{CAT}.{ns}.t"
    spark.sql(f"CREATE TABLE {table} (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    for start in (1, 3, 5):
        spark.sql(f"INSERT INTO {table} VALUES ({start}, 'v{start}'), ({start + 1}, 'v{start + 1}')")
    expected = [(i, f"v{i}") for i in range(1, 7)]
    old_files = data_file_paths(spark, table)
    assert len(old_files) >= 3

    (rewrite,) = spark.sql(f"CALL {CAT}.system.rewrite_data_files(table => '{ns}.t')").collect()
    assert rewrite.rewritten_data_files_count == len(old_files)
    assert rewrite.added_data_files_count == 1
    assert rewrite.rewritten_bytes_count > 0
    assert rows(spark, f"SELECT id, data FROM {table} ORDER BY id") == expected
    assert scalar(spark, f"SELECT count(*) FROM {table}.files") == 1

    (manifests,) = spark.sql(f"CALL {CAT}.system.rewrite_manifests('{ns}.t')").collect()
    assert manifests.rewritten_manifests_count >= 1
    assert manifests.added_manifests_count == 1
    assert rows(spark, f"SELECT id, data FROM {table} ORDER BY id") == expected

    # Table statistics on the current snapshot (set-statistics); expiring older snapshots keeps them.
    (stats,) = spark.sql(f"CALL {CAT}.system.compute_table_stats(table => '{ns}.t')").collect()
    assert stats.statistics_file.endswith(".stats")
    spark.sql(f"INSERT INTO {table} VALUES (7, 'v7')")
    expected.append((7, "v7"))
    metadata = rest_table(proxy, ns, "t")["metadata"]
    assert len(metadata["statistics"]) == 1
    assert len(metadata["snapshots"]) == 6

    (expire,) = spark.sql(
        f"CALL {CAT}.system.expire_snapshots(table => '{ns}.t', older_than => {FUTURE}, retain_last => 1)"
    ).collect()
    assert expire.deleted_data_files_count == len(old_files)
    assert expire.deleted_manifest_lists_count == 5
    assert rows(spark, f"SELECT id, data FROM {table} ORDER BY id") == expected
    assert scalar(spark, f"SELECT count(*) FROM {table}.snapshots") == 1
    assert not any(path.exists() for path in old_files)
    metadata = rest_table(proxy, ns, "t")["metadata"]
    assert len(metadata["snapshots"]) == 1
    assert metadata["statistics"] == []
    assert not local_path(stats.statistics_file).exists()

    # Age every file of the table, so that anything the metadata does not reference counts as an orphan.
    location = local_path(metadata["location"])
    orphan = location / "data" / "orphan-00000.parquet"
    orphan.write_bytes(b"not really parquet")
    week_ago = time.time() - 7 * 86400
    for path in location.rglob("*"):
        os.utime(path, (week_ago, week_ago))
    two_days_ago = f"TIMESTAMP '{dt.datetime.now() - dt.timedelta(days=2):%Y-%m-%d %H:%M:%S}'"
    remove_orphans = f"CALL {CAT}.system.remove_orphan_files(table => '{ns}.t', older_than => {two_days_ago}"
    found = rows(spark, f"{remove_orphans}, dry_run => true)")
    assert [local_path(p) for (p,) in found] == [orphan]
    assert orphan.exists()  # dry run
    found = rows(spark, f"{remove_orphans})")
    assert [local_path(p) for (p,) in found] == [orphan]
    assert not orphan.exists()
    assert rows(spark, f"SELECT id, data FROM {table} ORDER BY id") == expected


def test_format_upgrade_set_location_and_expired_metadata_cleanup(spark: Any, proxy: ProxyProcess, ns: str) -> None:
    table = f"{CAT}.{ns}.t"
    spark.sql(
        f"CREATE TABLE {table} (id bigint, category string) USING iceberg PARTITIONED BY (category) "
        "TBLPROPERTIES ('format-version' = '1')"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, 'x'), (2, 'y'), (3, 'x')")
    assert rest_table(proxy, ns, "t")["metadata"]["format-version"] == 1

    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')")
    assert rest_table(proxy, ns, "t")["metadata"]["format-version"] == 2
    spark.sql(f"DELETE FROM {table} WHERE id = 1")
    assert scalar(spark, f"SELECT count(*) FROM {table}.delete_files") > 0
    assert rows(spark, f"SELECT id, category FROM {table} ORDER BY id") == [(2, "y"), (3, "x")]

    (stats,) = spark.sql(f"CALL {CAT}.system.compute_partition_stats(table => '{ns}.t')").collect()
    metadata = rest_table(proxy, ns, "t")["metadata"]
    assert [p["statistics-path"] for p in metadata["partition-statistics"]] == [stats.partition_statistics_file]

    spark.sql(f"ALTER TABLE {table} ADD COLUMN note string")
    spark.sql(f"ALTER TABLE {table} REPLACE PARTITION FIELD category WITH bucket(2, id)")
    spark.sql(f"INSERT OVERWRITE {table} SELECT id, category, 'n' FROM {table}")
    assert rows(spark, f"SELECT id, category, note FROM {table} ORDER BY id") == [(2, "y", "n"), (3, "x", "n")]

    # The overwrite's manifests still list the replaced files (status DELETED) under spec 0; the next commit drops them.
    spark.sql(f"INSERT INTO {table} VALUES (4, 'z', 'm')")
    assert rows(spark, f"SELECT DISTINCT partition_spec_id FROM {table}.manifests") == [(1,)]
    (expire,) = spark.sql(
        f"CALL {CAT}.system.expire_snapshots(table => '{ns}.t', older_than => {FUTURE}, retain_last => 1, "
        "clean_expired_metadata => true)"
    ).collect()
    assert expire.deleted_data_files_count == 2  # the x and y files of the first insert
    assert expire.deleted_position_delete_files_count == 1
    assert expire.deleted_statistics_files_count == 1  # the partition statistics of an expired snapshot
    metadata = rest_table(proxy, ns, "t")["metadata"]
    assert len(metadata["snapshots"]) == 1
    assert metadata["partition-statistics"] == []
    assert [s["spec-id"] for s in metadata["partition-specs"]] == [metadata["default-spec-id"]]
    assert [s["schema-id"] for s in metadata["schemas"]] == [metadata["current-schema-id"]]
    assert not local_path(stats.partition_statistics_file).exists()
    assert rows(spark, f"SELECT id, category, note FROM {table} ORDER BY id") == [
        (2, "y", "n"),
        (3, "x", "n"),
        (4, "z", "m"),
    ]

    new_location = local_path(metadata["location"]).with_name("t_relocated").as_uri()
    spark.sql(f"ALTER TABLE {table} SET LOCATION '{new_location}'")
    assert rest_table(proxy, ns, "t")["metadata"]["location"] == new_location
    spark.sql(f"INSERT INTO {table} VALUES (5, 'w', 'k')")
    assert rows(spark, f"SELECT id, note FROM {table} ORDER BY id") == [(2, "n"), (3, "n"), (4, "m"), (5, "k")]
    (new_file,) = rows(
        spark, f"SELECT file_path FROM {table}.files WHERE record_count = 1 AND file_path LIKE '%t_relocated%'"
    )
    assert local_path(new_file[0]).is_file()


# 10. Rename and drop --------------------------------------------------------------------------------
def test_rename_drop_and_drop_purge(spark: Any, proxy: ProxyProcess, ns: str) -> None:
    spark.sql(f"CREATE TABLE {CAT}.{ns}.t (id bigint) USING iceberg")
    spark.sql(f"INSERT INTO {CAT}.{ns}.t VALUES (1), (2)")
    spark.sql(f"ALTER TABLE {CAT}.{ns}.t RENAME TO {ns}.renamed")
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {CAT}.{ns}").collect()] == ["renamed"]
    assert rows(spark, f"SELECT id FROM {CAT}.{ns}.renamed ORDER BY id") == [(1,), (2,)]
    with pytest.raises(Exception, match=r"(?i)cannot be found|not found"):
        spark.sql(f"SELECT * FROM {CAT}.{ns}.t")

    # DROP TABLE (no purge): the catalog forgets the table, its files stay.
    kept = data_file_paths(spark, f"{CAT}.{ns}.renamed")
    kept_metadata = local_path(rest_table(proxy, ns, "renamed")["metadata-location"])
    spark.sql(f"DROP TABLE {CAT}.{ns}.renamed")
    assert spark.sql(f"SHOW TABLES IN {CAT}.{ns}").collect() == []
    assert httpx.get(f"{proxy.url}/v1/{WAREHOUSE}/namespaces/{ns}/tables/renamed").status_code == 404
    assert kept and all(path.exists() for path in kept)
    assert kept_metadata.exists()

    # register_table brings the dropped table back from its metadata file; then move it to another namespace.
    (registered,) = spark.sql(
        f"CALL {CAT}.system.register_table(table => '{ns}.restored', metadata_file => '{kept_metadata.as_uri()}')"
    ).collect()
    assert registered.total_records_count == 2
    assert rows(spark, f"SELECT id FROM {CAT}.{ns}.restored ORDER BY id") == [(1,), (2,)]
    spark.sql(f"CREATE NAMESPACE {CAT}.{ns}.sub")
    spark.sql(f"ALTER TABLE {CAT}.{ns}.restored RENAME TO {ns}.sub.moved")
    assert spark.sql(f"SHOW TABLES IN {CAT}.{ns}").collect() == []
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {CAT}.{ns}.sub").collect()] == ["moved"]
    spark.sql(f"INSERT INTO {CAT}.{ns}.sub.moved VALUES (3)")
    assert rows(spark, f"SELECT id FROM {CAT}.{ns}.sub.moved ORDER BY id") == [(1,), (2,), (3,)]
    spark.sql(f"DROP TABLE {CAT}.{ns}.sub.moved PURGE")
    assert not any(path.exists() for path in kept)
    spark.sql(f"DROP NAMESPACE {CAT}.{ns}.sub")

    # DROP TABLE ... PURGE: data, manifests and metadata files are deleted.
    spark.sql(f"CREATE TABLE {CAT}.{ns}.p (id bigint, category string) USING iceberg PARTITIONED BY (category)")
    spark.sql(f"INSERT INTO {CAT}.{ns}.p VALUES (1, 'x'), (2, 'y')")
    spark.sql(f"DELETE FROM {CAT}.{ns}.p WHERE id = 1")
    spark.sql(f"INSERT INTO {CAT}.{ns}.p VALUES (3, 'z')")
    loaded = rest_table(proxy, ns, "p")
    location = local_path(loaded["metadata"]["location"])
    data_files = data_file_paths(spark, f"{CAT}.{ns}.p")
    all_files = [local_path(p) for (p,) in rows(spark, f"SELECT file_path FROM {CAT}.{ns}.p.all_data_files")]
    manifests = [local_path(p) for (p,) in rows(spark, f"SELECT path FROM {CAT}.{ns}.p.all_manifests")]
    assert len(data_files) == 2 and len(set(all_files)) == 3 and manifests
    assert all(path.exists() for path in all_files + manifests)
    spark.sql(f"DROP TABLE {CAT}.{ns}.p PURGE")  # Spark drops without purge, then deletes reachable files itself
    assert spark.sql(f"SHOW TABLES IN {CAT}.{ns}").collect() == []
    assert expunge_dropped(proxy.url, WAREHOUSE, (ns,), "p")["purge-requested"] is False
    assert not any(path.exists() for path in all_files + manifests)
    assert not local_path(loaded["metadata-location"]).exists()
    leftovers = [p for p in location.rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert leftovers == []

    # Spark's PURGE deletes the files itself; a REST client may ask the server to (purgeRequested=true).
    spark.sql(
        f"CREATE TABLE {CAT}.{ns}.s (id bigint) USING iceberg "
        "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')"
    )
    spark.sql(f"INSERT INTO {CAT}.{ns}.s VALUES (1), (2), (3)")
    spark.sql(f"DELETE FROM {CAT}.{ns}.s WHERE id = 2")
    loaded = rest_table(proxy, ns, "s")
    files = [local_path(p) for (p,) in rows(spark, f"SELECT file_path FROM {CAT}.{ns}.s.files")]
    files += [local_path(p) for (p,) in rows(spark, f"SELECT path FROM {CAT}.{ns}.s.all_manifests")]
    assert len(files) >= 4 and all(path.exists() for path in files)
    response = httpx.delete(f"{proxy.url}/v1/{WAREHOUSE}/namespaces/{ns}/tables/s", params={"purgeRequested": "true"})
    assert response.status_code == 204, response.text
    assert spark.sql(f"SHOW TABLES IN {CAT}.{ns}").collect() == []
    assert all(path.exists() for path in files)  # a server-side purge waits in the trash until expunged or expired
    expunge_dropped(proxy.url, WAREHOUSE, (ns,), "s")
    assert not any(path.exists() for path in files)
    location = local_path(loaded["metadata"]["location"])
    assert [p for p in location.rglob("*") if p.is_file() and not p.name.startswith(".")] == []


# 11. SHOW TABLES and DESCRIBE TABLE EXTENDED ------------------------------------------------------------
def test_show_tables_and_describe_table_extended(spark: Any, proxy: ProxyProcess, ns: str) -> None:
    spark.sql(
        f"CREATE TABLE {CAT}.{ns}.b (id bigint COMMENT 'the id', ts timestamp) USING iceberg "
        "PARTITIONED BY (days(ts)) COMMENT 'table b' TBLPROPERTIES ('k' = 'v')"
    )
    spark.sql(f"CREATE TABLE {CAT}.{ns}.a (x int) USING iceberg")
    listed = [(r.namespace, r.tableName) for r in spark.sql(f"SHOW TABLES IN {CAT}.{ns}").collect()]
    assert sorted(listed) == [(ns, "a"), (ns, "b")]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {CAT}.{ns} LIKE 'b*'").collect()] == ["b"]

    described = rows(spark, f"DESCRIBE TABLE EXTENDED {CAT}.{ns}.b")
    columns = described[: described.index(("", "", ""))]
    assert columns == [("id", "bigint", "the id"), ("ts", "timestamp", None)]
    info = {name: value for name, value, _ in described}
    assert info["Name"] == f"{CAT}.{ns}.b"
    assert info["Provider"] == "iceberg"
    assert info["Comment"] == "table b"
    assert info["Part 0"] == "days(ts)"
    assert "k=v" in info["Table Properties"]
    assert "format-version=2" in info["Table Properties"]
    location = rest_table(proxy, ns, "b")["metadata"]["location"]
    assert info["Location"] == location
    assert local_path(location).parent.name == ns
