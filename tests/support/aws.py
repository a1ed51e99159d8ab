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
