"""``/readyz`` (state database and every backend reachable) and ``/healthz`` outside auth; a database
that goes away answers 503 ServiceUnavailable and comes back without restarting the proxy."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from irc_proxy.handling.security.authn import hash_secret
from tests.support.aws import glue_catalog_config, moto_server
from tests.support.postgres import scratch_database
from tests.support.rest import assert_error
from tests.support.server import ProxyProcess


class Relay:
    """A TCP relay to ``target`` that can be switched off: then live connections are cut and new ones
    are closed at once (the database looks gone), until it is switched on again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.up = True
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._live: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._live.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                self._close(sock)

    def _close(self, sock: socket.socket) -> None:
        with self._lock:
            self._live.discard(sock)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    def cut(self) -> None:
        self.up = False
        with self._lock:
            live = list(self._live)
        for sock in live:
            self._close(sock)

    def close(self) -> None:
        self.cut()
        self._server.close()


def test_readyz_reports_every_dependency(client: httpx.Client) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"state": "ok", "catalog:local": "ok"}}
    assert client.get("/healthz").json() == {"status": "ok"}


def test_probes_and_metrics_need_no_token(tmp_path_factory: pytest.TempPathFactory) -> None:
    clients = f'[[auth.clients]]\nid = "c"\nsecret_hash = "{hash_secret("s")}"\nprincipal = "p"\n'
    server = ProxyProcess(tmp_path_factory.mktemp("secured"), '[auth]\nmode = "oauth2"\n' + clients).start()
    try:
        assert httpx.get(f"{server.url}/v1/config", timeout=10).status_code == 401
        for path in ("/healthz", "/readyz", "/metrics"):
            assert httpx.get(f"{server.url}{path}", timeout=10).status_code == 200, path
    finally:
        server.stop()


def test_glue_backend_is_probed(tmp_path_factory: pytest.TempPathFactory) -> None:
    with moto_server() as endpoint:
        dead = f"http://127.0.0.1:{_closed_port()}"
        config = glue_catalog_config("glue", endpoint, "s3://wh/glue") + glue_catalog_config(
            "down", dead, "s3://wh/down", timeout_seconds="1"
        )
        config += "[server]\nreadiness_timeout_seconds = 3\n"
        server = ProxyProcess(tmp_path_factory.mktemp("glue-ready"), config).start()
        try:
            started = time.monotonic()
            response = httpx.get(f"{server.url}/readyz", timeout=30)
            assert time.monotonic() - started < 10
            assert response.status_code == 503
            checks = response.json()["checks"]
            assert checks["state"] == "ok" and checks["catalog:glue"] == "ok"
            assert checks["catalog:down"] != "ok"
            assert dead not in response.text  # no endpoint (or credential) leaks into the report
        finally:
            server.stop()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def relayed_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProxyProcess, Relay]]:
    with scratch_database() as url:
        host_port, database = url.split("@", 1)[1].split("/", 1)
        host, port = host_port.rsplit(":", 1)
        relay = Relay((host, int(port)))
        relayed = url.replace(f"@{host_port}/", f"@127.0.0.1:{relay.port}/")
        config = f'[state]\ndatabase_url = "{relayed}"\n[catalogs.local]\nkind = "local"\ndatabase_url = "{relayed}"\n'
        server = ProxyProcess(tmp_path_factory.mktemp("relayed-pg"), config).start()
        try:
            yield server, relay
        finally:
            server.stop()
            relay.close()
        assert database


@pytest.mark.postgres
def test_database_down_is_503_and_recovers_without_restart(relayed_postgres: tuple[ProxyProcess, Relay]) -> None:
    server, relay = relayed_postgres
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.post("/v1/local/namespaces", json={"namespace": ["before"]}).status_code == 200
        assert http.get("/readyz").status_code == 200

        relay.cut()
        ready = http.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
        assert ready.json()["checks"]["state"] != "ok" and ready.json()["checks"]["catalog:local"] != "ok"
        assert str(relay.port) not in ready.text  # no database URL in the report
        assert_error(http.get("/v1/local/namespaces"), 503, "ServiceUnavailableException")
        assert_error(http.get("/v1/local/namespaces/before"), 503, "ServiceUnavailableException")
        key = str(uuid.uuid4())
        body = {"namespace": ["during"]}
        assert_error(
            http.post("/v1/local/namespaces", json=body, headers={"Idempotency-Key": key}),
            503,
            "ServiceUnavailableException",
        )
        assert http.get("/healthz").status_code == 200  # alive, just not ready

        relay.up = True
        assert http.get("/readyz").status_code == 200
        assert http.get("/v1/local/namespaces").status_code == 200
        # The 503 was not stored: the same key now runs the request.
        retried = http.post("/v1/local/namespaces", json=body, headers={"Idempotency-Key": key})
        assert retried.status_code == 200 and "idempotent-replayed" not in retried.headers
        assert http.get("/v1/local/namespaces/during").status_code == 200
