"""Real clients through a Glue-backed proxy: pyiceberg (data on moto's S3), PySpark (``file://`` warehouse,
and ``s3://`` on moto through S3A) and DuckDB. Glue and S3 are moto's server on 127.0.0.1; Glue's own view
of every step is read back with boto3.

The proxy serves two Glue catalogs over the same moto Glue: ``glue_s3`` (warehouse ``s3://<bucket>/wh``)
and ``glue_file`` (a ``file://`` warehouse). Credential vending does not exist yet, so clients get their
own S3 settings for moto.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import duckdb
import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

from tests.e2e.test_duckdb import offline_duckdb
from tests.support.aws import ACCESS_KEY, REGION, SECRET_KEY, client, glue_catalog_config, moto_server
from tests.support.rest import expunge_dropped
from tests.support.server import ProxyProcess

S3_CATALOG = "glue_s3"
FILE_CATALOG = "glue_file"
BUCKET = "irc-glue-e2e"

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False),
)
ARROW = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])
BY_REGION = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))


def reset_moto(endpoint: str) -> None:
    """moto's backends are process-wide: start and leave the module with an empty moto."""
    httpx.post(f"{endpoint}/moto-api/reset")


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with moto_server() as endpoint:
        reset_moto(endpoint)
        client("s3", endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint
        reset_moto(endpoint)


@pytest.fixture(scope="module")
def glue(moto: str) -> Any:
    return client("glue", moto)


@pytest.fixture(scope="module")
def s3(moto: str) -> Any:
    return client("s3", moto)


@pytest.fixture(scope="module")
def file_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("glue-file-warehouse")


@pytest.fixture(scope="module")
def glue_proxy(moto: str, file_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    config = glue_catalog_config(S3_CATALOG, moto, f"s3://{BUCKET}/wh", s3_path_style_access="true")
    config += glue_catalog_config(FILE_CATALOG, moto, file_warehouse.as_uri())
    server = ProxyProcess(tmp_path_factory.mktemp("glue-e2e-proxy"), config).start()
    yield server
    server.stop()


def s3_client_properties(moto: str) -> dict[str, str]:
    return {
        "s3.endpoint": moto,
        "s3.access-key-id": ACCESS_KEY,
        "s3.secret-access-key": SECRET_KEY,
        "s3.region": REGION,
    }


@pytest.fixture
def catalog(glue_proxy: ProxyProcess, moto: str) -> RestCatalog:
    """pyiceberg's RestCatalog on the proxy's ``glue_s3`` catalog, with S3 settings for moto."""
    return RestCatalog("glue", uri=glue_proxy.url, warehouse=S3_CATALOG, **s3_client_properties(moto))


def keys(s3: Any, prefix: str) -> list[str]:
    """Object keys under ``prefix``, without the empty directory markers pyarrow's S3 filesystem leaves."""
    found = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return sorted(o["Key"] for o in found if not (o["Key"].endswith("/") and o["Size"] == 0))


def rows(*items: tuple[int, str, float]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "region": r, "amount": a} for i, r, a in items], schema=ARROW)


def glue_table(glue: Any, database: str, name: str) -> dict[str, Any]:
    table: dict[str, Any] = glue.get_table(DatabaseName=database, Name=name)["Table"]
    return table


def current_columns(table: dict[str, Any]) -> list[str]:
    """Glue columns of the current schema (columns of older schemas stay, marked ``iceberg.field.current=false``)."""
    columns = table["StorageDescriptor"]["Columns"]
    return [c["Name"] for c in columns if c.get("Parameters", {}).get("iceberg.field.current") == "true"]


def glue_table_names(glue: Any, database: str) -> set[str]:
    return {t["Name"] for t in glue.get_tables(DatabaseName=database)["TableList"]}


