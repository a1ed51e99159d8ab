"""PySpark, pyiceberg and DuckDB through a front proxy whose ``remote`` prefix is federated to a
second irc-proxy (OAuth2 on); what they write is checked on the remote directly."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from tests.e2e.test_duckdb import offline_duckdb
from tests.support.federation import rest_catalog, start_front, start_remote, token
from tests.support.server import ProxyProcess

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))
ARROW = pa.schema([("id", pa.int64()), ("name", pa.string())])
FED = "fed"


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    server = start_remote(tmp_path_factory.mktemp("remote"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory, remote: ProxyProcess) -> Iterator[ProxyProcess]:
    server = start_front(
        tmp_path_factory.mktemp("front"),
        rest_catalog("remote", remote.url),
        rest_catalog("flat", remote.url, nested_namespaces="mapped"),
    )
    yield server
    server.stop()


@pytest.fixture
def via_front(front: ProxyProcess) -> RestCatalog:
    return RestCatalog("front", uri=front.url, warehouse="remote")


@pytest.fixture
def on_remote(remote: ProxyProcess) -> RestCatalog:
    return RestCatalog("remote", uri=remote.url, warehouse="local", token=token(remote.url))


@pytest.fixture
def namespace() -> str:
    return f"e2e_{uuid.uuid4().hex[:8]}"


def test_pyiceberg_writes_through_the_front_and_the_remote_reads_it(
    via_front: RestCatalog, on_remote: RestCatalog, namespace: str
) -> None:
    via_front.create_namespace(namespace, {"owner": "e2e"})
    table = via_front.create_table((namespace, "people"), schema=SCHEMA)
    table.append(pa.Table.from_pylist([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], schema=ARROW))
    table.append(pa.Table.from_pylist([{"id": 3, "name": "c"}], schema=ARROW))
    assert via_front.load_table((namespace, "people")).scan().to_arrow().num_rows == 3
    direct = on_remote.load_table((namespace, "people"))
    assert sorted(direct.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert len(direct.metadata.snapshots) == 2
    assert via_front.list_tables(namespace) == [(namespace, "people")]
    via_front.rename_table((namespace, "people"), (namespace, "persons"))
    assert on_remote.table_exists((namespace, "persons"))
    via_front.drop_table((namespace, "persons"))
    assert not on_remote.table_exists((namespace, "persons"))


def test_pyiceberg_nested_namespaces_on_the_mapped_prefix(
    front: ProxyProcess, on_remote: RestCatalog, namespace: str
) -> None:
    flat = RestCatalog("flat", uri=front.url, warehouse="flat")
    flat.create_namespace((namespace, "sales"))
    assert flat.list_namespaces(namespace) == [(namespace, "sales")]
    table = flat.create_table((namespace, "sales", "orders"), schema=SCHEMA)
    table.append(pa.Table.from_pylist([{"id": 7, "name": "x"}], schema=ARROW))
    assert flat.list_tables((namespace, "sales")) == [(namespace, "sales", "orders")]
    assert on_remote.load_table((f"{namespace}:sales", "orders")).scan().to_arrow().num_rows == 1


def test_duckdb_reads_and_writes_through_the_front(
    front: ProxyProcess, via_front: RestCatalog, on_remote: RestCatalog, namespace: str, tmp_path: Path
) -> None:
    via_front.create_namespace(namespace)
    table = via_front.create_table((namespace, "t"), schema=SCHEMA)
    table.append(pa.Table.from_pylist([{"id": 1, "name": "one"}], schema=ARROW))
    con = offline_duckdb(tmp_path)
    try:
        con.execute(f"ATTACH 'remote' AS fed (TYPE iceberg, ENDPOINT '{front.url}', AUTHORIZATION_TYPE 'none')")
        assert con.execute(f"SELECT id, name FROM fed.{namespace}.t").fetchall() == [(1, "one")]
        con.execute(f"INSERT INTO fed.{namespace}.t VALUES (2, 'two')")
    finally:
        con.close()
    assert sorted(on_remote.load_table((namespace, "t")).scan().to_arrow().column("id").to_pylist()) == [1, 2]


@pytest.mark.spark
def test_spark_ddl_dml_and_views_through_the_front(
    spark: Any, front: ProxyProcess, on_remote: RestCatalog, namespace: str
) -> None:
    for key, value in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest", ".uri": front.url}.items():
        spark.conf.set(f"spark.sql.catalog.{FED}{key}", value)
    spark.conf.set(f"spark.sql.catalog.{FED}.warehouse", "remote")
    spark.sql(f"CREATE NAMESPACE {FED}.{namespace}")
    spark.sql(f"CREATE TABLE {FED}.{namespace}.t (id BIGINT, name STRING) USING iceberg PARTITIONED BY (name)")
    spark.sql(f"INSERT INTO {FED}.{namespace}.t VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    spark.sql(f"DELETE FROM {FED}.{namespace}.t WHERE id = 2")
    spark.sql(f"ALTER TABLE {FED}.{namespace}.t ADD COLUMN score DOUBLE")
    spark.sql(f"UPDATE {FED}.{namespace}.t SET score = 1.5 WHERE id = 1")
    rows = spark.sql(f"SELECT id, name, score FROM {FED}.{namespace}.t ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, "a", 1.5), (3, "a", None)]
    spark.sql(f"CREATE VIEW {FED}.{namespace}.v AS SELECT id FROM {FED}.{namespace}.t WHERE name = 'a'")
    assert sorted(r[0] for r in spark.sql(f"SELECT * FROM {FED}.{namespace}.v").collect()) == [1, 3]
    direct = on_remote.load_table((namespace, "t"))
    assert [f.name for f in direct.schema().fields] == ["id", "name", "score"]
    assert direct.scan().to_arrow().num_rows == 2
    assert on_remote.view_exists((namespace, "v"))
    spark.sql(f"DROP VIEW {FED}.{namespace}.v")
    spark.sql(f"DROP TABLE {FED}.{namespace}.t PURGE")
    assert not on_remote.table_exists((namespace, "t"))
