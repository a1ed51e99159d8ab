"""Views answer storage failures exactly as tables do: an object store that is down is a 503 on
create and register (clients retry it), never a 500 or a 400."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.aws import glue_on_s3_config
from tests.support.in_process import ServeInProcess
from tests.support.rest import SCHEMA, create_namespace


def _closed_port() -> int:
    """A local port nothing listens on: every connection is refused (a stopped object store)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def store_down(moto: str, serve_in_process: ServeInProcess) -> Iterator[httpx.Client]:
    """A Glue catalog (moto) whose S3 endpoint refuses every connection."""
    config = glue_on_s3_config(moto, f"http://127.0.0.1:{_closed_port()}", max_attempts=1)
    with serve_in_process(config, "store-down").client(timeout=120) as http:
        yield http


def _create(kind: str, name: str) -> dict[str, Any]:
    if kind == "table":
        return {"name": name, "schema": SCHEMA}
    version = {
        "version-id": 1,
        "timestamp-ms": 1,
        "schema-id": 0,
        "summary": {"engine-name": "spark"},
        "representations": [{"type": "sql", "sql": "SELECT 1 AS id", "dialect": "spark"}],
        "default-namespace": [],
    }
    return {"name": name, "schema": SCHEMA, "view-version": version, "properties": {}}


@pytest.mark.parametrize("kind", ["table", "view"])
def test_create_while_the_object_store_is_down_is_503(store_down: httpx.Client, kind: str) -> None:
    ns = f"down_{uuid.uuid4().hex[:8]}"
    create_namespace(store_down, ns)
    response = store_down.post(f"/v1/local/namespaces/{ns}/{kind}s", json=_create(kind, "x"))
    assert response.status_code == 503, response.text
    assert response.json()["error"]["type"] == "ServiceUnavailableException"
    assert store_down.head(f"/v1/local/namespaces/{ns}/{kind}s/x").status_code == 404  # nothing was created


@pytest.mark.parametrize("path", ["register", "register-view"])
def test_register_while_the_object_store_is_down_is_503(store_down: httpx.Client, path: str) -> None:
    ns = f"down_{uuid.uuid4().hex[:8]}"
    create_namespace(store_down, ns)
    body = {"name": "x", "metadata-location": f"s3://lake/wh/{ns}/x/metadata/00000-a.metadata.json"}
    response = store_down.post(f"/v1/local/namespaces/{ns}/{path}", json=body)
    assert response.status_code == 503, response.text
    assert response.json()["error"]["type"] == "ServiceUnavailableException"
