"""DuckDB 1.5.5 (iceberg extension, loaded offline from the extension wheels) against the served proxy.

Measured facts (see the report in NOTES): all three extensions are required — ``LOAD iceberg``
auto-installs ``avro`` and ``ATTACH ... (TYPE iceberg)`` auto-installs ``httpfs`` (its HTTP
client), both of which fail offline, so they are installed from the wheels first.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.manifest import DataFileContent

from tests.e2e.conftest import SPARK_CATALOG
from tests.support.server import ProxyProcess

DUCKDB_EXTENSIONS = ("avro", "httpfs", "iceberg")  # in load order


def extension_file(name: str) -> Path:
    package = importlib.import_module(f"duckdb_extension_{name}")
    path = Path(next(iter(package.__path__))) / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    assert path.is_file(), path
    return path


def offline_duckdb(extension_dir: Path) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the extensions installed from their wheels into ``extension_dir`` and loaded."""
    con = duckdb.connect()
    con.execute(f"SET extension_directory = '{extension_dir}'")  # keep INSTALL out of ~/.duckdb
    con.execute("SET autoinstall_known_extensions = false")
    for name in DUCKDB_EXTENSIONS:
        con.execute(f"INSTALL '{extension_file(name)}'")
        con.execute(f"LOAD {name}")
    return con


def connect(proxy: ProxyProcess, extension_dir: Path, options: str = "") -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the proxy's ``local`` catalog attached as ``irc``."""
    con = offline_duckdb(extension_dir)
    extra = f", {options}" if options else ""
    con.execute(f"ATTACH 'local' AS irc (TYPE iceberg, ENDPOINT '{proxy.url}', AUTHORIZATION_TYPE 'none'{extra})")
    return con


@pytest.fixture(scope="module")
def extension_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("duckdb-extensions")


@pytest.fixture
def duck(proxy: ProxyProcess, extension_dir: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(proxy, extension_dir)
    yield con
    con.close()


@pytest.fixture
def catalog(proxy: ProxyProcess) -> RestCatalog:
    return RestCatalog("pyiceberg", uri=proxy.url, warehouse="local")


def fetch(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return con.execute(sql).fetchall()


@pytest.mark.spark
def test_duckdb_reads_spark_merge_on_read_deletes(
    spark: Any, duck: duckdb.DuckDBPyConnection, catalog: RestCatalog, ns_name: str
) -> None:
    table = f"{SPARK_CATALOG}.{ns_name}.events"
    spark.sql(f"CREATE NAMESPACE {SPARK_CATALOG}.{ns_name}")
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, category STRING, value DOUBLE) USING iceberg "
        "PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
    )
    spark.sql(
        f"INSERT INTO {table} SELECT id, CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END, id * 1.5 FROM range(0, 60)"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1000, 'even', 1.0), (1003, 'odd', 2.0)")
    spark.sql(f"DELETE FROM {table} WHERE id % 7 = 0")
    spark.sql(f"UPDATE {table} SET value = -1.0 WHERE id = 13")
    expected_ids = sorted([i for i in range(60) if i % 7 != 0] + [1000, 1003])
    spark_rows = spark.sql(f"SELECT id, value FROM {table}").collect()
    assert sorted(r.id for r in spark_rows) == expected_ids

    # Spark really wrote positional delete files (merge-on-read, format v2).
    loaded = catalog.load_table((ns_name, "events"))
    assert loaded.metadata.format_version == 2
    delete_files = {d.file_path: d.content for t in loaded.scan().plan_files() for d in t.delete_files}
    assert delete_files
    assert set(delete_files.values()) == {DataFileContent.POSITION_DELETES}

    got = fetch(duck, f"SELECT id FROM irc.{ns_name}.events ORDER BY id")
    assert [r[0] for r in got] == expected_ids
    assert fetch(duck, f"SELECT count(*) FROM irc.{ns_name}.events WHERE id % 7 = 0") == [(0,)]
    assert fetch(duck, f"SELECT value FROM irc.{ns_name}.events WHERE id = 13") == [(-1.0,)]
    assert fetch(duck, f"SELECT category, count(*) FROM irc.{ns_name}.events GROUP BY ALL ORDER BY ALL") == [
        ("even", len([i for i in expected_ids if i % 2 == 0])),
        ("odd", len([i for i in expected_ids if i % 2 == 1])),
    ]
    snapshots = fetch(duck, f"SELECT operation FROM iceberg_snapshots(irc.{ns_name}.events) ORDER BY sequence_number")
    assert [s[0] for s in snapshots][:2] == ["append", "append"]
    assert len(snapshots) == 4


def test_duckdb_lists_namespaces_and_tables(
    catalog: RestCatalog, proxy: ProxyProcess, extension_dir: Path, ns_name: str
) -> None:
    catalog.create_namespace(ns_name)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    for name in ("alpha", "beta"):
        catalog.create_table((ns_name, name), schema).append(
            pa.Table.from_pylist([{"id": 1, "name": name}], schema=schema)
        )
    con = connect(proxy, extension_dir)
    try:
        assert (ns_name,) in fetch(con, "SELECT schema_name FROM duckdb_schemas() WHERE database_name = 'irc'")
        assert fetch(con, f"SHOW TABLES FROM irc.{ns_name}") == [("alpha",), ("beta",)]
        listed = fetch(
            con,
            "SELECT schema_name, table_name FROM duckdb_tables() "
            f"WHERE database_name = 'irc' AND schema_name = '{ns_name}' ORDER BY ALL",
        )
        assert listed == [(ns_name, "alpha"), (ns_name, "beta")]
        assert fetch(con, f"SELECT name FROM irc.{ns_name}.beta") == [("beta",)]

        # A table created by another client after ATTACH shows up in the next transaction.
        catalog.create_table((ns_name, "gamma"), schema)
        assert fetch(con, f"SHOW TABLES FROM irc.{ns_name}") == [("alpha",), ("beta",), ("gamma",)]
        assert fetch(con, f"SELECT count(*) FROM irc.{ns_name}.gamma") == [(0,)]
    finally:
        con.close()


