"""moto as a real HTTP server on 127.0.0.1 (Glue, S3, STS) and proxy configs that point at it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

REGION = "us-east-1"
ACCOUNT = "123456789012"
ACCESS_KEY = "testing-key"
SECRET_KEY = "testing-secret"


@contextmanager
def moto_server() -> Iterator[str]:
    """A moto server on a free loopback port; yields its endpoint URL."""
    os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def client(service: str, endpoint: str) -> Any:  # boto3's clients are untyped here
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )


def glue_catalog_config(name: str, endpoint: str, warehouse: str, **extra: str) -> str:
    """A ``[catalogs.NAME]`` TOML table for a Glue catalog on the moto server; ``extra`` adds or replaces keys."""
    keys = {
        "kind": '"glue"',
        "warehouse": f'"{warehouse}"',
        "region": f'"{REGION}"',
        "catalog_id": f'"{ACCOUNT}"',
        "endpoint_url": f'"{endpoint}"',
        "s3_endpoint_url": f'"{endpoint}"',
        "access_key_id": f'"{ACCESS_KEY}"',
        "secret_access_key": f'"{SECRET_KEY}"',
        "max_attempts": "2",
    } | extra
    return "\n".join([f"[catalogs.{name}]"] + [f"{key} = {value}" for key, value in keys.items()]) + "\n"


def glue_on_s3_config(endpoint: str, s3_endpoint: str, max_attempts: int) -> str:
    """Catalog ``local``: Glue on moto, its warehouse ``s3://lake/wh`` (path-style) on the S3 at ``s3_endpoint``
    (a store that is down, or one that never answers)."""
    return glue_catalog_config(
        "local",
        endpoint,
        "s3://lake/wh",
        s3_endpoint_url=f'"{s3_endpoint}"',
        s3_path_style_access="true",
        max_attempts=str(max_attempts),
    )


@contextmanager
def java_sdk_signatures() -> Iterator[None]:
    """Let moto's IAM enforcement verify the SigV4 signatures of the AWS SDK for Java (Hadoop's S3A).

    moto recomputes a request's signature with botocore's signer over the headers the request names in
    ``SignedHeaders``, but botocore never signs ``User-Agent``, which the Java SDK v1 does sign: every S3A request
    then fails with ``SignatureDoesNotMatch`` although it is correctly signed. Inside this block moto's S3 check
    signs every header the request names (moto already keeps only those), as AWS does. Only the in-process moto
    server is affected; botocore's own clients are not.
    """
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest, HTTPHeaders
    from moto.iam.access_control import S3IAMRequest

    class EveryNamedHeader(S3SigV4Auth):  # type: ignore[misc]  # botocore is untyped here
        def headers_to_sign(self, request: AWSRequest) -> HTTPHeaders:
            named = HTTPHeaders()
            for name, value in request.headers.items():
                named[name.lower()] = value
            return named if "host" in named else super().headers_to_sign(request)

    def signer(self: Any, credentials: Any) -> S3SigV4Auth:
        return EveryNamedHeader(credentials, self._service, self._region)

    original = S3IAMRequest._create_auth
    S3IAMRequest._create_auth = signer  # type: ignore[method-assign]
    try:
        yield
    finally:
        S3IAMRequest._create_auth = original  # type: ignore[method-assign]
