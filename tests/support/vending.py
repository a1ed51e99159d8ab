"""Proxy configs with credential vending: a Glue catalog on moto (Glue, S3) whose STS is a ``FakeSts`` front."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.aws import ACCESS_KEY, SECRET_KEY, client, glue_catalog_config

ROLE_ARN = "arn:aws:iam::123456789012:role/irc-vended"
DELEGATION = {"X-Iceberg-Access-Delegation": "vended-credentials"}
SIGNING = {"X-Iceberg-Access-Delegation": "remote-signing"}
CREDENTIAL_KEYS = {
    "s3.access-key-id",
    "s3.secret-access-key",
    "s3.session-token",
    "s3.session-token-expires-at-ms",
    "client.region",
}
TRUST_POLICY = (
    '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},'
    '"Action":["sts:AssumeRole","sts:TagSession"]}]}'
)


def vending_catalog_config(name: str, moto: str, sts: str, bucket: str, **vending: str) -> str:
    """``[catalogs.NAME]`` (Glue on moto, warehouse ``s3://bucket/wh``) plus its ``vending`` table."""
    text = glue_catalog_config(name, moto, f"s3://{bucket}/wh", s3_path_style_access="true")
    keys = {
        "role_arn": f'"{ROLE_ARN}"',
        "sts_endpoint_url": f'"{sts}"',
        "s3_endpoint_url": f'"{moto}"',
        "s3_path_style_access": "true",
        "duration_seconds": "900",
        "refresh_margin_seconds": "300",
    } | vending
    lines = [f"[catalogs.{name}.vending]"] + [f"{key} = {value}" for key, value in keys.items()]
    return text + "\n".join(lines) + "\n"


def create_role(iam: Any) -> None:
    iam.create_role(RoleName=ROLE_ARN.rsplit("/", 1)[1], AssumeRolePolicyDocument=TRUST_POLICY)


def load(http: httpx.Client, path: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    response = http.get(path, headers=headers if headers is not None else DELEGATION)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


ALLOW_ALL = '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}'


def enforce_iam(moto: str, bucket: str) -> tuple[str, str]:
    """Create an all-powerful IAM user (the proxy's keys) and the vended role, then turn moto's IAM on.

    From then on moto checks every request's access key and SigV4 signature (role and user policies,
    not session policies). Returns the user's access key id and secret.
    """
    iam = client("iam", moto)
    iam.create_user(UserName="proxy")
    iam.put_user_policy(UserName="proxy", PolicyName="all", PolicyDocument=ALLOW_ALL)
    key = iam.create_access_key(UserName="proxy")["AccessKey"]
    create_role(iam)
    iam.put_role_policy(RoleName=ROLE_ARN.rsplit("/", 1)[1], PolicyName="all", PolicyDocument=ALLOW_ALL)
    client("s3", moto).create_bucket(Bucket=bucket)
    httpx.post(f"{moto}/moto-api/reset-auth", content=b"0", headers={"Content-Type": "text/plain"})
    return key["AccessKeyId"], key["SecretAccessKey"]


def relax_iam(moto: str) -> None:
    """Turn moto's IAM enforcement off again and empty it (its state is process-wide)."""
    httpx.post(f"{moto}/moto-api/reset-auth", content=b"inf", headers={"Content-Type": "text/plain"})
    httpx.post(f"{moto}/moto-api/reset")


def with_keys(config: str, keys: tuple[str, str]) -> str:
    """A ``glue_catalog_config`` text that uses ``keys`` instead of the default test keys."""
    return config.replace(f'"{ACCESS_KEY}"', f'"{keys[0]}"').replace(f'"{SECRET_KEY}"', f'"{keys[1]}"')


def prepare_vending(moto: str, bucket: str) -> None:
    """Create ``bucket`` and the vended role on an empty moto."""
    client("s3", moto).create_bucket(Bucket=bucket)
    create_role(client("iam", moto))
