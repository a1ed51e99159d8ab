"""The HTTP surface: /v1/config, prefixes, the error shape for bad input, unknown routes."""

from __future__ import annotations

import re
import socket
import time

import httpx

from tests.support.rest import assert_error
from tests.support.server import ProxyProcess


def test_config_names_prefix_and_exactly_the_served_endpoints(client: httpx.Client) -> None:
    config = client.get("/v1/config", params={"warehouse": "local"}).json()
    assert config["overrides"]["prefix"] == "local"
    assert config["defaults"] == {
        "irc-proxy.table-format-versions": "1,2,3",
        "io-impl": "org.apache.iceberg.hadoop.HadoopFileIO",  # a file:// warehouse: what ResolvingFileIO would pick
        "rest-metrics-reporting-enabled": "false",  # reports are not kept
    }
    endpoints = set(config["endpoints"])
    assert "POST /v1/{prefix}/transactions/commit" in endpoints
    assert "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}" in endpoints
    assert "POST /v1/{prefix}/namespaces/{namespace}/register-view" in endpoints
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan" in endpoints  # scan planning: offered
    assert not any("/credentials" in e or "/sign" in e or "/functions" in e for e in endpoints)
    for endpoint in endpoints:
        method, path = endpoint.split(" ")
        concrete = path.replace("{prefix}", "local").replace("{namespace}", "zz_none")
        concrete = concrete.replace("{table}", "t").replace("{view}", "v").replace("{plan-id}", "p")
        response = client.request(method, concrete, json={})
        assert response.status_code not in (405, 500), (endpoint, response.status_code)
        assert response.status_code != 404 or response.request.method == "HEAD" or "error" in response.json()


def test_config_without_warehouse_uses_default_catalog(client: httpx.Client) -> None:
    assert client.get("/v1/config").json()["overrides"]["prefix"] == "local"


def test_unknown_warehouse_is_404(client: httpx.Client) -> None:
    assert_error(client.get("/v1/config", params={"warehouse": "nope"}), 404, "NoSuchWarehouseException")


def test_routes_work_with_and_without_prefix(client: httpx.Client) -> None:
    assert client.get("/v1/namespaces").status_code == 200
    assert client.get("/v1/local/namespaces").status_code == 200
    assert_error(client.get("/v1/other/namespaces"), 404, "NoSuchWarehouseException")


def test_malformed_json_and_wrong_types_are_400(client: httpx.Client) -> None:
    response = client.post("/v1/local/namespaces", content=b"{not json", headers={"content-type": "application/json"})
    assert_error(response, 400, "BadRequestException", "not valid JSON")
    assert_error(client.post("/v1/local/namespaces", json=[1, 2]), 400, "BadRequestException")
    assert_error(client.post("/v1/local/namespaces", content=b"\xff\xfe"), 400, "BadRequestException")
    assert_error(
        client.get("/v1/local/namespaces", params={"pageToken": "!!", "pageSize": "x"}), 400, "BadRequestException"
    )
    assert_error(client.get("/v1/local/namespaces", params={"pageToken": "@@@"}), 400, "BadRequestException")


def test_bad_table_bodies_are_400(client: httpx.Client) -> None:
    client.post("/v1/local/namespaces", json={"namespace": ["http_bad_tables"]})
    url = "/v1/local/namespaces/http_bad_tables/tables"
    for body in (
        {"name": "t"},
        {"name": "t", "schema": {"type": "struct", "fields": "nope"}},
        {"name": 5, "schema": {"type": "struct", "fields": []}},
        {
            "name": "t",
            "schema": {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "nonsense", "required": False}]},
        },
        {"name": "", "schema": {"type": "struct", "fields": []}},
        {"name": "t", "schema": {"type": "struct", "fields": []}, "stage-create": "yes"},
    ):
        assert_error(client.post(url, json=body), 400, "BadRequestException")


def test_unknown_route_and_wrong_method_use_the_error_shape(client: httpx.Client) -> None:
    assert_error(client.get("/v1/local/nothing/here"), 404, "NotFoundException")
    assert_error(client.put("/v1/local/namespaces"), 405, "MethodNotAllowedException")


def test_every_response_carries_a_request_id(client: httpx.Client) -> None:
    assert client.get("/v1/config").headers["x-request-id"]
    assert client.get("/v1/config", headers={"X-Request-Id": "abc-123"}).headers["x-request-id"] == "abc-123"


def _read_response(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"content-length: *(\d+)", head, re.I).group(1))  # type: ignore[union-attr]
    while len(rest) < length:
        rest += sock.recv(65536)
    return head


def test_keep_alive_survives_an_answer_given_before_the_body_arrived(proxy: ProxyProcess) -> None:
    """A 404 sent before the request body was read must not cost the client its pooled connection."""
    host, port = proxy.url.removeprefix("http://").split(":")
    body = b'{"namespace": ["a"]}'
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/nope/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        time.sleep(0.3)  # the 404 is decided before any of the body has arrived
        sock.sendall(body)
        assert b" 404 " in _read_response(sock).split(b"\r\n")[0]
        sock.sendall(b"GET /v1/config HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        second = _read_response(sock)
        assert second, "the server closed the connection after answering before the body was read"
        assert b" 200 " in second.split(b"\r\n")[0]
