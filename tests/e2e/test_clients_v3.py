"""Format v3 tables through the proxy for other clients: pyiceberg 0.12 and DuckDB 1.5.5.

Spark (Iceberg 1.10.2) writes the v3 tables through the proxy's ``local`` catalog once per module: a partitioned
merge-on-read table with deletion vectors (DELETE, UPDATE, MERGE) and a v2 table with data upgraded to v3. The
other clients read them through the proxy, and their answers are checked against Spark's.

pyiceberg 0.12 cannot write v3 metadata or v3 manifests itself, but with a REST catalog the server writes the
metadata: creating, staging and evolving v3 tables works; appending does not (a client-side refusal, asserted
below so a pyiceberg upgrade shows up here).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

import duckdb
import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import LongType, NestedField, StringType

from tests.e2e.conftest import SPARK_CATALOG
from tests.e2e.test_duckdb import connect, offline_duckdb
from tests.support.aws import client, glue_catalog_config, moto_server
from tests.support.server import ProxyProcess
from tests.support.spark_v3_reference import MOR_PROPERTIES, row_lineage, upgrade_statements

pytestmark = pytest.mark.spark


def srows(spark: Any, statement: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in spark.sql(statement).collect()]


@dataclass(frozen=True)
class SparkV3Tables:
    """The namespace Spark wrote into, and what Spark itself reads back from each table."""

    ns: str
    events: list[tuple[Any, ...]]  # (id, category, value), ordered by id
    upgraded: list[tuple[Any, ...]]  # (id, data), ordered by id


@pytest.fixture(scope="module")
def spark_v3(spark: Any, proxy: ProxyProcess) -> Iterator[SparkV3Tables]:
    ns = f"v3c_{uuid.uuid4().hex[:10]}"
    events = f"{SPARK_CATALOG}.{ns}.events"
    spark.sql(f"CREATE NAMESPACE {SPARK_CATALOG}.{ns}")
    for statement in [
        f"CREATE TABLE {events} (id bigint, category string, value double) USING iceberg "
        f"PARTITIONED BY (category) TBLPROPERTIES ({MOR_PROPERTIES})",
        f"INSERT INTO {events} SELECT id, IF(id % 2 = 0, 'even', 'odd'), id * 1.5 FROM range(0, 60)",
        f"INSERT INTO {events} VALUES (1000, 'even', 1.0), (1003, 'odd', 2.0)",
        f"DELETE FROM {events} WHERE id % 7 = 0",
        f"UPDATE {events} SET value = -1.0 WHERE id = 13",
        f"MERGE INTO {events} t USING (SELECT * FROM VALUES (15L, 'd'), (16L, 'u'), (2000L, 'i') AS s(id, op)) s "
        "ON t.id = s.id WHEN MATCHED AND s.op = 'd' THEN DELETE WHEN MATCHED THEN UPDATE SET t.value = 0.5 "
        "WHEN NOT MATCHED THEN INSERT (id, category, value) VALUES (s.id, 'even', 9.0)",
        *upgrade_statements(f"{SPARK_CATALOG}.{ns}.upgraded"),
    ]:
        spark.sql(statement)
    tables = SparkV3Tables(
        ns=ns,
        events=srows(spark, f"SELECT id, category, value FROM {events} ORDER BY id"),
        upgraded=srows(spark, f"SELECT id, data FROM {SPARK_CATALOG}.{ns}.upgraded ORDER BY id"),
    )
    # What Spark wrote is what the tests below expect to read.
    expected_ids = sorted({i for i in range(60) if i % 7 != 0} - {15} | {1000, 1003, 2000})
    assert [r[0] for r in tables.events] == expected_ids
    assert tables.upgraded == [(1, "a"), (4, "d"), (6, "f")]
    yield tables
    for name in ("events", "upgraded"):
        spark.sql(f"DROP TABLE IF EXISTS {SPARK_CATALOG}.{ns}.{name} PURGE")
    spark.sql(f"DROP NAMESPACE IF EXISTS {SPARK_CATALOG}.{ns}")


@pytest.fixture
def catalog(proxy: ProxyProcess) -> RestCatalog:
    return RestCatalog("pyiceberg", uri=proxy.url, warehouse="local")


@pytest.fixture(scope="module")
def extension_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("duckdb-extensions-v3")


@pytest.fixture
def duck(proxy: ProxyProcess, extension_dir: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(proxy, extension_dir)
    yield con
    con.close()


def delete_files(table: Table) -> list[Any]:
    return [d for task in table.scan().plan_files() for d in task.delete_files]


def assert_row_ids_counted(table: Table) -> None:
    """next-row-id is the sum of every snapshot's added-rows (tables that were v3 from the start)."""
    assert table.metadata.format_version == 3
    added = [s.added_rows for s in table.metadata.snapshots]
    assert None not in added
    assert table.metadata.next_row_id == sum(a for a in added if a is not None)


