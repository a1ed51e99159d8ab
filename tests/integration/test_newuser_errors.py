"""Errors that point the way, over HTTP from a real ``irc-proxy serve`` on a local and on a Glue catalog
(moto's server): a wrong base URI, a namespace written with ``.``, a namespace that is not empty.

Every answer is the spec's IcebergErrorResponse; what a client sent is echoed bounded and escaped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.aws import client as aws_client
from tests.support.aws import glue_catalog_config
from tests.support.rest import SCHEMA, assert_error
from tests.support.server import ProxyProcess, Serve


@dataclass(frozen=True)
class Served:
    """A proxy, the prefix of its one catalog, and (Glue) the moto endpoint behind it."""

    proxy: ProxyProcess
    prefix: str
    moto: str | None = None

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.proxy.url, timeout=30)


@pytest.fixture(scope="module", params=["local", "glue"])
def served(request: pytest.FixtureRequest, serve: Serve, tmp_path_factory: pytest.TempPathFactory) -> Served:
    if request.param == "local":
        return Served(serve("", "local-errors"), "local")
    moto: str = request.getfixturevalue("moto")
    warehouse = tmp_path_factory.mktemp("glue-warehouse").as_uri()
    return Served(serve(glue_catalog_config("lake", moto, warehouse), "glue-errors"), "lake", moto)


@pytest.fixture
def http(served: Served) -> Iterator[httpx.Client]:
    with served.http() as client:
        yield client


@pytest.mark.parametrize(
    ("path", "hint"),
    [
        ("/v1/v1/config", "the client's uri seems to end in /v1: set it to the server's base URL"),
        ("/v1/v1", "the client's uri seems to end in /v1:"),
        ("/api/catalog/v1/config", "the client's uri seems to include /api/catalog"),
        ("/iceberg/v1/namespaces", "the client's uri seems to include /iceberg"),
        ("/api/catalog/v1", "the client's uri seems to include /api/catalog"),
        ("/v1", "the catalog API is /v1/config and /v1/{prefix}/namespaces/..."),
        ("/api/catalog", "the catalog API is /v1/config and /v1/{prefix}/namespaces/..."),
    ],
)
def test_an_unknown_path_names_itself_and_the_expected_base(http: httpx.Client, path: str, hint: str) -> None:
    response = http.get(path)
    assert_error(response, 404, "NotFoundException", f"No route for GET {path}: ")
    assert hint in response.json()["error"]["message"]


def test_a_prefix_in_the_uri_is_named(http: httpx.Client, served: Served) -> None:
    """A client configured with ``uri = http://host/v1/<prefix>`` sends ``/v1/<prefix>/v1/...``."""
    response = http.get(f"/v1/{served.prefix}/v1/namespaces/a/tables")
    assert_error(response, 404, "NotFoundException", f"the client's uri seems to end in /v1/{served.prefix}:")


def test_a_uri_ending_in_v1_is_named_where_the_path_looks_like_a_prefix(http: httpx.Client) -> None:
    """``/v1/v1/namespaces`` is ``/v1/{prefix}/namespaces`` with prefix ``v1``: no such warehouse, and why."""
    response = http.get("/v1/v1/namespaces")
    assert_error(response, 404, "NoSuchWarehouseException", "Warehouse does not exist: v1 (requests arrive as /v1/v1/")
    assert "without /v1" in response.json()["error"]["message"]


def test_a_typo_in_a_served_path_gets_the_base(http: httpx.Client, served: Served) -> None:
    response = http.get(f"/v1/{served.prefix}/namespace")
    assert_error(response, 404, "NotFoundException", f"No route for GET /v1/{served.prefix}/namespace: ")
    assert "GET /v1/config lists every endpoint" in response.json()["error"]["message"]


def test_a_head_of_an_unknown_path_is_404_without_a_body(http: httpx.Client) -> None:
    response = http.head("/api/catalog/v1/config")
    assert response.status_code == 404 and response.content == b""


def test_a_long_unknown_path_is_echoed_bounded(http: httpx.Client) -> None:
    response = http.get("/api/" + "x" * 5000 + "/v1/config")
    assert_error(response, 404, "NotFoundException", "No route for GET /api/xxx")
    assert len(response.json()["error"]["message"]) < 600


@pytest.mark.parametrize(
    ("segment", "written"),
    [("team.sales", "team%1Fsales or team:sales"), ("a.b.c", "a%1Fb%1Fc or a:b:c")],
)
def test_a_namespace_written_with_dots_gets_the_nested_forms(
    http: httpx.Client, served: Served, segment: str, written: str
) -> None:
    response = http.get(f"/v1/{served.prefix}/namespaces/{segment}")
    levels = segment.count(".") + 1
    expected = f"Namespace does not exist: {segment} (a namespace of {levels} levels is written {written} in a URL"
    assert_error(response, 404, "NoSuchNamespaceException", expected)
    assert "`.` is part of a level name" in response.json()["error"]["message"]


