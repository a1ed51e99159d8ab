"""Glue VIRTUAL_VIEWs written by Trino, Spark and Hive, served read-only as Iceberg views (moto server).

The Glue tables are created with boto3 in the shapes the engines write: Trino's Hive connector
(``TrinoViewUtil.createViewProperties`` + ``ViewReaderUtil.encodeViewData``, a ``dummy`` column),
Trino's Iceberg connector (``GlueIcebergUtil.getViewTableInput``, no storage descriptor), Spark's
``HiveExternalCatalog`` (``spark.sql.create.version``, ``view.*`` parameters, Hive columns) and Hive.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.types import DecimalType, ListType, LongType, MapType, StringType, StructType, TimestamptzType

from tests.behaviour.test_views import create_view, replace, view_url
from tests.support.aws import client as aws_client
from tests.support.aws import glue_catalog_config
from tests.support.rest import assert_error, create_namespace, create_table, ns_path, table_url
from tests.support.server import ProxyProcess, Serve

TRINO_SQL = "SELECT id, name, tags, price, seen FROM orders WHERE price > 10"
TRINO_COLUMNS = [
    {"name": "id", "type": "bigint"},
    {"name": "name", "type": "varchar"},
    {"name": "tags", "type": "array(varchar(10))"},
    {"name": "price", "type": "decimal(12,2)"},
    {"name": "seen", "type": "timestamp(3) with time zone"},
    {"name": "extra", "type": 'row("a" integer, "b" map(varchar, double))'},
]


@pytest.fixture(scope="module")
def glue_proxy(moto: str, serve: Serve, tmp_path_factory: pytest.TempPathFactory) -> ProxyProcess:
    warehouse = tmp_path_factory.mktemp("glue-views-warehouse")
    return serve(glue_catalog_config("local", moto, warehouse.as_uri()), "glue-views")


@pytest.fixture
def client(glue_proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=glue_proxy.url, timeout=30) as http:
        yield http


@pytest.fixture
def glue(moto: str) -> Any:
    return aws_client("glue", moto)


def presto_view_text(definition: dict[str, Any]) -> str:
    return "/* Presto View: " + base64.b64encode(json.dumps(definition).encode()).decode() + " */"


def trino_view(name: str, schema: str, *, sql: str = TRINO_SQL, hive_connector: bool = True) -> dict[str, Any]:
    """A TableInput as Trino writes a view to Glue (Hive connector by default, else Iceberg connector)."""
    definition = {
        "originalSql": sql,
        "catalog": "hive",
        "schema": schema,
        "columns": TRINO_COLUMNS,
        "comment": "orders over 10",
        "owner": "alice",
        "runAsInvoker": False,
    }
    table: dict[str, Any] = {
        "Name": name,
        "TableType": "VIRTUAL_VIEW",
        "Owner": "alice",
        "ViewOriginalText": presto_view_text(definition),
        "ViewExpandedText": "/* Presto View */",
        "Parameters": {
            "presto_view": "true",
            "trino_created_by": "Trino Hive connector" if hive_connector else "Trino Iceberg connector",
            "presto_version": "455",
            "presto_query_id": "20240601_120000_00001_abcde",
            "comment": "Presto View",
        },
    }
    if hive_connector:  # the Hive connector stores one placeholder column and an empty location
        table["StorageDescriptor"] = {
            "Columns": [{"Name": "dummy", "Type": "string"}],
            "Location": "",
            "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"},
        }
        table["PartitionKeys"] = []
    return table


def spark_view(name: str, database: str) -> dict[str, Any]:
    """A TableInput as Spark 3.5's HiveExternalCatalog writes ``CREATE VIEW`` through a Glue metastore client."""
    sql = "SELECT id, upper(name) AS name, tags FROM orders"
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "name", "type": "string", "nullable": True, "metadata": {}},
            {
                "name": "tags",
                "type": {"type": "array", "elementType": "string", "containsNull": True},
                "nullable": True,
            },
        ],
    }
    return {
        "Name": name,
        "TableType": "VIRTUAL_VIEW",
        "Owner": "hadoop",
        "ViewOriginalText": sql,
        "ViewExpandedText": sql,
        "StorageDescriptor": {
            "Columns": [
                {"Name": "id", "Type": "bigint"},
                {"Name": "name", "Type": "string", "Comment": "upper-cased"},
                {"Name": "tags", "Type": "array<string>"},
            ],
            "InputFormat": "org.apache.hadoop.mapred.SequenceFileInputFormat",
            "OutputFormat": "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat",
            "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"},
        },
        "Parameters": {
            "spark.sql.create.version": "3.5.1",
            "spark.sql.sources.schema": json.dumps(schema),
            "view.catalogAndNamespace.numParts": "2",
            "view.catalogAndNamespace.part.0": "spark_catalog",
            "view.catalogAndNamespace.part.1": "analytics",  # the current database at CREATE VIEW
            "view.query.out.numCols": "3",
            "view.query.out.col.0": "id",
            "view.query.out.col.1": "name",
            "view.query.out.col.2": "tags",
            "view.referredTempFunctionsNames": "[]",
            "view.referredTempViewNames": "[]",
            "transient_lastDdlTime": "1717243200",
        },
    }


