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
from tests.support.rest import assert_error, commit, make_principal, ns_path, token_of
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


# The plan store: one reader's open plans ---------------------------------------------------------------------
def test_a_readers_open_plans_keep_a_bounded_total_in_the_state_database(setup: Setup) -> None:
    """Every plan with tasks left keeps its request (the filter, up to max_filter_bytes, and the names) for
    ``plan_ttl``; nothing bounded how many one principal holds, so a reader stored what it sent (3 MB a second)
    for an hour. Past 16 MiB the principal's oldest plans are cancelled: their tasks are 404, the newest work."""
    values = [f"{i:04d}" + "v" * 3000 for i in range(80)]  # 240 KB of filter, within every limit
    body = {"filter": {"type": "not-in", "term": "data", "values": values}}
    tasks = []
    for _ in range(80):  # 19 MB of requests
        plan = setup.reader.post(f"{setup.table(setup.big)}/plan", json=body)
        assert plan.status_code == 200, plan.text[:300]
        assert plan.json().get("plan-tasks"), "a plan with tasks left keeps its request"
        tasks.append(plan.json()["plan-tasks"][0])
    kept = setup.stored("SELECT sum(length(request)) FROM scan_plan WHERE principal = ?", setup.reader_name)
    assert kept <= 17 << 20, f"{kept} bytes of requests kept for one reader's plans (was 19 MB)"
    url = f"{setup.table(setup.big)}/tasks"
    assert_error(setup.reader.post(url, json={"plan-task": tasks[0]}), 404, "NoSuchPlanTaskException")
    assert setup.reader.post(url, json={"plan-task": tasks[-1]}).status_code == 200
    other = setup.root.post(f"{setup.table(setup.big)}/plan", json=body)  # another principal: its own bound
    assert other.status_code == 200 and other.json().get("plan-tasks")
    fetched = setup.root.post(url, json={"plan-task": other.json()["plan-tasks"][0]})
    assert fetched.status_code == 200, fetched.text[:300]


# Idempotency-Key: a writer's no-op commits ----------------------------------------------------------------------
def test_a_writers_keyed_no_op_commits_do_not_fill_the_state_database(setup: Setup) -> None:
    own = f"own_{uuid.uuid4().hex[:8]}"
    assert setup.root.post("/v1/local/namespaces", json={"namespace": [own]}).status_code == 200
    name = f"writer-{uuid.uuid4().hex[:8]}"
    client_id, secret = make_principal(setup.root, name, {"privilege": "all", "namespace": [own]})
    with httpx.Client(base_url=setup.server.url, timeout=120) as anonymous:
        token = token_of(anonymous, client_id, secret)
    with httpx.Client(base_url=setup.server.url, timeout=120, headers={"Authorization": f"Bearer {token}"}) as writer:
        properties = {f"p{i:04d}": "x" * 1000 for i in range(1000)}  # 1 MB of metadata
        created = writer.post(
            f"/v1/local/namespaces/{own}/tables",
            json={"name": "t", "schema": {"type": "struct", "fields": []}, "properties": properties},
        )
        assert created.status_code == 200, created.text[:300]
        url = f"/v1/local/namespaces/{own}/tables/t"
        first, answers = keyed(), []
        for headers in [first, *(keyed() for _ in range(9))]:
            noop = writer.post(url, json={"requirements": [], "updates": []}, headers=headers)
            assert noop.status_code == 200, noop.text[:300]
            answers.append(noop.json())
        kept = setup.stored("SELECT sum(length(body)) FROM idempotency_record WHERE principal = ?", name)
        assert kept < 4 << 20, f"{kept} bytes of answers kept for 10 no-op commits"
        # A retry still gets the same answer, whole, for the no-op and for a commit that changed the table.
        replayed = writer.post(url, json={"requirements": [], "updates": []}, headers=first)
        assert replayed.status_code == 200 and replayed.headers["idempotent-replayed"] == "true"
        assert replayed.json() == answers[0]
        log_length = len(writer.get(url).json()["metadata"]["metadata-log"])
        change = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"q": "1"}}]}
        changing = keyed()
        changed = writer.post(url, json=change, headers=changing)
        assert changed.status_code == 200, changed.text[:300]
        again = writer.post(url, json=change, headers=changing)
        assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
        assert again.json() == changed.json() and again.json()["metadata"]["properties"]["q"] == "1"
        assert int(again.headers["content-length"]) == len(again.content)
        assert len(writer.get(url).json()["metadata"]["metadata-log"]) == log_length + 1  # applied once