# pyiceberg ---------------------------------------------------------------------------------------
def test_pyiceberg_lifecycle_on_glue_with_data_on_s3(catalog: RestCatalog, glue: Any, s3: Any, ns_name: str) -> None:
    ns = (ns_name, "b")
    catalog.create_namespace(ns, {"owner": "alice"})
    assert (ns_name,) in catalog.list_namespaces()
    assert catalog.list_namespaces((ns_name,)) == [ns]
    database = glue.get_database(Name=f"{ns_name}:b")["Database"]
    assert database["Parameters"] == {"owner": "alice"}
    glue.get_database(Name=ns_name)  # the parent is a database too

    table = catalog.create_table((*ns, "orders"), schema=SCHEMA, partition_spec=BY_REGION)
    location = f"s3://{BUCKET}/wh/{ns_name}/b/orders"
    assert table.metadata.location == location
    assert table.metadata_location.startswith(f"{location}/metadata/00000-")
    parameters = glue_table(glue, f"{ns_name}:b", "orders")["Parameters"]
    assert parameters["table_type"] == "ICEBERG"
    assert parameters["metadata_location"] == table.metadata_location
    assert keys(s3, f"wh/{ns_name}/b/orders/metadata/") == [table.metadata_location.removeprefix(f"s3://{BUCKET}/")]

    # Append and scan: data files on moto's S3, pointer in Glue.
    table.append(rows((1, "eu", 10.0), (2, "us", 20.0), (3, "eu", 30.0)))
    table.append(rows((4, "apac", 40.0)))
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
    assert sorted(table.scan(row_filter=EqualTo("region", "eu")).to_arrow().column("id").to_pylist()) == [1, 3]
    assert len(table.metadata.snapshots) == 2
    data = [k for k in keys(s3, f"wh/{ns_name}/b/orders/data/") if k.endswith(".parquet")]
    assert len(data) == 3  # one file per partition per append: eu + us, then apac
    previous = table.metadata_location
    reloaded = catalog.load_table((*ns, "orders"))
    assert reloaded.metadata_location == previous
    assert glue_table(glue, f"{ns_name}:b", "orders")["Parameters"]["metadata_location"] == previous

    # Schema evolution: the new column is in the Iceberg schema and mirrored as a Glue column.
    with table.update_schema() as update:
        update.add_column("note", StringType())
    assert [f.name for f in table.schema().fields] == ["id", "region", "amount", "note"]
    glue_view = glue_table(glue, f"{ns_name}:b", "orders")
    assert current_columns(glue_view) == ["id", "region", "amount", "note"]
    assert glue_view["Parameters"]["previous_metadata_location"] == previous
    with_note = pa.schema([*ARROW, ("note", pa.string())])
    table.append(pa.Table.from_pylist([{"id": 5, "region": "us", "amount": 50.0, "note": "late"}], schema=with_note))
    scanned = {r["id"]: r["note"] for r in table.scan().to_arrow().to_pylist()}
    assert scanned == {1: None, 2: None, 3: None, 4: None, 5: "late"}

    # Overwrite, then delete.
    table.overwrite(
        pa.Table.from_pylist([{"id": 10, "region": "eu", "amount": 1.0, "note": "n"}] * 2, schema=with_note)
    )
    assert table.scan().to_arrow().column("id").to_pylist() == [10, 10]
    table.append(pa.Table.from_pylist([{"id": 11, "region": "us", "amount": 2.0, "note": None}], schema=with_note))
    table.delete(EqualTo("id", 10))
    assert catalog.load_table((*ns, "orders")).scan().to_arrow().column("id").to_pylist() == [11]
    snapshots = catalog.load_table((*ns, "orders")).metadata.snapshots
    assert len(snapshots) >= 6

    # Rename inside Glue: the old entry goes, the new one points at the same metadata.
    current = catalog.load_table((*ns, "orders")).metadata_location
    catalog.rename_table((*ns, "orders"), (*ns, "orders_v2"))
    assert glue_table_names(glue, f"{ns_name}:b") == {"orders_v2"}
    assert glue_table(glue, f"{ns_name}:b", "orders_v2")["Parameters"]["metadata_location"] == current
    with pytest.raises(NoSuchTableError):
        catalog.load_table((*ns, "orders"))
    renamed = catalog.load_table((*ns, "orders_v2"))
    assert renamed.scan().to_arrow().column("id").to_pylist() == [11]

    # Drop with purge: the Glue entry and every object of the table are gone.
    assert keys(s3, f"wh/{ns_name}/b/orders/")
    catalog.purge_table((*ns, "orders_v2"))
    assert glue_table_names(glue, f"{ns_name}:b") == set()
    assert keys(s3, f"wh/{ns_name}/b/orders/")  # kept in the trash until expunged or expired
    expunge_dropped(catalog.properties["uri"], S3_CATALOG, ns, "orders_v2")
    assert keys(s3, f"wh/{ns_name}/b/orders/") == []
    catalog.drop_namespace(ns)
    catalog.drop_namespace((ns_name,))
    assert not [d for d in glue.get_databases()["DatabaseList"] if d["Name"].startswith(ns_name)]