def hive_view(name: str, database: str) -> dict[str, Any]:
    return {
        "Name": name,
        "TableType": "VIRTUAL_VIEW",
        "ViewOriginalText": "SELECT id FROM orders",
        "ViewExpandedText": f"SELECT `orders`.`id` FROM `{database}`.`orders`",
        "StorageDescriptor": {"Columns": [{"Name": "id", "Type": "int"}], "Location": ""},
        "Parameters": {"transient_lastDdlTime": "1717243200"},
    }


def put(glue: Any, database: str, table: dict[str, Any]) -> None:
    glue.create_table(DatabaseName=database, TableInput=table)


def the_sql(metadata: dict[str, Any]) -> dict[str, Any]:
    (version,) = metadata["versions"]
    (representation,) = version["representations"]
    result: dict[str, Any] = representation
    return result


def list_views(client: httpx.Client, namespace: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/v1/local/namespaces/{ns_path(namespace)}/views", params=params)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_trino_view_is_listed_and_loads_with_trino_dialect_sql_and_columns(
    client: httpx.Client, glue: Any, ns_name: str
) -> None:
    create_namespace(client, ns_name)
    put(glue, ns_name, trino_view("big_orders", ns_name))
    assert list_views(client, ns_name)["identifiers"] == [{"namespace": [ns_name], "name": "big_orders"}]
    assert client.get(f"/v1/local/namespaces/{ns_name}/tables").json()["identifiers"] == []

    response = client.get(view_url((ns_name,), "big_orders"))
    assert response.status_code == 200, response.text
    result = response.json()
    metadata = result["metadata"]
    assert metadata["format-version"] == 1
    assert metadata["current-version-id"] == 1 and len(metadata["versions"]) == 1
    assert the_sql(metadata) == {"type": "sql", "sql": TRINO_SQL, "dialect": "trino"}
    version = metadata["versions"][0]
    assert version["default-namespace"] == [ns_name]
    assert version["summary"] == {"engine-name": "trino", "engine-version": "455"}
    assert metadata["properties"]["comment"] == "orders over 10"
    (schema,) = metadata["schemas"]
    assert schema["schema-id"] == version["schema-id"]
    assert [(f["name"], f["type"] if isinstance(f["type"], str) else f["type"]["type"]) for f in schema["fields"]] == [
        ("id", "long"),
        ("name", "string"),
        ("tags", "list"),
        ("price", "decimal(12, 2)"),
        ("seen", "timestamptz"),
        ("extra", "struct"),
    ]
    assert result["metadata-location"] == f"glue://123456789012/{ns_name}/big_orders?version=1"
    assert metadata["location"].endswith(f"/{ns_name}/big_orders")
    assert client.head(view_url((ns_name,), "big_orders")).status_code == 204
    again = client.get(view_url((ns_name,), "big_orders")).json()
    assert again["metadata"]["view-uuid"] == metadata["view-uuid"]  # stable while the Glue table is the same


def test_trino_view_update_in_glue_shows_a_new_metadata_location(client: httpx.Client, glue: Any, ns_name: str) -> None:
    create_namespace(client, ns_name)
    put(glue, ns_name, trino_view("v", ns_name))
    first = client.get(view_url((ns_name,), "v")).json()
    glue.update_table(DatabaseName=ns_name, TableInput=trino_view("v", ns_name, sql="SELECT 2 AS id"))
    second = client.get(view_url((ns_name,), "v")).json()
    assert second["metadata-location"] == f"glue://123456789012/{ns_name}/v?version=2"
    assert the_sql(second["metadata"])["sql"] == "SELECT 2 AS id"
    assert second["metadata"]["view-uuid"] == first["metadata"]["view-uuid"]


