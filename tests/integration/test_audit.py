"""The audit trail against real proxies: database records, the webhook sink (CloudEvents) and the CLI."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
import sqlalchemy as sa

from irc_proxy.handling.security.authn import hash_secret
from tests.support.server import ProxyProcess, Serve, free_port

SECRET = "audit-secret"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


class Receiver(BaseHTTPRequestHandler):
    events: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.events.append((self.headers["Content-Type"], json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def webhook() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/events"
    server.shutdown()


@pytest.fixture(scope="module")
def audited(webhook: str, serve: Serve) -> ProxyProcess:
    config = f'[audit]\nlog = true\n[audit.webhook]\nurl = "{webhook}"\ncloudevents = true\n'
    return serve(config, "audited")


@pytest.fixture(scope="module")
def secured(serve: Serve) -> ProxyProcess:
    """oauth2, with a webhook nobody listens on (it must not slow or fail requests)."""
    config = f'''
[auth]
mode = "oauth2"
admins = ["svc-etl"]
[[auth.clients]]
id = "etl"
secret_hash = "{hash_secret(SECRET)}"
principal = "svc-etl"
[audit.webhook]
url = "http://127.0.0.1:{free_port()}/down"
max_attempts = 3
backoff_seconds = 0.2
[audit]
flush_timeout_seconds = 0.5
'''
    return serve(config, "secured")


def records(proxy: ProxyProcess, request_id: str, wait: float = 10.0) -> list[dict[str, Any]]:
    """The audit rows of one request id, once the background writer has stored them."""
    engine = sa.create_engine(f"sqlite:///{proxy.workdir / 'data' / 'state.db'}")
    deadline = time.monotonic() + wait
    try:
        while True:
            with engine.connect() as conn:
                rows = conn.execute(sa.text("select * from audit_record where request_id = :r"), {"r": request_id})
                found = [dict(row._mapping) for row in rows]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)
    finally:
        engine.dispose()


def one(proxy: ProxyProcess, response: httpx.Response) -> dict[str, Any]:
    found = records(proxy, response.headers["x-request-id"])
    assert len(found) == 1, found
    return found[0]


def test_allowed_calls_are_recorded_with_operation_object_and_status(audited: ProxyProcess) -> None:
    ns = f"audit_{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=audited.url, timeout=30) as client:
        created = client.post("/v1/local/namespaces", json={"namespace": [ns, "sales"]})
        assert created.status_code == 200
        table = client.post(f"/v1/local/namespaces/{ns}%1Fsales/tables", json={"name": "orders", "schema": SCHEMA})
        assert table.status_code == 200, table.text
        loaded = client.get(f"/v1/local/namespaces/{ns}%1Fsales/tables/orders")
        missing = client.get(f"/v1/namespaces/{ns}%1Fsales/tables/nope", headers={"X-Request-Id": "mine-404"})
        conflict = client.post("/v1/local/namespaces", json={"namespace": [ns, "sales"]})
        config = client.get("/v1/config")
        health = client.get("/healthz")
    assert (missing.status_code, conflict.status_code) == (404, 409)

    record = one(audited, loaded)
    assert record["principal"] == "anonymous" and record["operation"] == "loadTable"
    assert record["catalog"] == "local" and record["object"] == f"{ns}.sales.orders"
    assert record["status"] == 200 and record["decision"] == "allowed" and record["reason"] is None
    assert record["latency_ms"] > 0
    assert one(audited, table)["operation"] == "createTable" and one(audited, table)["object"] == f"{ns}.sales.orders"
    gone = one(audited, missing)
    assert gone["request_id"] == "mine-404" and gone["status"] == 404 and gone["catalog"] == "local"
    assert (gone["operation"], gone["object"]) == ("loadTable", f"{ns}.sales.nope")
    clash = one(audited, conflict)
    assert (clash["operation"], clash["status"], clash["object"]) == ("createNamespace", 409, f"{ns}.sales")
    assert one(audited, config)["operation"] == "getConfig"
    assert records(audited, health.headers["x-request-id"], wait=0.5) == []
    line = next(
        text
        for text in audited.log().splitlines()
        if loaded.headers["x-request-id"] in text and "irc_proxy.audit" in text
    )
    assert json.loads(line.split("irc_proxy.audit ", 1)[1])["operation"] == "loadTable"

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        events = {event["data"]["request_id"]: (kind, event) for kind, event in Receiver.events}
        if loaded.headers["x-request-id"] in events:
            break
        time.sleep(0.05)
    kind, event = events[loaded.headers["x-request-id"]]
    assert kind == "application/cloudevents+json"
    assert event["specversion"] == "1.0" and event["type"] == "io.irc-proxy.audit" and event["id"]
    assert event["source"] == "irc-proxy" and event["data"]["object"] == f"{ns}.sales.orders"


def test_oauth2_principal_is_recorded_and_a_down_webhook_costs_nothing(secured: ProxyProcess) -> None:
    token = httpx.post(
        f"{secured.url}/v1/oauth/tokens",
        data={"grant_type": "client_credentials", "client_id": "etl", "client_secret": SECRET},
        timeout=30,
    ).json()["access_token"]
    with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        client.get("/v1/namespaces")
        started = time.monotonic()
        responses = [client.get("/v1/namespaces") for _ in range(20)]
        elapsed = time.monotonic() - started
        unauthenticated = httpx.get(f"{secured.url}/v1/namespaces", timeout=30)
    assert all(r.status_code == 200 for r in responses)
    assert elapsed < 5, elapsed  # each failed delivery retries for ~0.6 s; none of it is on the request path
    record = one(secured, responses[-1])
    assert (record["principal"], record["operation"], record["status"]) == ("svc-etl", "listNamespaces", 200)
    assert unauthenticated.status_code == 401
    assert records(secured, unauthenticated.headers["x-request-id"], wait=0.5) == []


def cli(proxy: ProxyProcess, *args: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, "-m", "irc_proxy", "audit", "query", "--config", str(proxy.config_path), "--json", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_cli_query_filters(tmp_path: Path) -> None:
    ns = f"q_{uuid.uuid4().hex[:8]}"
    proxy = ProxyProcess(tmp_path).start()
    try:
        with httpx.Client(base_url=proxy.url, timeout=30) as client:
            client.post("/v1/namespaces", json={"namespace": [ns]})
            client.post(f"/v1/namespaces/{ns}/tables", json={"name": "t1", "schema": SCHEMA})
            client.get(f"/v1/namespaces/{ns}/tables/t1")
            client.get("/v1/namespaces/other_ns")
    finally:
        proxy.stop()  # records still queued are flushed on shutdown
    everything = cli(proxy)
    assert [r["operation"] for r in everything] == [
        "loadNamespaceMetadata",
        "loadTable",
        "createTable",
        "createNamespace",
    ]
    assert [r["operation"] for r in cli(proxy, "--object", ns)] == ["loadTable", "createTable", "createNamespace"]
    assert len(cli(proxy, "--limit", "2")) == 2
    assert cli(proxy, "--principal", "someone-else") == []
    assert len(cli(proxy, "--principal", "anonymous")) == 4
    middle = everything[2]["time"]
    assert [r["operation"] for r in cli(proxy, "--since", middle)][-1] == "createTable"
    assert [r["operation"] for r in cli(proxy, "--until", middle)] == ["createNamespace"]
    assert cli(proxy, "--since", "2999-01-01T00:00:00+00:00") == []
    assert [r["operation"] for r in cli(proxy, "--operation", "createTable")] == ["createTable"]
    assert [r["operation"] for r in cli(proxy, "--operation", "create*")] == ["createTable", "createNamespace"]
    assert cli(proxy, "--decision", "denied") == []
    older = cli(proxy, "--before-id", str(everything[1]["id"]))
    assert [r["operation"] for r in older] == ["createTable", "createNamespace"]
    text = subprocess.run(
        [sys.executable, "-m", "irc_proxy", "audit", "query", "--config", str(proxy.config_path), "--limit", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "loadNamespaceMetadata" in text.stdout and "404" in text.stdout


def test_the_api_reads_since_and_until_with_an_offset_as_the_same_instant(tmp_path: Path) -> None:
    proxy = ProxyProcess(tmp_path).start()
    try:
        with httpx.Client(base_url=proxy.url, timeout=30) as client:
            for name in ("a", "b", "c"):
                client.post("/v1/namespaces", json={"namespace": [f"off_{name}_{uuid.uuid4().hex[:6]}"]})

            def records(**params: str) -> list[str]:
                listed = client.get("/management/v1/audit", params=params | {"principal": "anonymous"})
                assert listed.status_code == 200, listed.text
                return [r["request_id"] for r in listed.json()["records"] if r["operation"] == "createNamespace"]

            deadline = time.monotonic() + 15
            while len(records()) < 3:
                assert time.monotonic() < deadline, "the audit records were not written"
                time.sleep(0.2)
            middle = client.get("/management/v1/audit", params={"limit": "1000"}).json()["records"]
            moment = [r["time"] for r in middle if r["operation"] == "createNamespace"][1]
            utc = datetime.datetime.fromisoformat(moment.replace("Z", "+00:00"))
            shifted = utc.astimezone(datetime.timezone(datetime.timedelta(hours=2))).isoformat()
            assert records(since=shifted) == records(since=moment) and len(records(since=moment)) == 2
            assert records(until=shifted) == records(until=moment) and len(records(until=moment)) == 1
    finally:
        proxy.stop()


def test_the_api_filters_by_operation_and_decision_and_pages_by_id(tmp_path: Path) -> None:
    proxy = ProxyProcess(tmp_path).start()
    try:
        with httpx.Client(base_url=proxy.url, timeout=30) as client:
            for _ in range(5):
                client.get(f"/v1/namespaces/missing_{uuid.uuid4().hex[:6]}")

            def records(**params: str) -> list[dict[str, Any]]:
                listed = client.get("/management/v1/audit", params=params)
                assert listed.status_code == 200, listed.text
                return list(listed.json()["records"])

            deadline = time.monotonic() + 15
            while len(records(operation="loadNamespaceMetadata")) < 5:
                assert time.monotonic() < deadline, "the audit records were not written"
                time.sleep(0.2)
            loads = records(operation="loadNamespaceMetadata")
            assert {r["operation"] for r in loads} == {"loadNamespaceMetadata"} and len(loads) == 5
            assert records(operation="loadNamespaceMetadata", decision="denied") == []
            first = records(operation="loadNamespaceMetadata", limit="2")
            rest = records(operation="loadNamespaceMetadata", **{"before-id": str(first[-1]["id"])})
            assert [r["id"] for r in first + rest] == [r["id"] for r in loads]
            for bad in ({"decision": "maybe"}, {"before-id": "x"}, {"before-id": "\u00b2"}):
                assert client.get("/management/v1/audit", params=bad).status_code == 400
    finally:
        proxy.stop()