# DuckDB ------------------------------------------------------------------------------------------
def duckdb_on_glue(proxy: ProxyProcess, moto: str, extension_dir: Path, warehouse: str) -> duckdb.DuckDBPyConnection:
    """DuckDB with the extensions loaded offline, an S3 secret for moto and the proxy's catalog as ``g``."""
    con = offline_duckdb(extension_dir)
    host = urlparse(moto).netloc
    con.execute(
        f"CREATE SECRET moto (TYPE s3, KEY_ID '{ACCESS_KEY}', SECRET '{SECRET_KEY}', REGION '{REGION}', "
        f"ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)"
    )
    con.execute(
        f"ATTACH '{warehouse}' AS g (TYPE iceberg, ENDPOINT '{proxy.url}', AUTHORIZATION_TYPE 'none', "
        "ACCESS_DELEGATION_MODE 'none')"
    )
    return con


def test_duckdb_reads_a_pyiceberg_table_on_s3_through_glue(
    catalog: RestCatalog, glue_proxy: ProxyProcess, moto: str, tmp_path: Path, ns_name: str
) -> None:
    catalog.create_namespace((ns_name, "sales"))
    table = catalog.create_table((ns_name, "sales", "orders"), schema=SCHEMA, partition_spec=BY_REGION)
    table.append(rows((1, "eu", 10.0), (2, "us", 20.0), (3, "eu", 30.0)))
    table.append(rows((4, "apac", 40.0)))
    table.delete(EqualTo("id", 2))
    con = duckdb_on_glue(glue_proxy, moto, tmp_path, S3_CATALOG)
    try:
        found = con.execute(f'SELECT id, region, amount FROM g."{ns_name}.sales".orders ORDER BY id').fetchall()
        assert found == [(1, "eu", 10.0), (3, "eu", 30.0), (4, "apac", 40.0)]
        total = con.execute(f"SELECT sum(amount) FROM g.\"{ns_name}.sales\".orders WHERE region = 'eu'").fetchone()
        assert total == (40.0,)
    finally:
        con.close()
    catalog.purge_table((ns_name, "sales", "orders"))


# PySpark -----------------------------------------------------------------------------------------
def add_spark_catalog(spark: Any, name: str, proxy: ProxyProcess, warehouse: str, **options: str) -> str:
    """Register a REST catalog on the shared SparkSession at run time (catalogs load lazily)."""
    prefix = f"spark.sql.catalog.{name}"
    settings = {
        "": "org.apache.iceberg.spark.SparkCatalog",
        ".type": "rest",
        ".uri": proxy.url,
        ".warehouse": warehouse,
    }
    settings |= {f".{key}": value for key, value in options.items()}
    for key, value in settings.items():
        spark.conf.set(prefix + key, value)
    return name


def srows(spark: Any, statement: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in spark.sql(statement).collect()]