# pyiceberg ----------------------------------------------------------------------------------------------
def test_pyiceberg_loads_and_scans_spark_v3_tables_with_vectors_applied(
    catalog: RestCatalog, spark_v3: SparkV3Tables
) -> None:
    events = catalog.load_table((spark_v3.ns, "events"))
    assert_row_ids_counted(events)
    assert [(s.first_row_id, s.added_rows) for s in events.metadata.snapshots][:2] == [(0, 60), (60, 2)]
    found = events.scan().to_arrow().sort_by("id")
    assert list(zip(*found.to_pydict().values(), strict=True)) == spark_v3.events
    assert events.scan(row_filter="id = 13").to_arrow().column("value").to_pylist() == [-1.0]
    vectors = delete_files(events)
    assert vectors
    assert {(d.content, d.file_format) for d in vectors} == {(DataFileContent.POSITION_DELETES, FileFormat.PUFFIN)}

    upgraded = catalog.load_table((spark_v3.ns, "upgraded"))
    assert upgraded.metadata.format_version == 3
    assert upgraded.metadata.next_row_id == 6
    assert [(s.first_row_id, s.added_rows) for s in upgraded.metadata.snapshots] == [
        (None, None),
        (None, None),
        (None, None),
        (0, 6),
        (6, 0),
        (6, 0),
    ]
    assert sorted(upgraded.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": i, "data": d} for i, d in spark_v3.upgraded
    ]
    assert {d.file_format for d in delete_files(upgraded)} == {FileFormat.PUFFIN}


SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def test_pyiceberg_creates_and_evolves_v3_tables_that_spark_then_writes(
    spark: Any, catalog: RestCatalog, ns_name: str
) -> None:
    catalog.create_namespace(ns_name)
    table = catalog.create_table((ns_name, "t"), SCHEMA, properties={"format-version": "3"})
    assert table.metadata.format_version == 3
    assert table.metadata.next_row_id == 0
    assert table.properties["write.parquet.compression-codec"] == "zstd"

    with table.update_schema() as update:
        update.add_column("name", StringType())
    table.update_spec().add_identity("name").commit()
    with table.transaction() as tx:
        tx.set_properties({"write.delete.mode": "merge-on-read"})
    table = catalog.load_table((ns_name, "t"))
    assert table.metadata.format_version == 3
    assert [f.name for f in table.schema().fields] == ["id", "name"]
    assert [f.name for f in table.spec().fields] == ["name"]
    assert table.properties["write.delete.mode"] == "merge-on-read"

    # A staged create (create transaction) of a v3 table.
    with catalog.create_table_transaction((ns_name, "staged"), SCHEMA, properties={"format-version": "3"}) as tx:
        tx.set_properties({"k": "v"})
    staged = catalog.load_table((ns_name, "staged"))
    assert (staged.metadata.format_version, staged.metadata.next_row_id, staged.properties["k"]) == (3, 0, "v")

    # pyiceberg 0.12 refuses, client-side, to write v3 manifests or to upgrade a table to v3.
    with pytest.raises(ValueError, match="Cannot write manifest for table version: 3"):
        table.append(pa.Table.from_pylist([{"id": 1, "name": "a"}], schema=table.schema().as_arrow()))
    v2 = catalog.create_table((ns_name, "v2"), SCHEMA)
    with pytest.raises(ValueError, match="Unsupported table format version: 3"), v2.transaction() as tx:
        tx.upgrade_table_version(3)
    assert catalog.load_table((ns_name, "v2")).metadata.format_version == 2

    # Spark writes the pyiceberg-created v3 table (rows numbered from 0); pyiceberg reads Spark's rows back.
    spark_table = f"{SPARK_CATALOG}.{ns_name}.t"
    spark.sql(f"INSERT INTO {spark_table} VALUES (1, 'a'), (2, 'a'), (3, 'b')")
    inserted = row_lineage(spark, spark_table)
    assert sorted(r[1] for r in inserted) == [0, 1, 2] and {r[2] for r in inserted} == {1}
    spark.sql(f"DELETE FROM {spark_table} WHERE id = 2")
    assert row_lineage(spark, spark_table) == [r for r in inserted if r[0] != 2]
    assert srows(spark, f"SELECT content, file_format FROM {spark_table}.delete_files") == [(1, "PUFFIN")]
    table = catalog.load_table((ns_name, "t"))
    assert_row_ids_counted(table)
    assert table.metadata.next_row_id == 3
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "name": "a"},
        {"id": 3, "name": "b"},
    ]
    for name in ("t", "staged", "v2"):
        catalog.purge_table((ns_name, name))


def test_rest_upgrade_format_version_of_a_pyiceberg_v2_table_with_data(
    spark: Any, proxy: ProxyProcess, catalog: RestCatalog, ns_name: str
) -> None:
    """A plain REST commit ``upgrade-format-version`` 3 on a v2 table with data; Spark's next append numbers it."""
    catalog.create_namespace(ns_name)
    table = catalog.create_table((ns_name, "t"), SCHEMA)
    table.append(pa.Table.from_pylist([{"id": 1}, {"id": 2}], schema=table.schema().as_arrow()))
    url = f"{proxy.url}/v1/local/namespaces/{quote(ns_name)}/tables/t"
    body = {
        "requirements": [{"type": "assert-table-uuid", "uuid": str(table.metadata.table_uuid)}],
        "updates": [{"action": "upgrade-format-version", "format-version": 3}],
    }
    response = httpx.post(url, json=body, timeout=30)
    assert response.status_code == 200, response.text
    metadata = response.json()["metadata"]
    assert (metadata["format-version"], metadata["next-row-id"]) == (3, 0)
    assert "first-row-id" not in metadata["snapshots"][0]

    spark.sql(f"INSERT INTO {SPARK_CATALOG}.{ns_name}.t VALUES (3)")
    lineage = row_lineage(spark, f"{SPARK_CATALOG}.{ns_name}.t")
    assert [r[0] for r in lineage] == [1, 2, 3]
    assert sorted(r[1] for r in lineage) == [0, 1, 2]
    table = catalog.load_table((ns_name, "t"))
    assert (table.metadata.format_version, table.metadata.next_row_id) == (3, 3)
    assert [(s.first_row_id, s.added_rows) for s in table.metadata.snapshots] == [(None, None), (0, 3)]
    catalog.purge_table((ns_name, "t"))