def test_the_nested_form_the_hint_gives_is_served(http: httpx.Client, served: Served, ns_name: str) -> None:
    created = http.post(f"/v1/{served.prefix}/namespaces", json={"namespace": [ns_name, "sales"]})
    assert created.status_code == 200, created.text
    dotted = http.get(f"/v1/{served.prefix}/namespaces/{ns_name}.sales")
    assert_error(dotted, 404, "NoSuchNamespaceException", f"{ns_name}%1Fsales or {ns_name}:sales")
    for form in (f"{ns_name}%1Fsales", f"{ns_name}:sales"):
        assert http.get(f"/v1/{served.prefix}/namespaces/{form}").json()["namespace"] == [ns_name, "sales"]


def test_a_namespace_without_dots_gets_no_hint(http: httpx.Client, served: Served, ns_name: str) -> None:
    response = http.get(f"/v1/{served.prefix}/namespaces/{ns_name}")
    assert_error(response, 404, "NoSuchNamespaceException")
    assert response.json()["error"]["message"] == f"Namespace does not exist: {ns_name}"


def test_create_table_in_a_dotted_missing_namespace_gets_the_hint(
    http: httpx.Client, served: Served, ns_name: str
) -> None:
    response = http.post(f"/v1/{served.prefix}/namespaces/{ns_name}.x/tables", json={"name": "t", "schema": SCHEMA})
    assert_error(response, 404, "NoSuchNamespaceException", f"written {ns_name}%1Fx or {ns_name}:x in a URL")


def view_body(name: str, namespace: str) -> dict[str, Any]:
    version = {
        "version-id": 1,
        "timestamp-ms": 1_700_000_000_000,
        "schema-id": 0,
        "summary": {},
        "representations": [{"type": "sql", "sql": "select 1 as id", "dialect": "spark"}],
        "default-namespace": [namespace],
    }
    return {"name": name, "schema": SCHEMA, "view-version": version, "properties": {}}


def test_a_namespace_that_is_not_empty_counts_every_kind(http: httpx.Client, served: Served, ns_name: str) -> None:
    base = f"/v1/{served.prefix}/namespaces"
    for levels in ([ns_name], [ns_name, "child"], [ns_name, "child", "grandchild"]):
        assert http.post(base, json={"namespace": levels}).status_code == 200
    for name in ("t1", "t2", "t3"):
        assert http.post(f"{base}/{ns_name}/tables", json={"name": name, "schema": SCHEMA}).status_code == 200
    assert http.post(f"{base}/{ns_name}/views", json=view_body("v", ns_name)).status_code == 200
    response = http.delete(f"{base}/{ns_name}")
    expected = f"Namespace {ns_name} is not empty. It contains 2 namespaces, 3 tables and 1 view."
    assert_error(response, 409, "NamespaceNotEmptyException")
    assert response.json()["error"]["message"] == expected


def test_a_namespace_with_only_tables_says_so(http: httpx.Client, served: Served, ns_name: str) -> None:
    base = f"/v1/{served.prefix}/namespaces"
    assert http.post(base, json={"namespace": [ns_name]}).status_code == 200
    assert http.post(f"{base}/{ns_name}/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
    response = http.delete(f"{base}/{ns_name}")
    assert_error(response, 409, "NamespaceNotEmptyException", f"Namespace {ns_name} is not empty. It contains 1 table.")
    assert http.delete(f"{base}/{ns_name}/tables/t").status_code == 204
    assert http.delete(f"{base}/{ns_name}").status_code == 204


def test_a_glue_database_with_an_engine_view_counts_it(http: httpx.Client, served: Served, ns_name: str) -> None:
    if served.moto is None:
        pytest.skip("engine views are Glue's")
    assert http.post(f"/v1/{served.prefix}/namespaces", json={"namespace": [ns_name]}).status_code == 200
    view = {"Name": "hive_view", "TableType": "VIRTUAL_VIEW", "ViewOriginalText": "SELECT 1"}
    aws_client("glue", served.moto).create_table(DatabaseName=ns_name, TableInput=view)
    response = http.delete(f"/v1/{served.prefix}/namespaces/{ns_name}")
    assert_error(response, 409, "NamespaceNotEmptyException", f"Namespace {ns_name} is not empty. It contains 1 view.")


def test_a_glue_database_with_a_table_of_another_format_says_the_catalog_does_not_list_it(
    http: httpx.Client, served: Served, ns_name: str
) -> None:
    if served.moto is None:
        pytest.skip("tables of other formats are Glue's")
    assert http.post(f"/v1/{served.prefix}/namespaces", json={"namespace": [ns_name]}).status_code == 200
    hive = {"Name": "legacy", "TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "HIVE"}}
    aws_client("glue", served.moto).create_table(DatabaseName=ns_name, TableInput=hive)
    response = http.delete(f"/v1/{served.prefix}/namespaces/{ns_name}")
    assert_error(response, 409, "NamespaceNotEmptyException", "objects this catalog does not list")
