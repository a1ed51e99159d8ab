"""``server.workers > 1``: hypercorn worker processes share the socket and serve the same catalogs."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.rest import create_namespace, create_table, table_url
from tests.support.server import ProxyProcess


def test_two_workers_serve_the_catalog_and_stop_cleanly(tmp_path: Path) -> None:
    proxy = ProxyProcess(tmp_path, "[server]\nworkers = 2\n").start(timeout=60)
    try:
        with httpx.Client(base_url=proxy.url, timeout=30) as client:
            create_namespace(client, "w")
            create_table(client, ("w",), "t")
            for _ in range(10):  # new connections land on either worker
                with httpx.Client(base_url=proxy.url, timeout=30) as fresh:
                    response = fresh.get(table_url(("w",), "t"))
                    assert response.status_code == 200
                    assert response.json()["metadata"]["format-version"] == 2
    finally:
        proxy.stop()
    assert "serving with 2 worker processes" in proxy.log()
