"""Remote signing through a served proxy, checked by sending the signed requests to moto's S3 with IAM on.

moto verifies SigV4 signatures and access keys once its IAM enforcement is on: the proxy calls STS and
Glue as an IAM user, signs with the role's (table-scoped) session credentials, and the client sends
the signed request itself. In-scope requests succeed at S3; out-of-scope ones are refused by the proxy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.aws import REGION, glue_catalog_config
from tests.support.fake_sts import FakeSts
from tests.support.in_process import InProcessProxy, ServeInProcess
from tests.support.rest import SCHEMA, assert_error, ns_path
from tests.support.vending import ROLE_ARN, SIGNING, enforce_iam, with_keys

BUCKET = "irc-signing"
CATALOG = "signed"


@pytest.fixture(scope="module")
def user_keys(moto: str) -> tuple[str, str]:
    return enforce_iam(moto, BUCKET)


@pytest.fixture(scope="module")
def proxy(moto: str, sts: FakeSts, user_keys: tuple[str, str], serve_in_process: ServeInProcess) -> InProcessProxy:
    config = with_keys(glue_catalog_config(CATALOG, moto, f"s3://{BUCKET}/wh", s3_path_style_access="true"), user_keys)
    config += (
        f"[catalogs.{CATALOG}.vending]\n"
        f'role_arn = "{ROLE_ARN}"\nsts_endpoint_url = "{sts.url}"\n'
        f's3_endpoint_url = "{moto}"\ns3_path_style_access = true\nsession_tags = false\n'
    )
    return serve_in_process(config, "signing-proxy")


@pytest.fixture
def http(proxy: InProcessProxy) -> Iterator[httpx.Client]:
    with proxy.client(f"/v1/{CATALOG}", timeout=60) as session:
        yield session


def make_table(http: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    if http.head(f"/namespaces/{ns_path(ns)}").status_code == 404:
        assert http.post("/namespaces", json={"namespace": [ns]}).status_code == 200
    response = http.post(f"/namespaces/{ns_path(ns)}/tables", json={"name": name, "schema": SCHEMA}, headers=SIGNING)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def sign(http: httpx.Client, path: str, method: str, uri: str, **extra: Any) -> httpx.Response:
    headers = extra.pop("headers", {"x-amz-content-sha256": ["UNSIGNED-PAYLOAD"]})
    body = {"region": REGION, "uri": uri, "method": method, "headers": headers} | extra
    return http.post(path, json=body)


def flat(headers: dict[str, list[str]]) -> dict[str, str]:
    return {name: ",".join(values) for name, values in headers.items()}


def sign_path(ns: str, name: str) -> str:
    return f"/namespaces/{ns_path(ns)}/tables/{name}/sign"


def test_load_with_remote_signing_returns_signer_settings(
    http: httpx.Client, proxy: InProcessProxy, ns_name: str
) -> None:
    created = make_table(http, ns_name, "t")
    config = created["config"]
    assert config["s3.remote-signing-enabled"] == "true"
    assert config["s3.signer.uri"] == proxy.url
    assert config["s3.signer.endpoint"] == f"v1/{CATALOG}/namespaces/{ns_name}/tables/t/sign"
    assert config["signer.endpoint"] == config["s3.signer.endpoint"]
    assert "s3.access-key-id" not in config and "storage-credentials" not in created
    assert created["remote-signing-config"] == {
        "properties": {"irc-proxy.catalog": CATALOG, "irc-proxy.namespace": ns_name, "irc-proxy.table": "t"},
        "headers": {},
    }


def test_signed_get_in_scope_is_accepted_by_s3(http: httpx.Client, moto: str, ns_name: str) -> None:
    created = make_table(http, ns_name, "t")
    uri = created["metadata-location"].replace(f"s3://{BUCKET}/", f"{moto}/{BUCKET}/")
    signed = sign(http, sign_path(ns_name, "t"), "GET", uri)
    assert signed.status_code == 200, signed.text
    assert signed.headers["cache-control"] == "private"
    result = signed.json()
    assert result["uri"] == uri
    assert result["headers"]["Authorization"][0].startswith("AWS4-HMAC-SHA256 Credential=ASIA")
    assert "X-Amz-Security-Token" in result["headers"]
    fetched = httpx.get(uri, headers=flat(result["headers"]))
    assert fetched.status_code == 200, fetched.text
    assert json.loads(fetched.content)["location"] == f"s3://{BUCKET}/wh/{ns_name}/t"
    tampered = flat(result["headers"])
    tampered["Authorization"] = tampered["Authorization"][:-4] + "0000"
    assert httpx.get(uri, headers=tampered).status_code == 403  # moto really checks the signature


def test_signed_put_and_listing_in_scope_work(http: httpx.Client, moto: str, ns_name: str) -> None:
    make_table(http, ns_name, "t")
    data = b"parquet bytes"
    uri = f"{moto}/{BUCKET}/wh/{ns_name}/t/data/part-0.parquet"
    headers = {"x-amz-content-sha256": [hashlib.sha256(data).hexdigest()], "content-type": ["application/octet-stream"]}
    signed = sign(http, sign_path(ns_name, "t"), "PUT", uri, headers=headers)
    assert signed.status_code == 200, signed.text
    assert signed.headers["cache-control"] == "no-cache"
    assert httpx.put(uri, content=data, headers=flat(signed.json()["headers"])).status_code == 200
    listing = f"{moto}/{BUCKET}?list-type=2&prefix=wh/{ns_name}/t/data/"
    signed = sign(http, sign_path(ns_name, "t"), "GET", listing)
    assert signed.status_code == 200, signed.text
    listed = httpx.get(listing, headers=flat(signed.json()["headers"]))
    assert listed.status_code == 200 and b"part-0.parquet" in listed.content


def test_requests_outside_the_table_are_refused(http: httpx.Client, moto: str, ns_name: str) -> None:
    make_table(http, ns_name, "t")
    make_table(http, ns_name, "t_sibling")
    path = sign_path(ns_name, "t")
    refused = [
        ("GET", f"{moto}/{BUCKET}/wh/{ns_name}/t_sibling/metadata/x.json", "t_sibling"),
        ("PUT", f"{moto}/{BUCKET}/wh/{ns_name}/t_sibling/data/f.parquet", "t_sibling"),
        ("GET", f"{moto}/other-bucket/wh/{ns_name}/t/x", "other-bucket"),
        ("GET", f"{moto}/{BUCKET}?list-type=2&prefix=wh/{ns_name}/", f"wh/{ns_name}/"),
        ("GET", f"http://attacker.example/{BUCKET}/wh/{ns_name}/t/x", "attacker.example"),
    ]
    for method, uri, named in refused:
        assert_error(sign(http, path, method, uri), 403, "ForbiddenException", named)
    outside = f"<Delete><Object><Key>wh/{ns_name}/t_sibling/data/f</Key></Object></Delete>"
    response = sign(http, path, "POST", f"{moto}/{BUCKET}?delete", body=outside)
    assert_error(response, 403, "ForbiddenException", "t_sibling")


def test_bad_sign_requests_are_400_or_404(http: httpx.Client, moto: str, ns_name: str) -> None:
    make_table(http, ns_name, "t")
    uri = f"{moto}/{BUCKET}/wh/{ns_name}/t/x"
    assert_error(sign(http, sign_path(ns_name, "t"), "GET", uri, provider="gcs"), 400, "BadRequestException", "gcs")
    assert_error(http.post(sign_path(ns_name, "t"), json={"uri": uri}), 400, "BadRequestException")
    assert_error(sign(http, sign_path(ns_name, "nope"), "GET", uri), 404, "NoSuchTableException")


def test_legacy_endpoint_signs_for_the_table_named_in_properties(
    http: httpx.Client, proxy: InProcessProxy, moto: str, ns_name: str
) -> None:
    created = make_table(http, ns_name, "t")
    properties = created["remote-signing-config"]["properties"]
    uri = created["metadata-location"].replace(f"s3://{BUCKET}/", f"{moto}/{BUCKET}/")
    body = {"region": REGION, "uri": uri, "method": "GET", "headers": {}, "properties": properties}
    with proxy.client() as plain:
        signed = plain.post("/v1/aws/s3/sign", json=body)
        assert signed.status_code == 200, signed.text
        assert httpx.get(uri, headers=flat(signed.json()["headers"])).status_code == 200
        sibling = body | {"uri": f"{moto}/{BUCKET}/wh/{ns_name}/other/x"}
        assert_error(plain.post("/v1/aws/s3/sign", json=sibling), 403, "ForbiddenException")
        anonymous = body | {"properties": {}}
        assert_error(plain.post("/v1/aws/s3/sign", json=anonymous), 400, "BadRequestException")