@pytest.mark.spark
def test_spark_ddl_and_dml_on_glue_with_a_file_warehouse(
    spark: Any, glue_proxy: ProxyProcess, glue: Any, file_warehouse: Path, ns_name: str
) -> None:
    cat = add_spark_catalog(spark, "glue_file_e2e", glue_proxy, FILE_CATALOG)
    ns = f"{cat}.{ns_name}.sales"
    database = f"{ns_name}:sales"

    spark.sql(f"CREATE NAMESPACE {ns}")
    assert srows(spark, f"SHOW NAMESPACES IN {cat}.{ns_name}") == [(f"{ns_name}.sales",)]
    assert glue.get_database(Name=database)["Database"]["Name"] == database

    spark.sql(
        f"CREATE TABLE {ns}.orders (id BIGINT, region STRING, amount DOUBLE) USING iceberg PARTITIONED BY (region)"
    )
    orders = glue_table(glue, database, "orders")
    assert orders["Parameters"]["table_type"] == "ICEBERG"
    assert orders["StorageDescriptor"]["Location"] == f"{file_warehouse.as_uri()}/{ns_name}/sales/orders"

    spark.sql(f"INSERT INTO {ns}.orders VALUES (1, 'eu', 10.0), (2, 'us', 20.0), (3, 'eu', 30.0)")
    assert srows(spark, f"SELECT count(*), sum(amount) FROM {ns}.orders") == [(3, 60.0)]
    partitions = srows(spark, f"SELECT partition.region, record_count FROM {ns}.orders.partitions ORDER BY 1")
    assert partitions == [("eu", 2), ("us", 1)]

    spark.sql(
        f"MERGE INTO {ns}.orders t "
        "USING (SELECT * FROM VALUES (2, 'us', 25.0), (4, 'apac', 40.0) AS s(id, region, amount)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.amount = s.amount WHEN NOT MATCHED THEN INSERT *"
    )
    assert srows(spark, f"SELECT id, region, amount FROM {ns}.orders ORDER BY id") == [
        (1, "eu", 10.0),
        (2, "us", 25.0),
        (3, "eu", 30.0),
        (4, "apac", 40.0),
    ]

    spark.sql(
        f"CREATE TABLE {ns}.by_region USING iceberg AS "
        f"SELECT region, sum(amount) AS total FROM {ns}.orders GROUP BY region"
    )
    assert srows(spark, f"SELECT region, total FROM {ns}.by_region ORDER BY region") == [
        ("apac", 40.0),
        ("eu", 40.0),
        ("us", 25.0),
    ]
    ctas = glue_table(glue, database, "by_region")
    assert ctas["Parameters"]["table_type"] == "ICEBERG"
    assert current_columns(ctas) == ["region", "total"]

    spark.sql(
        f"CREATE OR REPLACE TABLE {ns}.by_region USING iceberg AS "
        f"SELECT region, count(*) AS n FROM {ns}.orders GROUP BY region"
    )
    assert srows(spark, f"SELECT region, n FROM {ns}.by_region ORDER BY region") == [("apac", 1), ("eu", 2), ("us", 1)]
    rtas = glue_table(glue, database, "by_region")
    assert current_columns(rtas) == ["region", "n"]
    assert [c["Name"] for c in rtas["StorageDescriptor"]["Columns"]] == ["region", "n", "total"]
    assert rtas["Parameters"]["previous_metadata_location"] == ctas["Parameters"]["metadata_location"]
    assert len(srows(spark, f"SELECT * FROM {ns}.by_region.history")) == 2  # the replace keeps history

    spark.sql(f"ALTER TABLE {ns}.orders ADD COLUMN note STRING")
    spark.sql(f"INSERT INTO {ns}.orders VALUES (5, 'eu', 50.0, 'late')")
    assert srows(spark, f"SELECT id, note FROM {ns}.orders WHERE id IN (1, 5) ORDER BY id") == [(1, None), (5, "late")]
    assert current_columns(glue_table(glue, database, "orders")) == ["id", "region", "amount", "note"]

    spark.sql(f"ALTER TABLE {ns}.orders RENAME TO {ns_name}.sales.orders_v2")  # the target is catalog-relative
    assert sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {ns}").collect()) == ["by_region", "orders_v2"]
    assert glue_table_names(glue, database) == {"by_region", "orders_v2"}
    assert srows(spark, f"SELECT count(*) FROM {ns}.orders_v2") == [(5,)]

    files = [Path(urlparse(p).path) for (p,) in srows(spark, f"SELECT file_path FROM {ns}.orders_v2.files")]
    assert files and all(f.is_file() for f in files)
    spark.sql(f"DROP TABLE {ns}.orders_v2 PURGE")
    assert not any(f.exists() for f in files)
    assert glue_table_names(glue, database) == {"by_region"}
    assert sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {ns}").collect()) == ["by_region"]

    spark.sql(f"DROP TABLE {ns}.by_region PURGE")
    spark.sql(f"DROP NAMESPACE {ns}")
    spark.sql(f"DROP NAMESPACE {cat}.{ns_name}")
    assert not [d for d in glue.get_databases()["DatabaseList"] if d["Name"].startswith(ns_name)]


