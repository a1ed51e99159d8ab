"""Table maintenance with ``executor = "spark"`` on a Glue catalog whose tables live on S3 (moto), end to end.

moto (a real HTTP server) serves Glue, S3, IAM and STS, with IAM enforced: every S3 request must be signed with a
key moto knows. The proxy calls Glue and STS as an IAM user and vends table-scoped session credentials (through
``FakeSts``, which records each AssumeRole). The test's own Spark writes the tables through the proxy with that
user's keys (Hadoop's S3A); the maintenance driver the proxy starts gets no keys at all: it must read and write
S3 with the credentials the proxy vends to its run credential. Afterwards Spark, pyiceberg (vended credentials)
and DuckDB read exactly the rows they read before, the files are bin-packed, the applied delete files are gone
from S3, and every object added or deleted lies under the table's own prefix. A v3 table's deletion vectors are
applied the same way and every row keeps its ``_row_id``.

moto cannot verify the Java SDK's signatures by itself (``tests.support.aws.java_sdk_signatures``). Fewer appends
than the local-catalog test (``test_spark_maintenance.py``, 50): each file costs S3 round trips on moto, and the
count of files, not rows, is what the runs are about.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from irc_proxy.handling.security.authn import hash_secret
from irc_proxy.handling.security.run_tokens import PRINCIPAL
from irc_proxy.handling.vending.vending import session_name
from tests.e2e.spark_jars import ensure_spark_jars
from tests.e2e.test_duckdb import offline_duckdb
from tests.e2e.test_glue_clients import add_spark_catalog
from tests.e2e.test_spark_maintenance import checksum, file_counts, rows, write_small_files
from tests.support.aws import REGION, java_sdk_signatures, moto_server
from tests.support.fake_sts import FakeSts, fake_sts
from tests.support.maintenance import finished_run, runs_url
from tests.support.rest import issue_token
from tests.support.server import ProxyProcess
from tests.support.vending import enforce_iam, relax_iam, vending_catalog_config, with_keys

pytestmark = pytest.mark.spark

ROOT_SECRET = "root-secret-maintenance-glue"
GLUE = "glue_maint"  # the proxy's Glue catalog (and its REST prefix)
WRITER = "glue_maint_e2e"  # the Spark catalog of the test's own session
BUCKET = "irc-spark-maintenance-glue"
JOBS = ["rewrite-data-files", "rewrite-manifests", "expire-snapshots"]
RUN_SECONDS = 300
APPENDS = 10
V3_APPENDS = 6


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with java_sdk_signatures(), moto_server() as endpoint:
        httpx.post(f"{endpoint}/moto-api/reset")
        yield endpoint
        relax_iam(endpoint)


@pytest.fixture(scope="module")
def sts(moto: str) -> Iterator[FakeSts]:
    with fake_sts(moto) as fake:
        yield fake


@pytest.fixture(scope="module")
def user_keys(moto: str) -> tuple[str, str]:
    """The IAM user's keys (the proxy's and the test's writer's); IAM is enforced from here on."""
    return enforce_iam(moto, BUCKET)


@pytest.fixture(scope="module")
def glue_spark_proxy(
    moto: str, sts: FakeSts, user_keys: tuple[str, str], s3a_jars: list[Path] | str, tmp_path_factory: Any
) -> Iterator[ProxyProcess]:
    if isinstance(s3a_jars, str):
        pytest.skip(s3a_jars)
    scratch = tmp_path_factory.mktemp("maintenance-glue-driver")
    jars = json.dumps([str(jar) for jar in [*ensure_spark_jars(), *s3a_jars]])
    conf = {
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": "2",
        "spark.local.dir": str(scratch),
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={scratch}",
    }
    config = (
        f'[auth]\nmode = "oauth2"\nadmins = ["root"]\n[[auth.clients]]\nid = "root"\n'
        f'secret_hash = "{hash_secret(ROOT_SECRET)}"\n'
        "[server.maintenance]\npoll_seconds = 0.2\n"
        + with_keys(vending_catalog_config(GLUE, moto, sts.url, BUCKET), user_keys)
        + f'[catalogs.{GLUE}.maintenance]\nexecutor = "spark"\nspark_jobs = {json.dumps(JOBS)}\n'
        f'spark_jars = {jars}\nspark_timeout = "PT10M"\n'
        "spark_conf = { " + ", ".join(f'"{k}" = "{v}"' for k, v in conf.items()) + " }\n"
    )
    server = ProxyProcess(tmp_path_factory.mktemp("maintenance-glue"), config).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def admin(glue_spark_proxy: ProxyProcess) -> Iterator[httpx.Client]:
    token = issue_token(glue_spark_proxy.url, "root", ROOT_SECRET)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=glue_spark_proxy.url, headers=headers, timeout=60) as http:
        yield http


@pytest.fixture(scope="module")
def s3(moto: str, user_keys: tuple[str, str]) -> Any:
    import boto3

    return boto3.client(
        "s3", endpoint_url=moto, region_name=REGION, aws_access_key_id=user_keys[0], aws_secret_access_key=user_keys[1]
    )


@pytest.fixture(scope="module")
def writer(spark: Any, glue_spark_proxy: ProxyProcess, moto: str, user_keys: tuple[str, str]) -> str:
    """The test's own Spark session, as ``root``, writing ``s3://`` through S3A with the IAM user's keys."""
    s3a = {
        "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.endpoint": moto,
        "fs.s3a.endpoint.region": REGION,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.access.key": user_keys[0],
        "fs.s3a.secret.key": user_keys[1],
    }
    options = {"io-impl": "org.apache.iceberg.hadoop.HadoopFileIO"} | {f"hadoop.{k}": v for k, v in s3a.items()}
    return add_spark_catalog(spark, WRITER, glue_spark_proxy, GLUE, credential=f"root:{ROOT_SECRET}", **options)


def objects(s3: Any) -> dict[str, str]:
    """Every object of the bucket by key, with its ETag (a rewritten key would show as changed)."""
    found: dict[str, str] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        found |= {o["Key"]: o["ETag"] for o in page.get("Contents", [])}
    return found


def run_maintenance(admin: httpx.Client, ns: str, name: str, proxy: ProxyProcess) -> dict[str, Any]:
    body = {"table": {"namespace": [ns], "name": name}, "jobs": JOBS}
    response = admin.post(runs_url(GLUE), json=body)
    assert response.status_code == 202, response.text
    run = finished_run(admin, response.json()["id"], GLUE, timeout=RUN_SECONDS)
    assert run["status"] == "succeeded", json.dumps({k: run.get(k) for k in ("results", "error")}) + proxy.log()[-4000:]
    return run


def metadata_location(admin: httpx.Client, ns: str, name: str) -> str:
    response = admin.get(f"/v1/{GLUE}/namespaces/{quote(ns)}/tables/{quote(name)}")
    assert response.status_code == 200, response.text
    return str(response.json()["metadata-location"])


def pyiceberg_rows(proxy: ProxyProcess, ns: str, name: str) -> list[tuple[Any, ...]]:
    """The rows pyiceberg reads with nothing but the credentials the proxy vends to ``root``."""
    catalog = RestCatalog(
        "glue",
        uri=proxy.url,
        warehouse=GLUE,
        credential=f"root:{ROOT_SECRET}",
        **{"oauth2-server-uri": f"{proxy.url}/v1/oauth/tokens"},
    )
    table = catalog.load_table((ns, name))
    assert table.io.properties["s3.access-key-id"].startswith("ASIA")  # vended, not the IAM user's
    arrow = table.scan().to_arrow()
    return sorted(zip(arrow["id"].to_pylist(), arrow["v"].to_pylist(), strict=True))


def duckdb_rows(location: str, moto: str, keys: tuple[str, str], scratch: Path) -> list[tuple[Any, ...]]:
    con = offline_duckdb(scratch)
    try:
        con.execute(
            f"CREATE SECRET moto (TYPE s3, KEY_ID '{keys[0]}', SECRET '{keys[1]}', REGION '{REGION}', "
            f"ENDPOINT '{urlparse(moto).netloc}', URL_STYLE 'path', USE_SSL false)"
        )
        return sorted(con.execute(f"SELECT id, v FROM iceberg_scan('{location}')").fetchall())
    finally:
        con.close()


def live_files(spark: Any, table: str, kind: str) -> set[str]:
    """Keys of the live ``data_files`` or ``delete_files``."""
    found = rows(spark, f"SELECT file_path FROM {table}.{kind}")
    return {urlparse(path).path.lstrip("/") for (path,) in found}


def changes_under(prefix: str, before: dict[str, str], after: dict[str, str]) -> tuple[set[str], set[str]]:
    """The keys added and deleted between two listings, asserted to lie under ``prefix`` (none rewritten)."""
    added, deleted = set(after) - set(before), set(before) - set(after)
    changed = {key for key in set(before) & set(after) if before[key] != after[key]}
    assert added and deleted and not changed
    assert all(key.startswith(prefix) for key in added | deleted), sorted(added | deleted)
    return added, deleted


def test_spark_executor_compacts_a_glue_table_on_s3_with_vended_credentials_only(
    spark: Any,
    writer: str,
    admin: httpx.Client,
    glue_spark_proxy: ProxyProcess,
    s3: Any,
    sts: FakeSts,
    moto: str,
    user_keys: tuple[str, str],
    ns_name: str,
    tmp_path: Path,
) -> None:
    spark.sql(f"CREATE NAMESPACE {writer}.{ns_name}")
    table = f"{writer}.{ns_name}.events"
    write_small_files(spark, table, 2, APPENDS)
    # A neighbour whose prefix extends the table's name: nothing of it may change.
    spark.sql(f"CREATE TABLE {writer}.{ns_name}.events_2 (id BIGINT, v STRING) USING iceberg")
    spark.sql(f"INSERT INTO {writer}.{ns_name}.events_2 VALUES (1, 'a')")
    before = rows(spark, f"SELECT id, v FROM {table}")
    tagged = rows(spark, f"SELECT id, v FROM {table} VERSION AS OF 'kept'")
    data_before, deletes_before = file_counts(spark, table)
    assert data_before >= APPENDS and deletes_before >= 1
    data_keys, delete_keys = live_files(spark, table, "data_files"), live_files(spark, table, "delete_files")
    assert pyiceberg_rows(glue_spark_proxy, ns_name, "events") == before
    assert duckdb_rows(metadata_location(admin, ns_name, "events"), moto, user_keys, tmp_path) == before
    stored_before = objects(s3)
    sts.reset()

    run = run_maintenance(admin, ns_name, "events", glue_spark_proxy)

    rewrite = run["results"]["rewrite-data-files"]
    assert rewrite["executor"] == "spark" and run["results"]["expire-snapshots"]["executor"] == "spark"
    assert rewrite["data-files-rewritten"] == data_before
    assert rewrite["data-files-added"] == 1
    assert (rewrite["data-files-before"], rewrite["data-files-after"]) == (data_before, 1)
    assert (rewrite["delete-files-before"], rewrite["delete-files-after"]) == (deletes_before, 0)
    assert file_counts(spark, table) == (1, 0)  # bin-packed to one file, every delete applied
    after = rows(spark, f"SELECT id, v FROM {table}")
    assert checksum(after) == checksum(before) and len(after) == len(before)
    assert rows(spark, f"SELECT id, v FROM {table} VERSION AS OF 'kept'") == tagged
    assert checksum(pyiceberg_rows(glue_spark_proxy, ns_name, "events")) == checksum(before)
    location = metadata_location(admin, ns_name, "events")
    assert checksum(duckdb_rows(location, moto, user_keys, tmp_path)) == checksum(before)

    # S3: what changed lies under the table's prefix; files no retained snapshot reaches are gone.
    prefix = f"wh/{ns_name}/events/"
    _, deleted = changes_under(prefix, stored_before, objects(s3))
    assert delete_keys and delete_keys <= deleted  # applied, then expired: gone from S3
    assert data_keys & deleted  # the rewritten files only expired snapshots reached (the tag keeps its own)

    # The driver worked with credentials the proxy vended to the run: scoped to this table, named for the run.
    calls = [c for c in sts.assume_role_calls() if c.get("RoleSessionName") == session_name(PRINCIPAL)]
    assert calls, [c.get("RoleSessionName") for c in sts.assume_role_calls()]
    assert all(f"{BUCKET}/{prefix}*" in c["Policy"] and "events_2" not in c["Policy"] for c in calls)


def test_spark_executor_compacts_a_v3_glue_table_with_deletion_vectors_and_keeps_row_lineage(
    spark: Any,
    writer: str,
    admin: httpx.Client,
    glue_spark_proxy: ProxyProcess,
    s3: Any,
    moto: str,
    user_keys: tuple[str, str],
    ns_name: str,
    tmp_path: Path,
) -> None:
    spark.sql(f"CREATE NAMESPACE {writer}.{ns_name}")
    table = f"{writer}.{ns_name}.lineage"
    write_small_files(spark, table, 3, V3_APPENDS)
    lineage = f"SELECT id, v, _row_id, _last_updated_sequence_number FROM {table}"
    before = rows(spark, lineage)
    data_before, vectors_before = file_counts(spark, table)
    assert data_before >= V3_APPENDS and vectors_before >= 1
    vector_keys = live_files(spark, table, "delete_files")
    assert all(key.endswith(".puffin") for key in vector_keys)  # deletion vectors, not position delete files
    stored_before = objects(s3)

    run = run_maintenance(admin, ns_name, "lineage", glue_spark_proxy)

    rewrite = run["results"]["rewrite-data-files"]
    assert rewrite["executor"] == "spark"
    assert (rewrite["delete-files-before"], rewrite["delete-files-after"]) == (vectors_before, 0)
    assert file_counts(spark, table) == (1, 0)
    assert rows(spark, lineage) == before  # every row keeps its _row_id and _last_updated_sequence_number
    location = metadata_location(admin, ns_name, "lineage")
    assert checksum(duckdb_rows(location, moto, user_keys, tmp_path)) == checksum([(i, v) for i, v, _, _ in before])
    _, deleted = changes_under(f"wh/{ns_name}/lineage/", stored_before, objects(s3))
    assert vector_keys <= deleted
