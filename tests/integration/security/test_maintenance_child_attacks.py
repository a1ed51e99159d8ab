"""Hostile review of the ``local`` executor's child process (``handling/maintenance/children.py``,
``maintenance_local.py``) on one served ``irc-proxy serve`` process whose runs go to its child, as a writer of its
own table would attack it:

* a table whose ``irc-proxy.maintenance.*`` properties are a body's worth of invalid overrides: each becomes a
  policy warning in every job's result, which crosses the child's pipe (a 16 MiB line limit), is stored in the
  run's row, audited once per job and answered by GET: bounded, not the properties' size times the jobs;
* a run that blows the child's memory: the kernel's OOM killer takes the child, not the server (its
  ``oom_score_adj`` is raised).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.test_maintenance_isolation import children, wait_for
from tests.support.maintenance import finished_run, request_run
from tests.support.server import ProxyProcess, Serve

CONFIG = """
[server.maintenance]
poll_seconds = 0.1
[catalogs.local]
kind = "local"
"""
JOBS = ["expire-snapshots", "remove-orphan-files", "rewrite-manifests", "rewrite-data-files"]
SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
ICEBERG_PROPERTIES_ANY_CLIENT_SETS = [
    "history.expire.max-snapshot-age-ms",
    "history.expire.min-snapshots-to-keep",
    "history.expire.max-ref-age-ms",
    "write.target-file-size-bytes",
    "commit.manifest.target-size-bytes",
]
WARNING_BOMB_VALUE_CHARS = 3_000_000
RUN_ANSWER_BOUND_BYTES = 256 * 1024


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "maintenance-child-attacks")


@pytest.fixture
def http(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=60) as client:
        yield client


def create(http: httpx.Client, ns: str, name: str, properties: dict[str, str]) -> None:
    http.post("/v1/local/namespaces", json={"namespace": [ns]})
    created = http.post(
        f"/v1/local/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA, "properties": properties}
    )
    assert created.status_code == 200, created.text[:500]


def audited_chars(proxy: ProxyProcess, run_id: str) -> int | None:
    """How many characters the audit records of run ``run_id`` give their reasons (None: none written yet)."""
    with sqlite3.connect(Path(proxy.workdir) / "data" / "state.db") as db:
        query = "SELECT sum(length(reason)) FROM audit_record WHERE request_id = ?"
        found: int | None = db.execute(query, (f"maintenance-{run_id}",)).fetchone()[0]
    return found


def test_a_body_of_invalid_policy_overrides_gives_bounded_run_results_and_audit(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    bomb = {name: "9" * WARNING_BOMB_VALUE_CHARS for name in ICEBERG_PROPERTIES_ANY_CLIENT_SETS}
    create(http, ns_name, "bomb", bomb)  # ~15 MB of properties, within the request bound
    run_id = request_run(http, ns_name, "bomb", JOBS, dry_run=True)
    result = finished_run(http, run_id)
    answer = http.get(f"/management/v1/catalogs/local/maintenance/runs/{run_id}")
    assert result["status"] != "failed", str(result)[:2000]
    assert len(answer.content) < RUN_ANSWER_BOUND_BYTES, len(answer.content)
    warnings = result["results"]["expire-snapshots"]["policy-warnings"]
    assert len(warnings) == len(ICEBERG_PROPERTIES_ANY_CLIENT_SETS)  # each still named, its value cut short
    audited = wait_for(lambda: audited_chars(proxy, run_id), 30, "the run's audit records")  # written in batches
    assert 0 < audited < RUN_ANSWER_BOUND_BYTES, audited


def test_the_oom_killer_takes_the_child_before_the_server(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    create(http, ns_name, "t", {})
    finished_run(http, request_run(http, ns_name, "t", ["rewrite-manifests"], dry_run=True))
    (child,) = wait_for(lambda: children(proxy.pid), 30, "the child")
    own = int(Path(f"/proc/{proxy.pid}/oom_score_adj").read_text())
    assert int(Path(f"/proc/{child}/oom_score_adj").read_text()) > own
    assert os.getpgid(child) != os.getpgid(proxy.pid)