# DuckDB -------------------------------------------------------------------------------------------------
def fetch(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return con.execute(sql).fetchall()


def test_duckdb_reads_spark_v3_tables_through_the_catalog(
    duck: duckdb.DuckDBPyConnection, spark_v3: SparkV3Tables
) -> None:
    ns = spark_v3.ns
    assert fetch(duck, f"SELECT id, category, value FROM irc.{ns}.events ORDER BY id") == spark_v3.events
    assert fetch(duck, f"SELECT count(*) FROM irc.{ns}.events WHERE id % 7 = 0 OR id = 15") == [(0,)]
    assert fetch(duck, f"SELECT value FROM irc.{ns}.events WHERE id IN (13, 16, 2000) ORDER BY id") == [
        (-1.0,),
        (0.5,),
        (9.0,),
    ]
    assert fetch(duck, f"SELECT id, data FROM irc.{ns}.upgraded ORDER BY id") == spark_v3.upgraded


def test_duckdb_iceberg_scan_on_the_metadata_location(
    duck: duckdb.DuckDBPyConnection, catalog: RestCatalog, spark_v3: SparkV3Tables
) -> None:
    for name, expected in (("events", spark_v3.events), ("upgraded", spark_v3.upgraded)):
        location = catalog.load_table((spark_v3.ns, name)).metadata_location
        assert location is not None
        path = urlparse(location).path
        columns = "id, category, value" if name == "events" else "id, data"
        assert fetch(duck, f"SELECT {columns} FROM iceberg_scan('{path}') ORDER BY id") == expected


def test_duckdb_and_spark_write_one_v3_table_and_row_ids_stay_unique(
    spark: Any, duck: duckdb.DuckDBPyConnection, catalog: RestCatalog, ns_name: str
) -> None:
    """DuckDB 1.5.5 writes v3 too (first-row-id/added-rows, deletion vectors): engines take turns on one table."""
    table = f"{SPARK_CATALOG}.{ns_name}.t"
    spark.sql(f"CREATE NAMESPACE {SPARK_CATALOG}.{ns_name}")
    spark.sql(f"CREATE TABLE {table} (id bigint, v string) USING iceberg TBLPROPERTIES ({MOR_PROPERTIES})")
    spark.sql(f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ id, 's' FROM range(0, 4)")
    assert row_lineage(spark, table) == [(i, i, 1) for i in range(4)]

    duck.execute(f"INSERT INTO irc.{ns_name}.t VALUES (10, 'd'), (11, 'd')")
    duck.execute(f"DELETE FROM irc.{ns_name}.t WHERE id = 1")
    duck.execute(f"UPDATE irc.{ns_name}.t SET v = 'du' WHERE id = 2")
    loaded = catalog.load_table((ns_name, "t"))
    assert_row_ids_counted(loaded)
    assert [(s.first_row_id, s.added_rows) for s in loaded.metadata.snapshots][:2] == [(0, 4), (4, 2)]

    spark.sql(f"REFRESH TABLE {table}")  # Spark's catalog caches the table it loaded
    lineage = row_lineage(spark, table)
    by_id = {r[0]: r for r in lineage}
    assert sorted(by_id) == [0, 2, 3, 10, 11]
    assert sorted((by_id[10][1], by_id[11][1])) == [4, 5] and by_id[10][2] == by_id[11][2] == 2
    assert by_id[2][1] == 2 and by_id[2][2] == 4  # DuckDB's UPDATE kept the row id, in its own commit
    assert [by_id[i] for i in (0, 3)] == [(0, 0, 1), (3, 3, 1)]

    # Spark deletes on the file DuckDB already deleted from: still one vector per data file.
    spark.sql(f"DELETE FROM {table} WHERE id = 3")
    spark.sql(f"INSERT INTO {table} VALUES (20, 's')")
    files = srows(spark, f"SELECT content, file_format, referenced_data_file FROM {table}.delete_files")
    assert {(c, f) for c, f, _ in files} == {(1, "PUFFIN")}
    assert len({r for _, _, r in files}) == len(files)
    lineage = row_lineage(spark, table)
    assert [r[0] for r in lineage] == [0, 2, 10, 11, 20]
    assert len({r[1] for r in lineage}) == 5
    loaded = catalog.load_table((ns_name, "t"))
    assert_row_ids_counted(loaded)
    assert lineage[-1][1] == loaded.metadata.next_row_id - 1
    assert fetch(duck, f"SELECT id, v FROM irc.{ns_name}.t ORDER BY id") == [
        (0, "s"),
        (2, "du"),
        (10, "d"),
        (11, "d"),
        (20, "s"),
    ]
    spark.sql(f"DROP TABLE {table} PURGE")
    spark.sql(f"DROP NAMESPACE {SPARK_CATALOG}.{ns_name}")


# Through a Glue catalog (moto; a file:// warehouse, since Spark has no S3 FileIO here) ---------------------
GLUE_CATALOG = "glue_v3c"


@pytest.fixture(scope="module")
def glue_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProxyProcess, str]]:
    """A proxy whose catalog ``glue_v3c`` is Glue on moto; yields it with moto's endpoint."""
    with moto_server() as endpoint:
        httpx.post(f"{endpoint}/moto-api/reset")  # moto's backends are process-wide
        warehouse = tmp_path_factory.mktemp("glue-v3c-warehouse")
        server = ProxyProcess(
            tmp_path_factory.mktemp("glue-v3c-proxy"), glue_catalog_config(GLUE_CATALOG, endpoint, warehouse.as_uri())
        ).start()
        try:
            yield server, endpoint
        finally:
            server.stop()
            httpx.post(f"{endpoint}/moto-api/reset")


