"""Iceberg views from real PySpark through the proxy: DDL, queries, nested namespaces, history."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.e2e.conftest import SPARK_CATALOG as CAT

pytestmark = pytest.mark.spark


@pytest.fixture
def base_table(spark: Any, ns_name: str) -> str:
    spark.sql(f"CREATE NAMESPACE {CAT}.{ns_name}")
    spark.sql(f"CREATE TABLE {CAT}.{ns_name}.orders (id BIGINT, amount DOUBLE, region STRING) USING iceberg")
    spark.sql(f"INSERT INTO {CAT}.{ns_name}.orders VALUES (1, 10.0, 'eu'), (2, 20.0, 'us'), (3, 30.0, 'eu')")
    return f"{CAT}.{ns_name}.orders"


def test_create_view_with_comments_and_select(spark: Any, base_table: str, ns_name: str) -> None:
    spark.sql(
        f"CREATE VIEW {CAT}.{ns_name}.eu_orders (order_id COMMENT 'the order', amount COMMENT 'in EUR') "
        f"COMMENT 'European orders' AS SELECT id, amount FROM {base_table} WHERE region = 'eu'"
    )
    rows = spark.sql(f"SELECT order_id, amount FROM {CAT}.{ns_name}.eu_orders ORDER BY order_id").collect()
    assert [(r.order_id, r.amount) for r in rows] == [(1, 10.0), (3, 30.0)]
    described = {r.col_name: r.comment for r in spark.sql(f"DESCRIBE {CAT}.{ns_name}.eu_orders").collect()}
    assert described["order_id"] == "the order"
    assert described["amount"] == "in EUR"
    views = [r.viewName for r in spark.sql(f"SHOW VIEWS IN {CAT}.{ns_name}").collect()]
    assert views == ["eu_orders"]
    tables = [r.tableName for r in spark.sql(f"SHOW TABLES IN {CAT}.{ns_name}").collect()]
    assert "eu_orders" not in tables


def test_create_or_replace_view_keeps_full_history(
    spark: Any, base_table: str, ns_name: str, client: httpx.Client
) -> None:
    view = f"{CAT}.{ns_name}.v"
    spark.sql(f"CREATE VIEW {view} AS SELECT id FROM {base_table}")
    for threshold in (1, 2, 3):
        spark.sql(f"CREATE OR REPLACE VIEW {view} AS SELECT id FROM {base_table} WHERE id > {threshold}")
    assert [r.id for r in spark.sql(f"SELECT * FROM {view}").collect()] == []
    spark.sql(f"CREATE OR REPLACE VIEW {view} AS SELECT id FROM {base_table} WHERE id > 1")
    assert sorted(r.id for r in spark.sql(f"SELECT * FROM {view}").collect()) == [2, 3]
    metadata = client.get(f"/v1/local/namespaces/{ns_name}/views/v").json()["metadata"]
    sqls = [v["representations"][0]["sql"] for v in metadata["versions"]]
    assert len(metadata["versions"]) == 4  # create + 3 distinct replaces; the 4th replace reuses version 2
    assert all(v["representations"][0]["dialect"] == "spark" for v in metadata["versions"])
    assert "WHERE id > 3" in sqls[-1]
    assert [e["version-id"] for e in metadata["version-log"]] == [1, 2, 3, 4, 2]


def test_alter_view_properties_and_rename(spark: Any, base_table: str, ns_name: str, client: httpx.Client) -> None:
    spark.sql(f"CREATE VIEW {CAT}.{ns_name}.v AS SELECT id FROM {base_table}")
    spark.sql(f"ALTER VIEW {CAT}.{ns_name}.v SET TBLPROPERTIES ('steward' = 'ana', 'tier' = 'gold')")
    props = client.get(f"/v1/local/namespaces/{ns_name}/views/v").json()["metadata"]["properties"]
    assert props["steward"] == "ana" and props["tier"] == "gold"
    spark.sql(f"ALTER VIEW {CAT}.{ns_name}.v UNSET TBLPROPERTIES ('tier')")
    props = client.get(f"/v1/local/namespaces/{ns_name}/views/v").json()["metadata"]["properties"]
    assert "tier" not in props and props["steward"] == "ana"
    shown = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {CAT}.{ns_name}.v").collect()}
    assert shown["steward"] == "ana"
    spark.sql(f"ALTER VIEW {CAT}.{ns_name}.v RENAME TO {CAT}.{ns_name}.w")
    assert [r.viewName for r in spark.sql(f"SHOW VIEWS IN {CAT}.{ns_name}").collect()] == ["w"]
    assert len(spark.sql(f"SELECT * FROM {CAT}.{ns_name}.w").collect()) == 3
    spark.sql(f"DROP VIEW {CAT}.{ns_name}.w")
    assert spark.sql(f"SHOW VIEWS IN {CAT}.{ns_name}").collect() == []


def test_views_in_nested_namespaces(spark: Any, base_table: str, ns_name: str) -> None:
    spark.sql(f"CREATE NAMESPACE {CAT}.{ns_name}.marts.finance")
    spark.sql(
        f"CREATE VIEW {CAT}.{ns_name}.marts.finance.totals AS "
        f"SELECT region, sum(amount) AS total FROM {base_table} GROUP BY region"
    )
    rows = spark.sql(f"SELECT * FROM {CAT}.{ns_name}.marts.finance.totals ORDER BY region").collect()
    assert [(r.region, r.total) for r in rows] == [("eu", 40.0), ("us", 20.0)]
    with pytest.raises(Exception, match=r"(?i)not empty"):
        spark.sql(f"DROP NAMESPACE {CAT}.{ns_name}.marts.finance")


def test_view_and_table_names_clash(spark: Any, base_table: str, ns_name: str) -> None:
    with pytest.raises(Exception, match=r"(?i)already exists"):
        spark.sql(f"CREATE VIEW {base_table} AS SELECT 1 AS x")
    spark.sql(f"CREATE VIEW {CAT}.{ns_name}.only_view AS SELECT 1 AS x")
    with pytest.raises(Exception, match=r"(?i)already exists"):
        spark.sql(f"CREATE TABLE {CAT}.{ns_name}.only_view (x INT) USING iceberg")
