"""What a new user's client (or curl, or browser) trips on at the HTTP surface: unserved spec routes, storage
failures, long names and validation messages, all in the spec's error shape and never a 500; the root, which
sends a browser to the console; and the start-up log, which says where the REST catalog and the console are."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.in_process import ServeInProcess
from tests.support.rest import SCHEMA, assert_error, create_namespace, ns_path
from tests.support.server import Serve

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


BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"  # a browser's navigation


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_a_browser_opening_the_root_is_sent_to_the_console(client: httpx.Client, method: str) -> None:
    response = client.request(method, "/", headers={"Accept": BROWSER})
    assert response.status_code == 302 and response.headers["location"] == "/ui"
    assert response.headers["vary"] == "Accept" and response.content == b""
    console = client.get("/ui/catalogs", headers={"Accept": BROWSER})
    assert console.status_code == 200 and console.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize("accept", [None, "application/json", "*/*", "application/json, text/plain"])
def test_an_api_client_at_the_root_keeps_the_json_404(client: httpx.Client, accept: str | None) -> None:
    headers = {"Accept": accept} if accept else {}
    if accept is None:
        client.headers.pop("Accept", None)
    response = client.get("/", headers=headers)
    assert_error(response, 404, "NotFoundException")
    assert response.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("method", "path", "host"),
    [
        ("GET", "/?next=//evil.example/", None),  # the query never reaches Location
        ("GET", "//evil.example/", None),  # not the root: no redirect at all
        ("GET", "/%2F%2Fevil.example", None),
        ("POST", "/", None),  # only GET and HEAD (a form POST is refused before: 400)
        ("GET", "/", "evil.example"),  # a foreign Host: refused before (DNS rebinding)
    ],
)
def test_the_root_redirect_cannot_be_pointed_elsewhere(
    client: httpx.Client, method: str, path: str, host: str | None
) -> None:
    headers = {"Accept": BROWSER} | ({"Host": host} if host else {})
    response = client.request(method, path, headers=headers)
    if response.status_code == 302:
        assert response.headers["location"] == "/ui", response.headers
    else:
        assert response.status_code in (400, 403, 404, 405) and "location" not in response.headers
    assert "evil" not in response.headers.get("location", "")
    if host:
        assert_error(response, 403, "ForbiddenException")


def test_without_the_console_a_browser_at_the_root_gets_the_404(
    serve_in_process: ServeInProcess,
) -> None:
    proxy = serve_in_process("[server]\nui = false\n", "noui")
    with proxy.client() as http:
        assert_error(http.get("/", headers={"Accept": BROWSER}), 404, "NotFoundException")


def test_the_start_up_log_names_the_rest_uri_and_the_console(serve: Serve) -> None:
    proxy = serve("", "startlog")
    log = proxy.log()
    assert f"REST catalog URI: {proxy.url} (engines: uri = this, warehouse = a catalog's name: local)" in log
    assert f"web console: {proxy.url}/ui" in log
    quiet = serve("[server]\nui = false\n", "startlog-noui")
    assert "web console: off (server.ui = false)" in quiet.log() and "/ui" not in quiet.log()
