"""Real engines against an ``oauth2`` proxy with grants: PySpark (credential and static token), DuckDB (token).

The proxy's admin API creates a reader (``table.read`` on ``shop``) and a writer (``table.write`` and
``table.create`` on ``shop``); each engine must be able to do what its principal may, and be refused
(with the server's 403) what it may not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from irc_proxy.handling.security.authn import hash_secret
from tests.e2e.test_duckdb import offline_duckdb
from tests.e2e.test_glue_clients import add_spark_catalog
from tests.support.rest import issue_token
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-e2e"
MGMT = "/management/v1"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    config = (
        f'[auth]\nmode = "oauth2"\nadmins = ["root"]\n[[auth.clients]]\nid = "root"\n'
        f'secret_hash = "{hash_secret(ROOT_SECRET)}"\nprincipal = "root"\n'
    )
    server = ProxyProcess(tmp_path_factory.mktemp("secured-e2e"), config).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def principals(secured: ProxyProcess) -> dict[str, tuple[str, str]]:
    """``reader`` and ``writer`` client credentials; namespace ``shop`` with table ``orders`` (ids 1, 2)."""
    root = RestCatalog(
        "root",
        uri=secured.url,
        warehouse="local",
        credential=f"root:{ROOT_SECRET}",
        **{"oauth2-server-uri": f"{secured.url}/v1/oauth/tokens"},
    )
    root.create_namespace("shop")
    schema = pa.schema([("id", pa.int64()), ("item", pa.string())])
    root.create_table(("shop", "orders"), schema).append(
        pa.Table.from_pylist([{"id": 1, "item": "tea"}, {"id": 2, "item": "cake"}], schema=schema)
    )
    admin = httpx.Client(
        base_url=secured.url, headers={"Authorization": f"Bearer {issue_token(secured.url, 'root', ROOT_SECRET)}"}
    )
    grants = {"reader": ["table.read"], "writer": ["table.write", "table.create"]}
    credentials = {}
    for name, privileges in grants.items():
        assert admin.post(f"{MGMT}/roles", json={"name": name}).status_code == 201
        for privilege in privileges:
            grant = {"catalog": "local", "namespace": ["shop"], "privilege": privilege}
            assert admin.post(f"{MGMT}/roles/{name}/grants", json=grant).status_code == 201
        created = admin.post(f"{MGMT}/principals", json={"name": f"{name}-svc", "roles": [name]}).json()
        credentials[name] = (created["credentials"]["client-id"], created["credentials"]["client-secret"])
    admin.close()
    return credentials


def rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in spark.sql(sql).collect()]


@pytest.mark.spark
def test_pyspark_with_client_credentials_reads_and_writes_within_its_grants(
    spark: Any, secured: ProxyProcess, principals: dict[str, tuple[str, str]]
) -> None:
    writer_id, writer_secret = principals["writer"]
    writer = add_spark_catalog(spark, "sec_writer", secured, "local", credential=f"{writer_id}:{writer_secret}")
    spark.sql(f"INSERT INTO {writer}.shop.orders VALUES (3, 'scone')")
    spark.sql(f"CREATE TABLE {writer}.shop.returns (id BIGINT) USING iceberg")
    assert rows(spark, f"SELECT id FROM {writer}.shop.orders ORDER BY id") == [(1,), (2,), (3,)]

    reader_id, reader_secret = principals["reader"]
    reader = add_spark_catalog(spark, "sec_reader", secured, "local", credential=f"{reader_id}:{reader_secret}")
    assert rows(spark, f"SELECT item FROM {reader}.shop.orders WHERE id = 3") == [("scone",)]
    with pytest.raises(Exception, match=r"Forbidden|not authorized") as refused:
        spark.sql(f"INSERT INTO {reader}.shop.orders VALUES (4, 'pie')")
    assert "table.write" in str(refused.value)
    with pytest.raises(Exception, match=r"table\.drop"):
        spark.sql(f"DROP TABLE {reader}.shop.returns")
    assert rows(spark, f"SELECT count(*) FROM {writer}.shop.orders") == [(3,)]


@pytest.mark.spark
def test_pyspark_with_a_static_token(spark: Any, secured: ProxyProcess, principals: dict[str, tuple[str, str]]) -> None:
    token = issue_token(secured.url, *principals["reader"])
    catalog = add_spark_catalog(spark, "sec_token", secured, "local", token=token)
    assert rows(spark, f"SELECT item FROM {catalog}.shop.orders WHERE id = 1") == [("tea",)]
    with pytest.raises(Exception, match=r"table\.write"):
        spark.sql(f"DELETE FROM {catalog}.shop.orders WHERE id = 1")
    bogus = add_spark_catalog(spark, "sec_bogus", secured, "local", token=token[:-4] + "AAAA")
    with pytest.raises(Exception, match=r"NotAuthorized|401|Not authorized|Invalid bearer token"):
        spark.sql(f"SELECT * FROM {bogus}.shop.orders").collect()


@pytest.mark.spark
def test_pyspark_reads_metadata_tables_with_a_grant_on_one_table(spark: Any, secured: ProxyProcess) -> None:
    """Spark loads ``shop.orders.snapshots`` as a table before it reads the metadata table of ``shop.orders``:
    a caller whose only grant is ``table.read`` on that one table must get the metadata tables too."""
    admin = httpx.Client(
        base_url=secured.url, headers={"Authorization": f"Bearer {issue_token(secured.url, 'root', ROOT_SECRET)}"}
    )
    assert admin.post(f"{MGMT}/roles", json={"name": "orders-reader"}).status_code == 201
    grant = {"catalog": "local", "namespace": ["shop"], "table": "orders", "privilege": "table.read"}
    assert admin.post(f"{MGMT}/roles/orders-reader/grants", json=grant).status_code == 201
    created = admin.post(f"{MGMT}/principals", json={"name": "orders-svc", "roles": ["orders-reader"]}).json()
    admin.close()
    credential = f"{created['credentials']['client-id']}:{created['credentials']['client-secret']}"
    catalog = add_spark_catalog(spark, "sec_one_table", secured, "local", credential=credential)
    assert rows(spark, f"SELECT count(*) FROM {catalog}.shop.orders") == [
        (len(rows(spark, f"SELECT id FROM {catalog}.shop.orders")),)
    ]
    snapshots = rows(spark, f"SELECT snapshot_id FROM {catalog}.shop.orders.snapshots")
    assert snapshots, "the table has snapshots"
    files = rows(spark, f"SELECT file_path FROM {catalog}.shop.orders.files")
    assert files and all(str(path).endswith(".parquet") for (path,) in files)
    history = rows(spark, f"SELECT snapshot_id FROM {catalog}.shop.orders.history")
    assert {s for (s,) in history} <= {s for (s,) in snapshots}


def test_duckdb_with_a_bearer_token(
    secured: ProxyProcess, principals: dict[str, tuple[str, str]], tmp_path: Path
) -> None:
    token = issue_token(secured.url, *principals["reader"])
    con = offline_duckdb(tmp_path)
    try:
        con.execute(f"CREATE SECRET reader_token (TYPE iceberg, TOKEN '{token}')")
        con.execute(f"ATTACH 'local' AS sec (TYPE iceberg, ENDPOINT '{secured.url}', SECRET reader_token)")
        found = con.execute("SELECT id, item FROM sec.shop.orders WHERE id <= 2 ORDER BY id").fetchall()
        assert found == [(1, "tea"), (2, "cake")]
        with pytest.raises(duckdb.Error, match=r"403|Forbidden|table.write"):
            con.execute("INSERT INTO sec.shop.orders VALUES (9, 'nope')")
    finally:
        con.close()


def test_pyiceberg_reader_reads_and_is_refused_writes(
    secured: ProxyProcess, principals: dict[str, tuple[str, str]]
) -> None:
    from pyiceberg.exceptions import ForbiddenError

    client_id, secret = principals["reader"]
    catalog = RestCatalog(
        "reader",
        uri=secured.url,
        warehouse="local",
        credential=f"{client_id}:{secret}",
        **{"oauth2-server-uri": f"{secured.url}/v1/oauth/tokens"},
    )
    table = catalog.load_table(("shop", "orders"))
    assert {row["item"] for row in table.scan().to_arrow().to_pylist()} >= {"tea", "cake"}
    assert ("shop", "orders") in catalog.list_tables("shop")  # filtered listing: tables it may read
    with pytest.raises(ForbiddenError, match=r"table\.write"):
        table.append(pa.Table.from_pylist([{"id": 7, "item": "jam"}], schema=table.schema().as_arrow()))
    with pytest.raises(ForbiddenError, match=r"table\.drop"):
        catalog.drop_table(("shop", "orders"))
    with pytest.raises(ForbiddenError, match=r"namespace\.create"):
        catalog.create_namespace("elsewhere")
