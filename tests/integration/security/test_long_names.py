"""Long names are a 400 naming the limit, never a 5xx from the file system; every accepted name works.

A writer creates namespaces, tables and views with long non-ASCII names on a ``file://`` warehouse (local
and Glue backends). A name's default directory spells each non-ASCII UTF-8 byte as three characters, so
before the limit an 86-byte name made a 258-byte directory name and the create was a 503. Now every new
name must fit its directory (``MAX_DIRECTORY_NAME``): accepted names create, load and drop; refused ones
are a 400 that says which limit. Renames to a long name and client-given locations with an over-long
directory name are refused the same way.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from irc_proxy.handling.naming import MAX_DIRECTORY_NAME
from tests.integration.security.conftest import Target
from tests.support.rest import SCHEMA, ns_path, table_url

# (UTF-8 bytes, the character) -> a name of exactly that many bytes; 2-byte "é" and 3-byte "日" names.
SIZES = [80, 82, 84, 85, 86, 120, 255, 256, 600]


def name_of(size: int, char: str) -> str:
    width = len(char.encode())
    return char * (size // width) + "a" * (size % width)


NAMES = [name_of(size, char) for size in SIZES for char in ("é", "日")] + ["a" * 246, "a" * 247, "a" * 256]
VIEW_SCHEMA: dict[str, Any] = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "type": "long"}]}


def view_body(name: str) -> dict[str, Any]:
    version = {
        "version-id": 1,
        "timestamp-ms": int(time.time() * 1000),
        "schema-id": 0,
        "summary": {"engine-name": "test"},
        "representations": [{"type": "sql", "sql": "select 1 as x", "dialect": "spark"}],
        "default-namespace": ["db"],
    }
    return {"name": name, "schema": VIEW_SCHEMA, "view-version": version, "properties": {}}


def fits(name: str) -> bool:
    """Whether ``name``'s default directory name fits (1 per safe ASCII character, 3 per other UTF-8 byte)."""
    return sum(1 if ch.isascii() and ch.isalnum() else 3 * len(ch.encode()) for ch in name) <= MAX_DIRECTORY_NAME


def assert_refused_naming_the_limit(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "BadRequestException"
    assert f"limit of {MAX_DIRECTORY_NAME}" in error["message"] or "255 bytes" in error["message"], error


@pytest.mark.parametrize("name", NAMES, ids=lambda n: f"{len(n.encode())}B-{n[0]}")
def test_a_long_namespace_name_is_created_or_refused_with_400(client: httpx.Client, name: str) -> None:
    level = name
    created = client.post("/v1/local/namespaces", json={"namespace": [level]})
    if not fits(level):
        assert_refused_naming_the_limit(created)
        return
    assert created.status_code == 200, created.text
    table = client.post(f"/v1/local/namespaces/{ns_path(level)}/tables", json={"name": "t", "schema": SCHEMA})
    assert table.status_code == 200, table.text  # its default directory lies in the namespace's directory
    assert client.get(table_url((level,), "t")).status_code == 200
    assert client.delete(table_url((level,), "t")).status_code == 204
    assert client.get(f"/v1/local/namespaces/{ns_path(level)}").status_code == 200
    assert client.delete(f"/v1/local/namespaces/{ns_path(level)}").status_code == 204


@pytest.mark.parametrize("name", NAMES, ids=lambda n: f"{len(n.encode())}B-{n[0]}")
def test_a_long_table_name_is_created_or_refused_with_400(client: httpx.Client, ns: str, name: str) -> None:
    created = client.post(f"/v1/local/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA})
    if not fits(name):
        assert_refused_naming_the_limit(created)
        return
    assert created.status_code == 200, created.text
    assert client.get(table_url((ns,), name)).status_code == 200
    # A second table of that name after a drop gets a suffixed default directory: it must still fit.
    assert client.delete(table_url((ns,), name)).status_code == 204
    again = client.post(f"/v1/local/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA})
    assert again.status_code == 200, again.text
    assert client.delete(table_url((ns,), name), params={"purgeRequested": "true"}).status_code == 204


@pytest.mark.parametrize("name", NAMES, ids=lambda n: f"{len(n.encode())}B-{n[0]}")
def test_a_long_view_name_is_created_or_refused_with_400(client: httpx.Client, ns: str, name: str) -> None:
    created = client.post(f"/v1/local/namespaces/{ns}/views", json=view_body(name))
    if not fits(name):
        assert_refused_naming_the_limit(created)
        return
    assert created.status_code == 200, created.text
    url = f"/v1/local/namespaces/{ns}/views/{ns_path(name)}"
    assert client.get(url).status_code == 200
    assert client.delete(url).status_code == 204


def test_renames_to_a_long_name_are_refused_with_400(client: httpx.Client, ns: str) -> None:
    too_long = name_of(86, "日")
    assert client.post(f"/v1/local/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
    assert client.post(f"/v1/local/namespaces/{ns}/views", json=view_body("v")).status_code == 200
    for kind, source in (("tables", "t"), ("views", "v")):
        body = {"source": {"namespace": [ns], "name": source}, "destination": {"namespace": [ns], "name": too_long}}
        assert_refused_naming_the_limit(client.post(f"/v1/local/{kind}/rename", json=body))


def test_a_location_with_an_over_long_directory_name_is_a_400(client: httpx.Client, ns: str, target: Target) -> None:
    location = f"{target.warehouse.as_uri()}/{ns}/{'x' * 256}"
    created = client.post(
        f"/v1/local/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA, "location": location}
    )
    assert_refused_naming_the_limit(created)