@pytest.mark.spark
def test_spark_drops_a_glue_table_and_a_view_and_reads_both_again_after_a_restore(
    spark: Any, glue_proxy: ProxyProcess, glue: Any, ns_name: str
) -> None:
    """The trash on Glue: the table comes back with its rows, history and the Glue entry's own attributes."""
    cat = add_spark_catalog(spark, "glue_trash_e2e", glue_proxy, FILE_CATALOG)
    table, view = f"{cat}.{ns_name}.orders", f"{cat}.{ns_name}.eu_orders"
    spark.sql(f"CREATE NAMESPACE {cat}.{ns_name}")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, region STRING, amount DOUBLE) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'eu', 10.0), (2, 'us', 20.0)")
    spark.sql(f"INSERT INTO {table} VALUES (3, 'eu', 30.0)")
    spark.sql(f"CREATE VIEW {view} AS SELECT id FROM {table} WHERE region = 'eu'")
    spark.sql(f"CREATE OR REPLACE VIEW {view} AS SELECT id, amount FROM {table} WHERE region = 'eu'")
    expected = srows(spark, f"SELECT * FROM {table} ORDER BY id")
    history = srows(spark, f"SELECT snapshot_id, parent_id FROM {table}.history ORDER BY made_current_at")
    entry = glue_table(glue, ns_name, "orders")  # what people set on the Glue table beside Iceberg's metadata
    table_input: dict[str, Any] = {
        key: entry[key] for key in ("Name", "TableType", "StorageDescriptor") if key in entry
    }
    table_input |= {"Description": "orders", "Owner": "sales-team", "Parameters": entry["Parameters"] | {"tier": "1"}}
    glue.update_table(DatabaseName=ns_name, TableInput=table_input)
    view_before = httpx.get(f"{glue_proxy.url}/v1/{FILE_CATALOG}/namespaces/{ns_name}/views/eu_orders").json()

    spark.sql(f"DROP VIEW {view}")
    spark.sql(f"DROP TABLE {table}")
    assert glue_table_names(glue, ns_name) == set()
    assert srows(spark, f"SHOW TABLES IN {cat}.{ns_name}") == []

    trash = f"{glue_proxy.url}/management/v1/catalogs/{FILE_CATALOG}/trash"
    entries = {e["kind"]: e for e in httpx.get(trash, params={"namespace": ns_name}).json()["entries"]}
    assert set(entries) == {"table", "view"}
    for kept in entries.values():
        restored = httpx.post(f"{trash}/{kept['id']}/restore", json={})
        assert restored.status_code == 200, restored.text

    assert srows(spark, f"SELECT * FROM {table} ORDER BY id") == expected
    assert srows(spark, f"SELECT snapshot_id, parent_id FROM {table}.history ORDER BY made_current_at") == history
    assert srows(spark, f"SELECT * FROM {view} ORDER BY id") == [(1, 10.0), (3, 30.0)]
    view_after = httpx.get(f"{glue_proxy.url}/v1/{FILE_CATALOG}/namespaces/{ns_name}/views/eu_orders").json()
    assert view_after == view_before and len(view_after["metadata"]["versions"]) == 2
    back = glue_table(glue, ns_name, "orders")
    assert (back["Description"], back["Owner"], back["Parameters"]["tier"]) == ("orders", "sales-team", "1")
    spark.sql(f"INSERT INTO {table} VALUES (4, 'apac', 40.0)")  # and it takes commits again
    assert srows(spark, f"SELECT count(*) FROM {table}") == [(4,)]
    assert glue_table(glue, ns_name, "orders")["Owner"] == "sales-team"

    spark.sql(f"DROP VIEW {view}")
    spark.sql(f"DROP TABLE {table}")
    spark.sql(f"DROP NAMESPACE {cat}.{ns_name}")