# Occupancy: a table's earlier location ------------------------------------------------------------------------
def test_a_moved_tables_earlier_location_cannot_be_taken_by_another_writer(setup: Setup) -> None:
    """The victim's table moves (set-location, as ALTER TABLE SET LOCATION does); its snapshots still read the
    files under the old location. A writer of another namespace creating a table there would get credentials
    for those files and could purge them (drop + expunge). The create must be refused like any overlap."""
    moved = f"moved_{uuid.uuid4().hex[:6]}"
    old_location = write_table(setup.root, setup.namespace, moved, 3)
    commit(setup.root, setup.table(moved), {"action": "set-location", "location": f"{old_location}-elsewhere"})
    own = f"own_{uuid.uuid4().hex[:8]}"
    assert setup.root.post("/v1/local/namespaces", json={"namespace": [own]}).status_code == 200
    name = f"squatter-{uuid.uuid4().hex[:8]}"
    client_id, secret = make_principal(setup.root, name, {"privilege": "all", "namespace": [own]})
    with httpx.Client(base_url=setup.server.url, timeout=120) as anonymous:
        token = token_of(anonymous, client_id, secret)
    with httpx.Client(base_url=setup.server.url, timeout=120, headers={"Authorization": f"Bearer {token}"}) as writer:
        taken = writer.post(
            f"/v1/local/namespaces/{own}/tables",
            json={"name": "t", "schema": {"type": "struct", "fields": []}, "location": old_location},
        )
    assert_error(taken, 400, "BadRequestException", "overlaps")


def test_a_moved_tables_earlier_location_stays_held_through_rename_and_the_trash(setup: Setup) -> None:
    """The earlier location goes with the table: renamed, kept in the trash, restored, it stays refused to
    another writer; expunged (the table gone for good), it is free again."""
    moved = f"moved_{uuid.uuid4().hex[:6]}"
    old_location = write_table(setup.root, setup.namespace, moved, 3)
    commit(setup.root, setup.table(moved), {"action": "set-location", "location": f"{old_location}-elsewhere"})
    own = f"own_{uuid.uuid4().hex[:8]}"
    assert setup.root.post("/v1/local/namespaces", json={"namespace": [own]}).status_code == 200
    name = f"squatter-{uuid.uuid4().hex[:8]}"
    client_id, secret = make_principal(setup.root, name, {"privilege": "all", "namespace": [own]})
    with httpx.Client(base_url=setup.server.url, timeout=120) as anonymous:
        token = token_of(anonymous, client_id, secret)
    body = {"name": "t", "schema": {"type": "struct", "fields": []}, "location": old_location}
    trash = "/management/v1/catalogs/local/trash"
    with httpx.Client(base_url=setup.server.url, timeout=120, headers={"Authorization": f"Bearer {token}"}) as writer:

        def take() -> httpx.Response:
            return writer.post(f"/v1/local/namespaces/{own}/tables", json=body)

        renamed = f"{moved}_renamed"
        rename = {
            "source": {"namespace": [setup.namespace], "name": moved},
            "destination": {"namespace": [setup.namespace], "name": renamed},
        }
        assert setup.root.post("/v1/local/tables/rename", json=rename).status_code == 204
        assert_error(take(), 400, "BadRequestException", "overlaps")
        assert setup.root.delete(setup.table(renamed)).status_code == 204  # kept in the trash
        assert_error(take(), 400, "BadRequestException", "overlaps")
        entries = setup.root.get(trash).json()["entries"]
        entry = next(e for e in entries if e["identifier"]["name"] == renamed)
        assert setup.root.post(f"{trash}/{entry['id']}/restore", json={}).status_code == 200
        assert_error(take(), 400, "BadRequestException", "overlaps")
        assert setup.root.delete(setup.table(renamed)).status_code == 204
        entries = setup.root.get(trash).json()["entries"]
        entry = next(e for e in entries if e["identifier"]["name"] == renamed)
        assert setup.root.delete(f"{trash}/{entry['id']}").status_code == 204  # expunged: gone for good
        taken = take()
        assert taken.status_code == 200, taken.text[:300]
