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


def test_a_commit_through_one_worker_is_seen_by_the_other_workers_warm_cache(tmp_path: Path) -> None:
    """Worker processes on one SQLite catalog file each cache pointers; SQLite's ``data_version`` tells each
    that another committed, so a load right after a commit shows it on whichever worker answers."""
    proxy = ProxyProcess(tmp_path, "[server]\nworkers = 2\n").start(timeout=60)
    try:
        with httpx.Client(base_url=proxy.url, timeout=30) as client:
            create_namespace(client, "w")
            create_table(client, ("w",), "t")
            url = table_url(("w",), "t")
            for i in range(12):
                warm = [httpx.Client(base_url=proxy.url, timeout=30) for _ in range(4)]
                for fresh in warm:  # new connections land on either worker: both caches warm
                    assert fresh.get(url).status_code == 200
                body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"i": str(i)}}]}
                committed = client.post(url, json=body)
                assert committed.status_code == 200, committed.text
                for fresh in warm:
                    assert fresh.get(url).json()["metadata-location"] == committed.json()["metadata-location"]
                    fresh.close()
    finally:
        proxy.stop()