def test_spark_view_loads_with_spark_dialect_and_hive_columns(client: httpx.Client, glue: Any, ns_name: str) -> None:
    create_namespace(client, ns_name)
    put(glue, ns_name, spark_view("upper_orders", ns_name))
    metadata = client.get(view_url((ns_name,), "upper_orders")).json()["metadata"]
    assert the_sql(metadata) == {
        "type": "sql",
        "sql": "SELECT id, upper(name) AS name, tags FROM orders",
        "dialect": "spark",
    }
    assert metadata["versions"][0]["summary"] == {"engine-name": "spark", "engine-version": "3.5.1"}
    assert metadata["versions"][0]["default-namespace"] == ["analytics"]
    fields = metadata["schemas"][0]["fields"]
    assert [f["name"] for f in fields] == ["id", "name", "tags"]
    assert fields[0]["type"] == "long" and fields[1].get("doc") == "upper-cased"
    assert fields[2]["type"]["type"] == "list" and fields[2]["type"]["element"] == "string"


def test_plain_hive_view_loads_with_hive_dialect(client: httpx.Client, glue: Any, ns_name: str) -> None:
    create_namespace(client, ns_name)
    put(glue, ns_name, hive_view("ids", ns_name))
    metadata = client.get(view_url((ns_name,), "ids")).json()["metadata"]
    assert the_sql(metadata) == {"type": "sql", "sql": "SELECT id FROM orders", "dialect": "hive"}
    assert metadata["schemas"][0]["fields"] == [{"id": 1, "name": "id", "type": "int", "required": False}]


def test_engine_view_is_not_a_table(client: httpx.Client, glue: Any, ns_name: str) -> None:
    create_namespace(client, ns_name)
    put(glue, ns_name, trino_view("v", ns_name))
    assert_error(client.get(table_url((ns_name,), "v")), 404, "NoSuchTableException")
    assert client.head(table_url((ns_name,), "v")).status_code == 404
    assert_error(client.delete(table_url((ns_name,), "v")), 404, "NoSuchTableException")
    assert client.head(view_url((ns_name,), "missing")).status_code == 404


@pytest.mark.parametrize("make", [trino_view, spark_view, hive_view])
def test_replace_drop_and_rename_of_an_engine_view_are_403(
    client: httpx.Client, glue: Any, ns_name: str, make: Any
) -> None:
    create_namespace(client, ns_name)
    put(glue, ns_name, make("v", ns_name))
    url = view_url((ns_name,), "v")
    message = f"View {ns_name}.v is owned by another engine"
    assert_error(replace(client, url, "SELECT 3 AS id"), 403, "ForbiddenException", message)
    assert_error(client.delete(url), 403, "ForbiddenException", "in Glue and is read-only through irc-proxy")
    rename = {"source": {"namespace": [ns_name], "name": "v"}, "destination": {"namespace": [ns_name], "name": "w"}}
    assert_error(client.post("/v1/local/views/rename", json=rename), 403, "ForbiddenException", message)
    assert glue.get_table(DatabaseName=ns_name, Name="v")["Table"]["VersionId"] == "1"  # untouched
    assert [i["name"] for i in list_views(client, ns_name)["identifiers"]] == ["v"]


def test_names_held_by_engine_views_are_409_for_views_and_tables(client: httpx.Client, glue: Any, ns_name: str) -> None:
    create_namespace(client, ns_name)
    put(glue, ns_name, trino_view("v", ns_name))
    assert_error(
        create_view(client, (ns_name,), "v"), 409, "AlreadyExistsException", f"View already exists: {ns_name}.v"
    )
    body = {"name": "v", "schema": {"type": "struct", "schema-id": 0, "fields": []}}
    assert_error(
        client.post(f"/v1/local/namespaces/{ns_name}/tables", json=body),
        409,
        "AlreadyExistsException",
        f"View with same name already exists: {ns_name}.v",
    )
    assert create_view(client, (ns_name,), "mine").status_code == 200
    rename = {"source": {"namespace": [ns_name], "name": "mine"}, "destination": {"namespace": [ns_name], "name": "v"}}
    assert_error(
        client.post("/v1/local/views/rename", json=rename), 409, "AlreadyExistsException", "View already exists"
    )
    create_table(client, (ns_name,), "t")
    rename = {"source": {"namespace": [ns_name], "name": "t"}, "destination": {"namespace": [ns_name], "name": "v"}}
    assert_error(
        client.post("/v1/local/tables/rename", json=rename), 409, "AlreadyExistsException", "View already exists"
    )
    location = client.get(view_url((ns_name,), "mine")).json()["metadata-location"]
    register = {"name": "v", "metadata-location": location}
    assert_error(
        client.post(f"/v1/local/namespaces/{ns_name}/register-view", json=register),
        409,
        "AlreadyExistsException",
        f"View already exists: {ns_name}.v",
    )