def test_spark_v3_table_on_glue_read_by_pyiceberg_and_duckdb(
    spark: Any, glue_proxy: tuple[ProxyProcess, str], extension_dir: Path, ns_name: str
) -> None:
    proxy, moto = glue_proxy
    for key, value in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest", ".uri": proxy.url}.items():
        spark.conf.set(f"spark.sql.catalog.{GLUE_CATALOG}{key}", value)
    spark.conf.set(f"spark.sql.catalog.{GLUE_CATALOG}.warehouse", GLUE_CATALOG)
    table = f"{GLUE_CATALOG}.{ns_name}.events"
    spark.sql(f"CREATE NAMESPACE {GLUE_CATALOG}.{ns_name}")
    spark.sql(
        f"CREATE TABLE {table} (id bigint, category string) USING iceberg PARTITIONED BY (category) "
        f"TBLPROPERTIES ({MOR_PROPERTIES})"
    )
    spark.sql(f"INSERT INTO {table} SELECT id, IF(id % 2 = 0, 'even', 'odd') FROM range(0, 20)")
    spark.sql(f"DELETE FROM {table} WHERE id % 5 = 0")
    spark.sql(f"UPDATE {table} SET category = 'odd' WHERE id = 2")
    expected = srows(spark, f"SELECT id, category FROM {table} ORDER BY id")
    assert [r[0] for r in expected] == [i for i in range(20) if i % 5 != 0]

    # Glue's pointer names a v3 metadata file.
    glue_table = client("glue", moto).get_table(DatabaseName=ns_name, Name="events")["Table"]
    pointer = glue_table["Parameters"]["metadata_location"]
    metadata = json.loads(Path(urlparse(pointer).path).read_text())
    assert metadata["format-version"] == 3
    assert metadata["next-row-id"] == sum(s["added-rows"] for s in metadata["snapshots"]) == 21

    catalog = RestCatalog("glue", uri=proxy.url, warehouse=GLUE_CATALOG)
    loaded = catalog.load_table((ns_name, "events"))
    assert loaded.metadata_location == pointer
    assert_row_ids_counted(loaded)
    assert sorted((r["id"], r["category"]) for r in loaded.scan().to_arrow().to_pylist()) == expected

    con = offline_duckdb(extension_dir)
    try:
        con.execute(
            f"ATTACH '{GLUE_CATALOG}' AS g (TYPE iceberg, ENDPOINT '{proxy.url}', AUTHORIZATION_TYPE 'none', "
            "ACCESS_DELEGATION_MODE 'none')"
        )
        assert fetch(con, f"SELECT id, category FROM g.{ns_name}.events ORDER BY id") == expected
    finally:
        con.close()
    spark.sql(f"DROP TABLE {table} PURGE")
    spark.sql(f"DROP NAMESPACE {GLUE_CATALOG}.{ns_name}")
