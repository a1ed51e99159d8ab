"""pyiceberg (and DuckDB) read and write tables on moto's S3 with nothing but vended credentials.

moto enforces IAM here (access keys and SigV4 signatures): the proxy calls Glue and STS as an IAM user;
clients get no keys of their own, so every S3 request they make is signed with the short-lived session
credentials the proxy vended. moto does not enforce session policies: the scoping is asserted by the
integration tests that read the policy back.
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
from pyiceberg.expressions import EqualTo
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

from tests.e2e.test_duckdb import offline_duckdb
from tests.support.aws import moto_server
from tests.support.fake_sts import FakeSts, fake_sts
from tests.support.server import ProxyProcess
from tests.support.vending import enforce_iam, relax_iam, vending_catalog_config, with_keys

BUCKET = "irc-vended-e2e"
CATALOG = "vended"
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False),
)
ARROW = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with moto_server() as endpoint:
        httpx.post(f"{endpoint}/moto-api/reset")
        yield endpoint
        relax_iam(endpoint)


@pytest.fixture(scope="module")
def sts(moto: str) -> Iterator[FakeSts]:
    with fake_sts(moto) as fake:
        yield fake


@pytest.fixture(scope="module")
def vending_proxy(moto: str, sts: FakeSts, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    keys = enforce_iam(moto, BUCKET)
    config = with_keys(vending_catalog_config(CATALOG, moto, sts.url, BUCKET), keys)
    server = ProxyProcess(tmp_path_factory.mktemp("vending-e2e-proxy"), config).start()
    yield server
    server.stop()


@pytest.fixture
def catalog(vending_proxy: ProxyProcess, monkeypatch: pytest.MonkeyPatch) -> RestCatalog:
    """pyiceberg's RestCatalog with no S3 settings at all (it sends the vended-credentials header by default)."""
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    return RestCatalog("vended", uri=vending_proxy.url, warehouse=CATALOG)


def rows(*items: tuple[int, str, float]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "region": r, "amount": a} for i, r, a in items], schema=ARROW)


def test_pyiceberg_writes_and_reads_with_vended_credentials_only(
    catalog: RestCatalog, sts: FakeSts, ns_name: str
) -> None:
    catalog.create_namespace((ns_name,))
    table = catalog.create_table((ns_name, "orders"), schema=SCHEMA)
    assert table.io.properties["s3.access-key-id"].startswith("ASIA")  # STS session keys, not the proxy's
    assert "s3.session-token" in table.io.properties
    table.append(rows((1, "eu", 10.0), (2, "us", 20.0)))
    table.append(rows((3, "eu", 30.0)))
    table.delete(EqualTo("id", 2))

    reloaded = catalog.load_table((ns_name, "orders"))
    assert reloaded.io.properties["s3.access-key-id"].startswith("ASIA")
    assert sorted(reloaded.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "region": "eu", "amount": 10.0},
        {"id": 3, "region": "eu", "amount": 30.0},
    ]
    assert len(reloaded.metadata.snapshots) == 3
    policies = [call["Policy"] for call in sts.assume_role_calls()]
    assert policies and all(f"{BUCKET}/wh/{ns_name}/orders/*" in policy for policy in policies)


def test_pyiceberg_without_vending_cannot_touch_s3(
    vending_proxy: ProxyProcess, catalog: RestCatalog, moto: str, ns_name: str
) -> None:
    """The control: the same client, told not to ask for credentials, is refused by (IAM-enforcing) S3."""
    catalog.create_namespace((ns_name,))
    catalog.create_table((ns_name, "t"), schema=SCHEMA).append(rows((1, "eu", 1.0)))
    bare = RestCatalog(
        "bare",
        uri=vending_proxy.url,
        warehouse=CATALOG,
        **{
            "header.X-Iceberg-Access-Delegation": "",
            "s3.endpoint": moto,
            "s3.region": "us-east-1",
            "s3.access-key-id": "AKIAUNKNOWN",
            "s3.secret-access-key": "x",
        },
    )
    table = bare.load_table((ns_name, "t"))
    assert table.io.properties.get("s3.access-key-id") == "AKIAUNKNOWN"
    with pytest.raises(OSError, match=r"ACCESS_DENIED|InvalidAccessKeyId|403"):
        table.scan().to_arrow()


# DuckDB ----------------------------------------------------------------------------------------------
def duckdb_vended(proxy: ProxyProcess, extension_dir: Path) -> duckdb.DuckDBPyConnection:
    """DuckDB with no S3 secret of its own: the iceberg extension asks for vended credentials."""
    con = offline_duckdb(extension_dir)
    con.execute(
        f"ATTACH '{CATALOG}' AS v (TYPE iceberg, ENDPOINT '{proxy.url}', AUTHORIZATION_TYPE 'none', "
        "ACCESS_DELEGATION_MODE 'vended_credentials')"
    )
    return con


def test_duckdb_reads_with_vended_credentials(
    catalog: RestCatalog, vending_proxy: ProxyProcess, moto: str, tmp_path: Path, ns_name: str
) -> None:
    catalog.create_namespace((ns_name,))
    table = catalog.create_table((ns_name, "orders"), schema=SCHEMA)
    table.append(rows((1, "eu", 10.0), (2, "us", 20.0)))
    con = duckdb_vended(vending_proxy, tmp_path)
    try:
        found: list[Any] = con.execute(f"SELECT id, region FROM v.{ns_name}.orders ORDER BY id").fetchall()
    finally:
        con.close()
    assert found == [(1, "eu"), (2, "us")]
    assert urlparse(moto).hostname == "127.0.0.1"
