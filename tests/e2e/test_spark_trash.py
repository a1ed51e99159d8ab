"""Spark and the trash (issue 17): a table Spark wrote and dropped comes back with the same rows and history;
a view Spark replaced and dropped comes back with every version."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.server import ProxyProcess

CAT = "irc"  # the Spark catalog name (tests/e2e/conftest.py)
WAREHOUSE = "local"


def rows(spark: Any, statement: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in spark.sql(statement).collect()]


@pytest.fixture
def ns(spark: Any, ns_name: str) -> Iterator[str]:
    spark.sql(f"CREATE NAMESPACE {CAT}.{ns_name}")
    yield ns_name
    for row in spark.sql(f"SHOW VIEWS IN {CAT}.{ns_name}").collect():
        spark.sql(f"DROP VIEW IF EXISTS {CAT}.{ns_name}.{row.viewName}")
    for row in spark.sql(f"SHOW TABLES IN {CAT}.{ns_name}").collect():
        spark.sql(f"DROP TABLE IF EXISTS {CAT}.{ns_name}.{row.tableName}")
    spark.sql(f"DROP NAMESPACE IF EXISTS {CAT}.{ns_name}")


def test_spark_drops_a_table_and_reads_it_again_after_a_restore(spark: Any, proxy: ProxyProcess, ns: str) -> None:
    table = f"{CAT}.{ns}.orders"
    spark.sql(f"CREATE TABLE {table} (id bigint, region string) USING iceberg PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'eu'), (2, 'us')")
    spark.sql(f"INSERT INTO {table} VALUES (3, 'eu')")
    spark.sql(f"DELETE FROM {table} WHERE id = 2")
    spark.sql(f"ALTER TABLE {table} CREATE TAG before_drop")
    expected = rows(spark, f"SELECT id, region FROM {table} ORDER BY id")
    history = rows(spark, f"SELECT snapshot_id, parent_id FROM {table}.history ORDER BY made_current_at")

    spark.sql(f"DROP TABLE {table}")
    assert rows(spark, f"SHOW TABLES IN {CAT}.{ns}") == []
    spark.sql(f"CREATE TABLE {table} (other int) USING iceberg")  # the name is free at once
    spark.sql(f"DROP TABLE {table}")

    trash = f"{proxy.url}/management/v1/catalogs/{WAREHOUSE}/trash"
    entries = httpx.get(trash, params={"namespace": ns}).json()["entries"]
    assert [e["identifier"]["name"] for e in entries] == ["orders", "orders"]  # newest first
    original = entries[1]
    restored = httpx.post(f"{trash}/{original['id']}/restore", json={})
    assert restored.status_code == 200, restored.text

    spark.sql(f"REFRESH TABLE {table}")
    assert rows(spark, f"SELECT id, region FROM {table} ORDER BY id") == expected == [(1, "eu"), (3, "eu")]
    assert rows(spark, f"SELECT snapshot_id, parent_id FROM {table}.history ORDER BY made_current_at") == history
    assert rows(spark, f"SELECT name FROM {table}.refs ORDER BY name") == [("before_drop",), ("main",)]
    spark.sql(f"INSERT INTO {table} VALUES (4, 'us')")  # and it takes commits again
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(3,)]


def test_spark_drops_a_view_and_reads_it_again_with_every_version_after_a_restore(
    spark: Any, proxy: ProxyProcess, ns: str
) -> None:
    table, view = f"{CAT}.{ns}.orders", f"{CAT}.{ns}.eu_orders"
    spark.sql(f"CREATE TABLE {table} (id bigint, region string) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'eu'), (2, 'us'), (3, 'eu')")
    spark.sql(f"CREATE VIEW {view} AS SELECT id FROM {table} WHERE region = 'eu'")
    spark.sql(f"CREATE OR REPLACE VIEW {view} AS SELECT id, region FROM {table} WHERE region = 'eu'")
    spark.sql(f"ALTER VIEW {view} SET TBLPROPERTIES ('team' = 'emea')")
    expected = rows(spark, f"SELECT * FROM {view} ORDER BY id")
    base = f"{proxy.url}/v1/{WAREHOUSE}/namespaces/{ns}/views/eu_orders"
    before = httpx.get(base).json()
    assert len(before["metadata"]["versions"]) >= 2

    spark.sql(f"DROP VIEW {view}")
    assert rows(spark, f"SHOW VIEWS IN {CAT}.{ns}") == []
    spark.sql(f"CREATE VIEW {view} AS SELECT 1 AS one")  # the name is free at once
    spark.sql(f"DROP VIEW {view}")

    trash = f"{proxy.url}/management/v1/catalogs/{WAREHOUSE}/trash"
    entries = httpx.get(trash, params={"namespace": ns, "kind": "view"}).json()["entries"]
    assert [e["identifier"]["name"] for e in entries] == ["eu_orders", "eu_orders"]  # newest first
    restored = httpx.post(f"{trash}/{entries[1]['id']}/restore", json={})
    assert restored.status_code == 200, restored.text

    assert rows(spark, f"SELECT * FROM {view} ORDER BY id") == expected == [(1, "eu"), (3, "eu")]
    assert httpx.get(base).json() == before  # every version, its log and properties
    described = dict(rows(spark, f"SHOW TBLPROPERTIES {view}"))
    assert described["team"] == "emea"
