"""Credential vending through a served proxy: Glue and S3 on moto's server, STS behind a recording front.

moto does not enforce session policies, so the tests read the exact policy the proxy sent (``FakeSts``
records every AssumeRole) and evaluate it for the table's own path and a sibling table's path.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import boto3
import httpx
import pytest

from tests.support.aws import REGION, client
from tests.support.fake_sts import FakeSts
from tests.support.iam_policy import allowed, bucket_arn, object_arn
from tests.support.rest import SCHEMA, assert_error, ns_path
from tests.support.server import ProxyProcess, Serve
from tests.support.vending import (
    CREDENTIAL_KEYS,
    DELEGATION,
    ROLE_ARN,
    load,
    prepare_vending,
    vending_catalog_config,
)

BUCKET = "irc-vending"
MAIN, SHORT, THROTTLED = "vend", "vend_short", "vend_throttled"


@pytest.fixture(scope="module")
def proxy(moto: str, sts: FakeSts, serve: Serve) -> ProxyProcess:
    prepare_vending(moto, BUCKET)
    config = vending_catalog_config(MAIN, moto, sts.url, BUCKET)
    # Reused for at most ~2 s: expiry and refresh are observable in a test.
    config += vending_catalog_config(SHORT, moto, sts.url, BUCKET, refresh_margin_seconds="898")
    config += vending_catalog_config(THROTTLED, moto, sts.url, BUCKET, sts_max_attempts="3", sts_backoff_seconds="0.05")
    return serve(config, "vending-proxy")


def api(proxy: ProxyProcess, catalog: str = MAIN) -> httpx.Client:
    return httpx.Client(base_url=f"{proxy.url}/v1/{catalog}", timeout=60)


@pytest.fixture
def http(proxy: ProxyProcess, sts: FakeSts) -> Iterator[httpx.Client]:
    sts.reset()
    with api(proxy) as session:
        yield session


def make_table(http: httpx.Client, ns: str, name: str, **extra: Any) -> dict[str, Any]:
    if http.head(f"/namespaces/{ns_path(ns)}").status_code == 404:
        assert http.post("/namespaces", json={"namespace": [ns]}).status_code == 200
    response = http.post(f"/namespaces/{ns_path(ns)}/tables", json={"name": name, "schema": SCHEMA} | extra)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def table(ns: str, name: str) -> str:
    return f"/namespaces/{ns_path(ns)}/tables/{quote(name, safe='')}"


def sent_policy(call: dict[str, str]) -> dict[str, Any]:
    policy: dict[str, Any] = json.loads(call["Policy"])
    return policy


# Vending on load --------------------------------------------------------------------------------------
def test_load_with_vended_credentials_returns_storage_credentials_and_config(
    http: httpx.Client, sts: FakeSts, ns_name: str
) -> None:
    make_table(http, ns_name, "orders")
    assert sts.assume_role_calls() == []  # no header on create: nothing vended
    started_ms = time.time() * 1000
    body = load(http, table(ns_name, "orders"))
    location = f"s3://{BUCKET}/wh/{ns_name}/orders"
    [credential] = body["storage-credentials"]
    assert credential["prefix"] == location
    config = credential["config"]
    assert set(config) >= CREDENTIAL_KEYS
    assert config["client.region"] == REGION
    assert config["s3.path-style-access"] == "true"
    assert config["s3.endpoint"].startswith("http://127.0.0.1:")
    expires = int(config["s3.session-token-expires-at-ms"])
    assert started_ms + 890_000 < expires < started_ms + 910_000  # duration_seconds = 900
    for key, value in config.items():
        assert body["config"][key] == value  # the same keys for clients that only read config
    refresh = f"v1/{MAIN}/namespaces/{ns_name}/tables/orders/credentials"
    assert body["config"]["client.refresh-credentials-endpoint"] == refresh

    [call] = sts.assume_role_calls()
    assert call["RoleArn"] == ROLE_ARN
    assert call["RoleSessionName"] == "irc-proxy@anonymous"
    assert call["DurationSeconds"] == "900"
    tags = {call[f"Tags.member.{i}.Key"]: call[f"Tags.member.{i}.Value"] for i in (1, 2, 3)}
    assert tags == {"catalog": MAIN, "namespace": ns_name, "table": "orders"}


def test_vended_credentials_are_real_sts_credentials(http: httpx.Client, moto: str, ns_name: str) -> None:
    body = make_table(http, ns_name, "orders", **{"stage-create": False})
    config = load(http, table(ns_name, "orders"))["storage-credentials"][0]["config"]
    assert config["s3.access-key-id"].startswith("ASIA")
    s3 = boto3.client(
        "s3",
        endpoint_url=moto,
        region_name=REGION,
        aws_access_key_id=config["s3.access-key-id"],
        aws_secret_access_key=config["s3.secret-access-key"],
        aws_session_token=config["s3.session-token"],
    )
    key = body["metadata-location"].removeprefix(f"s3://{BUCKET}/")
    metadata = json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert metadata["location"] == f"s3://{BUCKET}/wh/{ns_name}/orders"


def test_session_policy_is_scoped_to_the_table_not_its_sibling(http: httpx.Client, sts: FakeSts, ns_name: str) -> None:
    make_table(http, ns_name, "orders")
    make_table(http, ns_name, "orders_v2")
    load(http, table(ns_name, "orders"))
    [call] = sts.assume_role_calls()
    policy = sent_policy(call)
    prefix = f"wh/{ns_name}/orders"
    assert policy == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ReadTableObjects",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:GetObjectVersion"],
                "Resource": [f"arn:aws:s3:::{BUCKET}/{prefix}/*"],
            },
            {
                "Sid": "WriteTableObjects",
                "Effect": "Allow",
                "Action": ["s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:AbortMultipartUpload"],
                "Resource": [f"arn:aws:s3:::{BUCKET}/{prefix}/*"],
            },
            {
                "Sid": "ListTablePrefixes2",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": f"arn:aws:s3:::{BUCKET}",
                "Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
            },
            {
                "Sid": "BucketLocation",
                "Effect": "Allow",
                "Action": "s3:GetBucketLocation",
                "Resource": [f"arn:aws:s3:::{BUCKET}"],
            },
        ],
    }
    own = object_arn(BUCKET, f"{prefix}/metadata/00000.metadata.json")
    sibling = object_arn(BUCKET, f"wh/{ns_name}/orders_v2/metadata/00000.metadata.json")
    for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
        assert allowed(policy, action, own)
        assert not allowed(policy, action, sibling)
    assert allowed(policy, "s3:ListBucket", bucket_arn(BUCKET), {"s3:prefix": f"{prefix}/data/"})
    assert not allowed(policy, "s3:ListBucket", bucket_arn(BUCKET), {"s3:prefix": f"wh/{ns_name}/orders_v2/"})
    assert not allowed(policy, "s3:ListBucket", bucket_arn(BUCKET), {"s3:prefix": f"wh/{ns_name}/"})


def test_write_paths_outside_the_location_are_in_the_policy(http: httpx.Client, sts: FakeSts, ns_name: str) -> None:
    data = f"s3://{BUCKET}/wh/shared-data/{ns_name}"
    make_table(http, ns_name, "events", properties={"write.data.path": data})
    load(http, table(ns_name, "events"))
    policy = sent_policy(sts.assume_role_calls()[0])
    assert allowed(policy, "s3:PutObject", object_arn(BUCKET, f"wh/shared-data/{ns_name}/f.parquet"))
    assert allowed(policy, "s3:PutObject", object_arn(BUCKET, f"wh/{ns_name}/events/metadata/m.json"))
    assert not allowed(policy, "s3:GetObject", object_arn(BUCKET, "wh/shared-data/other/f.parquet"))


def test_create_and_register_with_the_header_vend_too(http: httpx.Client, sts: FakeSts, ns_name: str) -> None:
    http.post("/namespaces", json={"namespace": [ns_name]})
    created = http.post(
        f"/namespaces/{ns_path(ns_name)}/tables", json={"name": "t", "schema": SCHEMA}, headers=DELEGATION
    )
    assert created.status_code == 200, created.text
    assert created.json()["storage-credentials"][0]["prefix"] == f"s3://{BUCKET}/wh/{ns_name}/t"
    staged = http.post(
        f"/namespaces/{ns_path(ns_name)}/tables",
        json={"name": "staged", "schema": SCHEMA, "stage-create": True},
        headers=DELEGATION,
    )
    assert staged.status_code == 200, staged.text
    assert set(staged.json()["storage-credentials"][0]["config"]) >= CREDENTIAL_KEYS
    assert http.delete(table(ns_name, "t")).status_code == 204  # a live table's files cannot be registered twice
    registered = http.post(
        f"/namespaces/{ns_path(ns_name)}/register",
        json={"name": "t_again", "metadata-location": created.json()["metadata-location"]},
        headers=DELEGATION,
    )
    assert registered.status_code == 200, registered.text
    assert registered.json()["storage-credentials"][0]["prefix"] == f"s3://{BUCKET}/wh/{ns_name}/t"
    assert len(sts.assume_role_calls()) == 2  # register reused the cached credentials of the same location


def test_without_the_header_nothing_is_vended(http: httpx.Client, sts: FakeSts, ns_name: str) -> None:
    make_table(http, ns_name, "plain")
    body = load(http, table(ns_name, "plain"), headers={})
    assert "storage-credentials" not in body
    assert not CREDENTIAL_KEYS & set(body["config"])
    assert sts.assume_role_calls() == []


# The cache --------------------------------------------------------------------------------------------
def test_repeated_loads_reuse_one_sts_call(http: httpx.Client, sts: FakeSts, ns_name: str) -> None:
    make_table(http, ns_name, "hot")
    keys = {load(http, table(ns_name, "hot"))["config"]["s3.access-key-id"] for _ in range(5)}
    refreshed = http.get(f"{table(ns_name, 'hot')}/credentials")
    assert refreshed.status_code == 200, refreshed.text
    keys.add(refreshed.json()["storage-credentials"][0]["config"]["s3.access-key-id"])
    assert len(keys) == 1
    assert len(sts.assume_role_calls()) == 1


def test_concurrent_loads_make_a_single_sts_call(
    proxy: ProxyProcess, http: httpx.Client, sts: FakeSts, ns_name: str
) -> None:
    make_table(http, ns_name, "burst")
    sts.delay = 0.5  # every load arrives while the first AssumeRole is still out

    def one(_: int) -> str:
        with api(proxy) as session:
            return str(load(session, table(ns_name, "burst"))["config"]["s3.access-key-id"])

    with ThreadPoolExecutor(max_workers=40) as pool:
        keys = set(pool.map(one, range(80)))
    assert len(keys) == 1
    assert len(sts.assume_role_calls()) == 1


def test_credentials_are_refreshed_before_they_expire(proxy: ProxyProcess, sts: FakeSts, ns_name: str) -> None:
    sts.reset()
    with api(proxy, SHORT) as http:
        make_table(http, ns_name, "short")
        first = http.get(f"{table(ns_name, 'short')}/credentials").json()["storage-credentials"][0]["config"]
        again = http.get(f"{table(ns_name, 'short')}/credentials").json()["storage-credentials"][0]["config"]
        assert again["s3.access-key-id"] == first["s3.access-key-id"]
        time.sleep(2.5)  # margin 898 s of 900: past the reuse window
        fresh = http.get(f"{table(ns_name, 'short')}/credentials").json()["storage-credentials"][0]["config"]
    assert fresh["s3.access-key-id"] != first["s3.access-key-id"]
    assert int(fresh["s3.session-token-expires-at-ms"]) > int(first["s3.session-token-expires-at-ms"])
    assert len(sts.assume_role_calls()) == 2


# STS throttling ---------------------------------------------------------------------------------------
def test_throttled_sts_is_retried_with_backoff(proxy: ProxyProcess, sts: FakeSts, ns_name: str) -> None:
    sts.reset()
    with api(proxy, THROTTLED) as http:
        make_table(http, ns_name, "t")
        sts.throttle_next = 2
        body = load(http, table(ns_name, "t"))
    assert set(body["storage-credentials"][0]["config"]) >= CREDENTIAL_KEYS
    assert len(sts.assume_role_calls()) == 3


def test_sts_throttling_past_the_retries_is_503(proxy: ProxyProcess, sts: FakeSts, ns_name: str) -> None:
    sts.reset()
    with api(proxy, THROTTLED) as http:
        make_table(http, ns_name, "t")
        sts.throttle_next = 100
        response = http.get(table(ns_name, "t"), headers=DELEGATION)
        assert_error(response, 503, "ServiceUnavailableException", "throttled")
        assert len(sts.assume_role_calls()) == 3  # sts_max_attempts
        sts.throttle_next = 0
        assert "storage-credentials" in load(http, table(ns_name, "t"))  # nothing bad was cached


# Allowed locations ------------------------------------------------------------------------------------
def test_create_outside_the_allowed_locations_is_403(http: httpx.Client, ns_name: str) -> None:
    http.post("/namespaces", json={"namespace": [ns_name]})
    for location in (f"s3://other-bucket/{ns_name}/t", f"s3://{BUCKET}/elsewhere/t", f"s3://{BUCKET}/wh2/t"):
        response = http.post(
            f"/namespaces/{ns_path(ns_name)}/tables", json={"name": "t", "schema": SCHEMA, "location": location}
        )
        assert_error(response, 403, "ForbiddenException", location)
    data_elsewhere = {"write.data.path": "s3://other-bucket/data"}
    response = http.post(
        f"/namespaces/{ns_path(ns_name)}/tables", json={"name": "t", "schema": SCHEMA, "properties": data_elsewhere}
    )
    assert_error(response, 403, "ForbiddenException", "s3://other-bucket/data")
    assert http.head(table(ns_name, "t")).status_code == 404  # nothing was created


def test_namespace_location_outside_the_allowed_locations_is_403_on_create(http: httpx.Client, ns_name: str) -> None:
    outside = f"s3://other-bucket/{ns_name}"
    response = http.post("/namespaces", json={"namespace": [ns_name], "properties": {"location": outside}})
    assert_error(response, 403, "ForbiddenException", outside)
    assert http.head(f"/namespaces/{ns_path(ns_name)}").status_code == 404


def test_register_outside_the_allowed_locations_is_403(http: httpx.Client, moto: str, ns_name: str) -> None:
    created = make_table(http, ns_name, "src")
    s3 = client("s3", moto)
    s3.create_bucket(Bucket="foreign-bucket")
    metadata = dict(created["metadata"]) | {"location": "s3://foreign-bucket/t"}
    s3.put_object(Bucket="foreign-bucket", Key="t/metadata/00000-x.metadata.json", Body=json.dumps(metadata).encode())
    for location in ("s3://foreign-bucket/t/metadata/00000-x.metadata.json",):
        response = http.post(
            f"/namespaces/{ns_path(ns_name)}/register", json={"name": "stolen", "metadata-location": location}
        )
        assert_error(response, 403, "ForbiddenException", "s3://foreign-bucket/t")
    assert http.head(table(ns_name, "stolen")).status_code == 404


def test_commits_cannot_move_a_table_outside_the_allowed_locations(http: httpx.Client, ns_name: str) -> None:
    """Vended credentials follow the table's paths, so a commit may not point them elsewhere."""
    created = make_table(http, ns_name, "movable")
    before = created["metadata-location"]
    for update in (
        {"action": "set-location", "location": f"s3://other-bucket/{ns_name}/movable"},
        {"action": "set-properties", "updates": {"write.data.path": "s3://other-bucket/data"}},
        {"action": "set-properties", "updates": {"write.metadata.path": f"s3://{BUCKET}/elsewhere/meta"}},
    ):
        response = http.post(table(ns_name, "movable"), json={"requirements": [], "updates": [update]})
        assert_error(response, 403, "ForbiddenException", "outside the allowed locations")
    assert load(http, table(ns_name, "movable"), headers={})["metadata-location"] == before
    inside = {"action": "set-properties", "updates": {"write.data.path": f"s3://{BUCKET}/wh/{ns_name}/movable/d2"}}
    assert http.post(table(ns_name, "movable"), json={"requirements": [], "updates": [inside]}).status_code == 200
    other = {"action": "set-properties", "updates": {"owner": "someone"}}
    assert http.post(table(ns_name, "movable"), json={"requirements": [], "updates": [other]}).status_code == 200