def test_duckdb_nested_namespaces(catalog: RestCatalog, proxy: ProxyProcess, extension_dir: Path, ns_name: str) -> None:
    """With SUPPORT_NESTED_NAMESPACES, DuckDB walks ``parent=`` and names a nested namespace ``"a.b"``."""
    schema = pa.schema([("id", pa.int64())])
    catalog.create_namespace((ns_name, "sales"))
    catalog.create_table((ns_name, "sales", "orders"), schema).append(pa.Table.from_pylist([{"id": 7}], schema=schema))
    con = connect(proxy, extension_dir, "SUPPORT_NESTED_NAMESPACES true")
    try:
        schemas = fetch(
            con,
            f"SELECT schema_name FROM duckdb_schemas() WHERE database_name = 'irc' "
            f"AND schema_name LIKE '{ns_name}%' ORDER BY ALL",
        )
        assert schemas == [(ns_name,), (f"{ns_name}.sales",)]
        assert fetch(con, f'SELECT id FROM irc."{ns_name}.sales".orders') == [(7,)]
        con.execute(f'CREATE SCHEMA irc."{ns_name}.ops"')
        con.execute(f'CREATE TABLE irc."{ns_name}.ops".runs AS SELECT 1 AS run')
    finally:
        con.close()
    assert sorted(catalog.list_namespaces((ns_name,))) == [(ns_name, "ops"), (ns_name, "sales")]
    assert catalog.load_table((ns_name, "ops", "runs")).scan().to_arrow().to_pylist() == [{"run": 1}]


def test_duckdb_create_insert_delete_then_pyiceberg_reads(
    duck: duckdb.DuckDBPyConnection, catalog: RestCatalog, ns_name: str
) -> None:
    duck.execute(f"CREATE SCHEMA irc.{ns_name}")  # createNamespace
    assert catalog.namespace_exists(ns_name)
    duck.execute(f"CREATE TABLE irc.{ns_name}.people (id INTEGER, name VARCHAR, score DOUBLE)")  # stage + commit
    duck.execute(f"INSERT INTO irc.{ns_name}.people VALUES (1, 'ann', 1.5), (2, 'bob', 2.5), (3, 'cy', 3.5)")
    duck.execute(f"INSERT INTO irc.{ns_name}.people VALUES (4, 'dee', 4.5)")
    duck.execute(f"DELETE FROM irc.{ns_name}.people WHERE id = 2")  # positional delete file
    duck.execute(f"UPDATE irc.{ns_name}.people SET score = 0.0 WHERE id = 3")

    table = catalog.load_table((ns_name, "people"))
    assert table.metadata.format_version == 2
    assert [f.name for f in table.schema().fields] == ["id", "name", "score"]
    rows = table.scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [
        {"id": 1, "name": "ann", "score": 1.5},
        {"id": 3, "name": "cy", "score": 0.0},
        {"id": 4, "name": "dee", "score": 4.5},
    ]
    assert [s.summary.operation.value for s in table.snapshots() if s.summary] == [
        "append",
        "append",
        "delete",
        "overwrite",
    ]

    # pyiceberg appends to DuckDB's table; DuckDB reads the new snapshot.
    table.append(pa.Table.from_pylist([{"id": 5, "name": "eve", "score": 5.5}], schema=table.schema().as_arrow()))
    assert fetch(duck, f"SELECT id FROM irc.{ns_name}.people ORDER BY id") == [(1,), (3,), (4,), (5,)]

    duck.execute(f"DROP TABLE irc.{ns_name}.people")
    assert not catalog.table_exists((ns_name, "people"))


def test_duckdb_ctas_then_pyiceberg_reads(duck: duckdb.DuckDBPyConnection, catalog: RestCatalog, ns_name: str) -> None:
    catalog.create_namespace(ns_name)
    # CTAS: stage-create, data files under <location>/data, then one assert-create commit.
    duck.execute(
        f"CREATE TABLE irc.{ns_name}.squares AS "
        "SELECT range AS n, range * range AS sq, 'row-' || range::VARCHAR AS label FROM range(100)"
    )
    table = catalog.load_table((ns_name, "squares"))
    assert table.metadata_location is not None
    assert len(table.metadata.snapshots) == 1
    result = table.scan(row_filter="n >= 95").to_arrow().sort_by("n").to_pylist()
    assert result == [{"n": n, "sq": n * n, "label": f"row-{n}"} for n in range(95, 100)]
    assert len(table.scan().to_arrow()) == 100
    assert fetch(duck, f"SELECT sum(sq) FROM irc.{ns_name}.squares") == [(sum(n * n for n in range(100)),)]


@pytest.mark.spark
def test_spark_reads_duckdb_table(spark: Any, duck: duckdb.DuckDBPyConnection, ns_name: str) -> None:
    duck.execute(f"CREATE SCHEMA irc.{ns_name}")
    duck.execute(f"CREATE TABLE irc.{ns_name}.t AS SELECT range AS id, range % 3 AS k FROM range(10)")
    duck.execute(f"DELETE FROM irc.{ns_name}.t WHERE k = 0")
    got = spark.sql(f"SELECT id FROM {SPARK_CATALOG}.{ns_name}.t ORDER BY id").collect()
    assert [r.id for r in got] == [i for i in range(10) if i % 3 != 0]
