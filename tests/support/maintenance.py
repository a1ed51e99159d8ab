"""Requesting maintenance runs through the management API and waiting for their outcome, as the maintenance tests
and attacks do (``/management/v1/catalogs/{catalog}/maintenance/runs``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import httpx

from tests.support.rest import MGMT

FINISHED_POLL_SECONDS = 0.05


def runs_url(catalog: str = "local") -> str:
    return f"{MGMT}/catalogs/{catalog}/maintenance/runs"


def request_run(
    http: httpx.Client, ns: str, name: str, jobs: list[str], dry_run: bool = False, catalog: str = "local"
) -> str:
    """Queue a run of table ``ns.name`` (202, ``queued``) and return its id."""
    body = {"table": {"namespace": [ns], "name": name}, "jobs": jobs, "dry-run": dry_run}
    response = http.post(runs_url(catalog), json=body)
    assert response.status_code == 202, response.text
    assert response.json()["status"] == "queued"
    return str(response.json()["id"])


def finished_run(http: httpx.Client, run_id: str, catalog: str = "local", timeout: float = 60) -> dict[str, Any]:
    """The run as GET answers it once it is neither queued nor running; AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found: dict[str, Any] = http.get(f"{runs_url(catalog)}/{run_id}").json()
        if found["status"] not in ("queued", "running"):
            return found
        time.sleep(FINISHED_POLL_SECONDS)
    raise AssertionError(f"run {run_id} did not finish")


def path_of(uri: str) -> Path:
    """The local path of a ``file:`` URI."""
    return Path(unquote(urlparse(uri).path))