# Errors -----------------------------------------------------------------------------------------------
def test_credentials_of_a_missing_table_is_404(http: httpx.Client, ns_name: str) -> None:
    http.post("/namespaces", json={"namespace": [ns_name]})
    assert_error(http.get(f"{table(ns_name, 'nope')}/credentials"), 404, "NoSuchTableException")


def test_catalog_without_vending_does_not_serve_or_advertise_credentials(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server = ProxyProcess(tmp_path_factory.mktemp("no-vending")).start()
    try:
        with httpx.Client(base_url=server.url) as http:
            endpoints = http.get("/v1/config").json()["endpoints"]
            assert not [e for e in endpoints if e.endswith(("/credentials", "/sign"))]
            assert http.post("/v1/local/namespaces", json={"namespace": ["n"]}).status_code == 200
            http.post("/v1/local/namespaces/n/tables", json={"name": "t", "schema": SCHEMA})
            loaded = http.get("/v1/local/namespaces/n/tables/t", headers=DELEGATION)
            assert loaded.status_code == 200 and "storage-credentials" not in loaded.json()
            assert_error(http.get("/v1/local/namespaces/n/tables/t/credentials"), 406, "UnsupportedOperationException")
    finally:
        server.stop()


def test_vending_catalog_advertises_its_endpoints(proxy: ProxyProcess) -> None:
    endpoints = httpx.get(f"{proxy.url}/v1/config", params={"warehouse": MAIN}).json()["endpoints"]
    assert "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials" in endpoints
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign" in endpoints


def test_secrets_never_reach_the_log(proxy: ProxyProcess, http: httpx.Client, ns_name: str) -> None:
    make_table(http, ns_name, "quiet")
    config = load(http, table(ns_name, "quiet"))["config"]
    log = proxy.log()
    assert config["s3.secret-access-key"] not in log
    assert config["s3.session-token"] not in log
