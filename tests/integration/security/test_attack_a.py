"""Hostile review A: a reader, a writer, a web page and an anonymous client against the served proxy's hardened
scan planning, Idempotency-Key outcomes and cross-site guard (oauth2, narrow grants, local backend).

Each test is one attack that worked on the code before (or a limit it must keep); it states what must hold.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.integration.security.test_plan_bounds import write_table
from tests.support.console import root_config
from tests.support.rest import make_principal, ns_path, token_of
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-attack-a"
FILES = 2000
RESPONSE_BYTES = 64 << 10


@dataclass(frozen=True)
class Setup:
    server: ProxyProcess
    root: httpx.Client
    reader: httpx.Client
    """Holds ``table.read`` on :attr:`namespace` only."""
    reader_name: str
    namespace: str
    big: str
    """A table of FILES data files: its plans leave plan tasks to fetch."""

    def table(self, name: str) -> str:
        return f"/v1/local/namespaces/{ns_path(self.namespace)}/tables/{name}"

    def stored(self, sql: str, *args: Any) -> int:
        with sqlite3.connect(self.server.workdir / "data" / "state.db") as conn:
            return int(conn.execute(sql, args).fetchone()[0] or 0)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    workdir = tmp_path_factory.mktemp("attack-a")
    warehouse = workdir / "warehouse"
    warehouse.mkdir()
    extra = f"""
[server.scan_planning]
max_response_bytes = {RESPONSE_BYTES}
[catalogs.local]
kind = "local"
warehouse = "{warehouse.as_uri()}"
"""
    server = ProxyProcess(workdir, root_config(ROOT_SECRET, extra)).start()
    with ExitStack() as stack:
        stack.callback(server.stop)
        anonymous = stack.enter_context(httpx.Client(base_url=server.url, timeout=120))
        root_token = token_of(anonymous, "root", ROOT_SECRET)
        root = stack.enter_context(
            httpx.Client(base_url=server.url, timeout=120, headers={"Authorization": f"Bearer {root_token}"})
        )
        namespace = f"att_{uuid.uuid4().hex[:8]}"
        assert root.post("/v1/local/namespaces", json={"namespace": [namespace]}).status_code == 200
        write_table(root, namespace, "big", FILES)
        reader_name = f"reader-{uuid.uuid4().hex[:8]}"
        client_id, secret = make_principal(root, reader_name, {"privilege": "table.read", "namespace": [namespace]})
        reader_token = token_of(anonymous, client_id, secret)
        reader = stack.enter_context(
            httpx.Client(base_url=server.url, timeout=120, headers={"Authorization": f"Bearer {reader_token}"})
        )
        yield Setup(server, root, reader, reader_name, namespace, "big")


def keyed() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


# Idempotency-Key: a reader's planning answers must not be kept ----------------------------------------------
def test_a_readers_keyed_plan_answers_do_not_fill_the_state_database(setup: Setup) -> None:
    """planTableScan and fetchScanTasks take an Idempotency-Key (the spec lists it); they change nothing, so
    keeping each answer (up to max_response_bytes) for the key's lifetime only let a reader store megabytes
    per request in the state database. 20 keyed plans and task fetches keep (next to) nothing."""
    answered = 0
    for _ in range(10):
        plan = setup.reader.post(f"{setup.table(setup.big)}/plan", json={}, headers=keyed())
        assert plan.status_code == 200, plan.text[:300]
        answered += len(plan.content)
        task = plan.json()["plan-tasks"][0]
        fetched = setup.reader.post(f"{setup.table(setup.big)}/tasks", json={"plan-task": task}, headers=keyed())
        assert fetched.status_code == 200, fetched.text[:300]
        answered += len(fetched.content)
    assert answered > 10 * RESPONSE_BYTES  # the answers themselves are large
    kept = setup.stored("SELECT sum(length(body)) FROM idempotency_record WHERE principal = ?", setup.reader_name)
    assert kept < 16 << 10, f"{kept} bytes of answers kept for one reader"
