"""Requesting maintenance runs through the management API and waiting for their outcome, as the maintenance tests
and attacks do (``/management/v1/catalogs/{catalog}/maintenance/runs``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

import httpx

from irc_proxy.app import build_catalogs, open_state
from irc_proxy.handling.maintenance.job import Job, Limits
from irc_proxy.handling.maintenance.runners import RUNNERS
from irc_proxy.handling.naming import TableIdent
from irc_proxy.settings import load_settings
from irc_proxy.threads import ThreadRunner
from tests.support.rest import MGMT

FINISHED_POLL_SECONDS = 0.05
T = TypeVar("T")


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


def with_job(
    config_path: Path,
    catalog: str,
    ns: str,
    name: str,
    scenario: Callable[[Job], Awaitable[T]],
    clock: Callable[[], float] | None = None,
) -> T:
    """Run ``scenario`` on a job for table ``ns.name`` in this process, with the catalogs a served proxy's config
    builds (the same backends, storage and state database) and ``clock`` as the job's now: the only way to judge
    the age of objects in a store whose modification times cannot be set (moto's S3), or to act between a job's
    steps. The catalogs are closed in the loop their clients were made in."""
    settings = load_settings(config_path, environ={})
    state = open_state(settings)
    threads = ThreadRunner(4)
    maintenance = settings.server.maintenance
    limits = Limits(
        maintenance.max_files_per_run,
        maintenance.orphan_min_age,
        maintenance.max_rewrite_bytes,
        maintenance.rewrite_buffer_mb * 1024**2,
        clock or time.time,
    )

    async def scenario_here() -> T:
        catalogs = build_catalogs(settings, threads, state)
        try:
            return await scenario(Job(catalogs.get(catalog), TableIdent((ns,), name), False, limits, threads))
        finally:
            await catalogs.close()

    try:
        return asyncio.run(scenario_here())
    finally:
        state.dispose()


def run_in_process(
    config_path: Path, catalog: str, ns: str, name: str, jobs: list[str], clock: Callable[[], float] | None = None
) -> dict[str, dict[str, Any]]:
    """Run ``jobs`` on table ``ns.name`` in this process (``with_job``); each job's result."""

    async def each(job: Job) -> dict[str, dict[str, Any]]:
        return {name: await RUNNERS[name](job) for name in jobs}

    return with_job(config_path, catalog, ns, name, each, clock)
