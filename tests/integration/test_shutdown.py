"""Graceful shutdown: SIGTERM stops accepting connections but lets in-flight requests finish."""

from __future__ import annotations

import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.support.aws import client as aws_client
from tests.support.aws import glue_catalog_config, moto_server
from tests.support.server import ProxyProcess


class SlowRelay:
    """A TCP relay that holds each client's bytes for ``delay`` seconds before passing them on."""

    def __init__(self, target: tuple[str, int], delay: float) -> None:
        self.target, self.delay = target, delay
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._pipe, args=(client, upstream, self.delay), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, 0.0), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket, delay: float) -> None:
        try:
            while data := source.recv(65536):
                time.sleep(delay)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            source.close()
            sink.close()

    def close(self) -> None:
        self._server.close()


def test_sigterm_drains_in_flight_requests(tmp_path: Path) -> None:
    with moto_server() as endpoint:
        aws_client("glue", endpoint).create_database(DatabaseInput={"Name": "slow"})
        host, port = endpoint.removeprefix("http://").split(":")
        relay = SlowRelay((host, int(port)), delay=2.0)
        slow_endpoint = f"http://127.0.0.1:{relay.port}"
        config = glue_catalog_config("glue", slow_endpoint, "s3://wh/glue")
        config += "[server]\ngraceful_timeout_seconds = 20\n"
        server = ProxyProcess(tmp_path, config).start()
        try:
            with ThreadPoolExecutor(2) as pool:
                started = time.monotonic()
                in_flight = pool.submit(httpx.get, f"{server.url}/v1/glue/namespaces/slow", timeout=30)
                time.sleep(0.7)  # the request is now waiting on the slow Glue endpoint
                assert not in_flight.done()
                assert server._process is not None
                server._process.send_signal(signal.SIGTERM)
                response = in_flight.result()
                assert response.status_code == 200, response.text
                assert response.json()["namespace"] == ["slow"]
                assert time.monotonic() - started >= 2.0
            assert server._process.wait(timeout=30) == 0
            assert "Traceback" not in server.log()
        finally:
            server.stop()
            relay.close()
