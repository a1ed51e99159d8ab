"""What a new user's client (or curl) trips on at the HTTP surface: unserved spec routes, storage
failures, long names and validation messages, all in the spec's error shape and never a 500."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.rest import SCHEMA, assert_error, create_namespace, ns_path

FUNCTIONS = "/namespaces/{ns}/functions"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/namespaces/{ns}/functions"),
        ("GET", "/namespaces/{ns}/functions/f"),
    ],
)
@pytest.mark.parametrize("prefix", ["/v1/local", "/v1"])
def test_unserved_spec_routes_are_406(client: httpx.Client, method: str, path: str, prefix: str) -> None:
    response = client.request(method, prefix + path.format(ns="a%1Fb"), json={})
    assert_error(response, 406, "UnsupportedOperationException", "/v1/{prefix}/namespaces/{namespace}/")
    assert response.headers["content-type"] == "application/json"


def test_unserved_route_of_an_unknown_prefix_is_still_no_such_warehouse(client: httpx.Client) -> None:
    response = client.get("/v1/nope" + FUNCTIONS.format(ns="a"))
    assert_error(response, 404, "NoSuchWarehouseException")


def test_unserved_routes_are_not_advertised(client: httpx.Client) -> None:
    endpoints = client.get("/v1/config").json()["endpoints"]
    assert not [e for e in endpoints if "/functions" in e]


def test_unusable_metadata_location_is_400_not_500(client: httpx.Client, ns_name: str, warehouse_dir: Path) -> None:
    """A location beneath a regular file can never work: a client error, not an outage (no retry helps)."""
    blocker = warehouse_dir / f"{ns_name}-a-file"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a directory")
    create_namespace(client, ns_name)
    body = {"name": "t", "schema": SCHEMA, "location": f"file://{blocker}/t"}
    response = client.post(f"/v1/local/namespaces/{ns_path(ns_name)}/tables", json=body)
    assert_error(response, 400, "BadRequestException", "Cannot write metadata file")
    assert client.head(f"/v1/local/namespaces/{ns_path(ns_name)}/tables/t").status_code == 404


def test_too_long_namespace_name_is_not_echoed_in_full(client: httpx.Client) -> None:
    response = client.post("/v1/local/namespaces", json={"namespace": ["n" * 5000]})
    assert_error(response, 400, "BadRequestException", "too long")
    assert len(response.text) < 400


def test_validation_messages_carry_no_pydantic_prefix(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    schema = {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "nonsense", "required": False}]}
    response = client.post(f"/v1/local/namespaces/{ns_path(ns_name)}/tables", json={"name": "t", "schema": schema})
    assert_error(response, 400, "BadRequestException", "Unsupported field type: 'nonsense'")
    assert "Value error" not in response.text


def test_a_trailing_slash_is_served_not_redirected(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    listed = client.get("/v1/local/namespaces/")
    assert listed.status_code == 200 and [ns_name] in listed.json()["namespaces"]
    assert client.get(f"/v1/local/namespaces/{ns_path(ns_name)}/").json()["namespace"] == [ns_name]
    assert client.get("/v1/config/").status_code == 200