def test_database_holding_only_an_engine_view_is_not_empty(client: httpx.Client, glue: Any, ns_name: str) -> None:
    create_namespace(client, ns_name)
    put(glue, ns_name, spark_view("only", ns_name))
    assert_error(client.delete(f"/v1/local/namespaces/{ns_name}"), 409, "NamespaceNotEmptyException")
    glue.delete_table(DatabaseName=ns_name, Name="only")
    assert client.delete(f"/v1/local/namespaces/{ns_name}").status_code == 204


def test_stored_views_work_beside_engine_views_and_pages_span_both(
    client: httpx.Client, glue: Any, ns_name: str
) -> None:
    create_namespace(client, ns_name)
    put(glue, ns_name, trino_view("e_trino", ns_name))
    put(glue, ns_name, spark_view("e_spark", ns_name))
    create_table(client, (ns_name,), "a_table")  # an Iceberg table in the same database is not a view
    for name in ("s_one", "s_two"):
        assert create_view(client, (ns_name,), name).status_code == 200
    replaced = replace(client, view_url((ns_name,), "s_one"), "SELECT 2 AS id")
    assert replaced.status_code == 200, replaced.text
    assert client.get(view_url((ns_name,), "s_one")).json()["metadata"]["current-version-id"] == 2

    everything = [i["name"] for i in list_views(client, ns_name)["identifiers"]]
    assert everything[:2] == ["s_one", "s_two"]  # stored views first, then Glue's
    assert sorted(everything[2:]) == ["e_spark", "e_trino"]
    paged: list[str] = []
    token = ""
    for _ in range(10):
        page = list_views(client, ns_name, pageToken=token, pageSize=1)
        assert len(page["identifiers"]) <= 1
        paged += [i["name"] for i in page["identifiers"]]
        token = page["next-page-token"]
        if token is None:
            break
    assert paged == everything
    assert_error(
        client.get(f"/v1/local/namespaces/{ns_name}/views", params={"pageToken": "eDpv", "pageSize": 1}),
        400,
        "BadRequestException",
    )
    assert client.delete(view_url((ns_name,), "s_two")).status_code == 204
    remaining = [i["name"] for i in list_views(client, ns_name)["identifiers"]]
    assert remaining[:1] == ["s_one"] and sorted(remaining[1:]) == ["e_spark", "e_trino"]


def test_pyiceberg_rest_catalog_loads_a_trino_view(glue_proxy: ProxyProcess, glue: Any, ns_name: str) -> None:
    catalog = RestCatalog("irc", uri=glue_proxy.url, warehouse="local")
    catalog.create_namespace((ns_name,))
    put(glue, ns_name, trino_view("big_orders", ns_name, hive_connector=False))
    assert catalog.list_views((ns_name,)) == [(ns_name, "big_orders")]
    assert catalog.view_exists((ns_name, "big_orders"))
    view = catalog.load_view((ns_name, "big_orders"))
    representation = view.metadata.versions[0].representations[0].root
    assert (representation.dialect, representation.sql) == ("trino", TRINO_SQL)
    schema = view.metadata.schemas[0]
    assert schema.find_type("id") == LongType()
    assert schema.find_type("name") == StringType()
    assert isinstance(schema.find_type("tags"), ListType)
    assert schema.find_type("price") == DecimalType(12, 2)
    assert schema.find_type("seen") == TimestamptzType()
    assert isinstance(schema.find_type("extra"), StructType)
    assert isinstance(schema.find_type("extra.b"), MapType)


def test_trino_materialized_view_is_not_served_as_a_view(client: httpx.Client, glue: Any, ns_name: str) -> None:
    create_namespace(client, ns_name)
    table = trino_view("mv", ns_name)
    table["ViewOriginalText"] = table["ViewOriginalText"].replace("Presto View", "Presto Materialized View")
    table["Parameters"]["comment"] = "Presto Materialized View"
    put(glue, ns_name, table)
    assert list_views(client, ns_name)["identifiers"] == []
    assert_error(client.get(view_url((ns_name,), "mv")), 404, "NoSuchViewException")


def test_unreadable_trino_view_is_400_on_load_and_still_holds_its_name(
    client: httpx.Client, glue: Any, ns_name: str
) -> None:
    create_namespace(client, ns_name)
    table = trino_view("broken", ns_name)
    table["ViewOriginalText"] = "/* Presto View: not-base64! */"
    put(glue, ns_name, table)
    assert_error(client.get(view_url((ns_name,), "broken")), 400, "BadRequestException", "Cannot read Glue view")
    assert client.head(view_url((ns_name,), "broken")).status_code == 204
    assert_error(create_view(client, (ns_name,), "broken"), 409, "AlreadyExistsException")