@pytest.mark.spark
def test_spark_on_an_s3_warehouse_through_s3a(
    spark: Any,
    s3a_jars: list[Path] | str,
    glue_proxy: ProxyProcess,
    moto: str,
    glue: Any,
    s3: Any,
    catalog: RestCatalog,
    tmp_path: Path,
    ns_name: str,
) -> None:
    """Spark writes ``s3://`` tables on moto with Hadoop's S3A (HadoopFileIO); pyiceberg and DuckDB read them."""
    if isinstance(s3a_jars, str):
        pytest.skip(s3a_jars)
    s3a = {
        "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.endpoint": moto,
        "fs.s3a.endpoint.region": REGION,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.access.key": ACCESS_KEY,
        "fs.s3a.secret.key": SECRET_KEY,
    }
    options = {"io-impl": "org.apache.iceberg.hadoop.HadoopFileIO"} | {f"hadoop.{k}": v for k, v in s3a.items()}
    cat = add_spark_catalog(spark, "glue_s3a_e2e", glue_proxy, S3_CATALOG, **options)
    ns = f"{cat}.{ns_name}.lake"
    prefix = f"wh/{ns_name}/lake/events/"

    spark.sql(f"CREATE NAMESPACE {ns}")
    spark.sql(
        f"CREATE TABLE {ns}.events (id BIGINT, category STRING) USING iceberg PARTITIONED BY (category) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')"
    )
    spark.sql(f"INSERT INTO {ns}.events SELECT id, IF(id % 2 = 0, 'even', 'odd') FROM range(0, 20)")
    spark.sql(f"DELETE FROM {ns}.events WHERE id < 4")
    assert srows(spark, f"SELECT count(*), min(id), max(id) FROM {ns}.events") == [(16, 4, 19)]
    stored = keys(s3, prefix)
    assert any(k.startswith(f"{prefix}data/category=even/") for k in stored)
    assert any(k.startswith(f"{prefix}metadata/") and k.endswith(".metadata.json") for k in stored)
    pointer = glue_table(glue, f"{ns_name}:lake", "events")["Parameters"]["metadata_location"]
    assert pointer.startswith(f"s3://{BUCKET}/{prefix}metadata/")

    # Other engines read what Spark wrote, deletes applied.
    table = catalog.load_table((ns_name, "lake", "events"))
    assert table.metadata_location == pointer
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(4, 20))
    con = duckdb_on_glue(glue_proxy, moto, tmp_path, S3_CATALOG)
    try:
        assert con.execute(f'SELECT count(*), sum(id) FROM g."{ns_name}.lake".events').fetchone() == (
            16,
            sum(range(4, 20)),
        )
    finally:
        con.close()

    spark.sql(f"DROP TABLE {ns}.events PURGE")
    assert keys(s3, prefix) == []  # data, delete files, manifests, metadata
    assert glue_table_names(glue, f"{ns_name}:lake") == set()
    spark.sql(f"DROP NAMESPACE {ns}")
