"""Server-side scan planning (planTableScan, fetchPlanningResult, cancelPlanning, fetchScanTasks) end to end.

Answers are checked against the spec's schemas (``openapi/rest-catalog-open-api.yaml``) and against
pyiceberg's own client-side plan of the same table. Tables are written by pyiceberg through the proxy:
over a socket for the replicas (real servers on one PostgreSQL), through the in-process app otherwise
(``InProcessCatalog``: pyiceberg's RestCatalog whose HTTP goes to the app).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import read_manifest_list, write_manifest_list
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType
from requests.structures import CaseInsensitiveDict

from irc_proxy.handling.security.authn import hash_secret
from tests.support.fake_sts import FakeSts
from tests.support.in_process import InProcessProxy, ServeInProcess, in_process
from tests.support.plan_checks import conforms
from tests.support.postgres import scratch_database
from tests.support.rest import MGMT, assert_error, make_principal, ns_path, token_of
from tests.support.rest import SCHEMA as SCHEMA_JSON
from tests.support.server import ProxyProcess, Serve
from tests.support.vending import CREDENTIAL_KEYS, DELEGATION, prepare_vending, vending_catalog_config

ROOT_SECRET = "scan-planning-root-secret"
NS = "plans"
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "data", StringType(), required=False),
)
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("data", pa.string())])
BY_DATA = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="data"))
OPERATIONS = ("planTableScan", "fetchPlanningResult", "fetchScanTasks", "cancelPlanning")


# The spec's schemas: tests/support/plan_checks.conforms ------------------------------------------------
PLAN_RESULT = {
    "completed": "CompletedPlanningWithIDResult",
    "submitted": "AsyncPlanningResult",
    "cancelled": "EmptyPlanningResult",
}
FETCH_RESULT = {
    "completed": "CompletedPlanningResult",
    "submitted": "EmptyPlanningResult",
    "cancelled": "EmptyPlanningResult",
}
KEYS = {
    "completed": {"status", "plan-id", "plan-tasks", "file-scan-tasks", "delete-files", "storage-credentials"},
    "submitted": {"status", "plan-id"},
    "cancelled": {"status"},
}


def _result(body: dict[str, Any], schemas: dict[str, str]) -> dict[str, Any]:
    status = body.get("status")
    if status == "failed":  # FailedPlanningResult is allOf IcebergErrorResponse (additionalProperties: false)
        assert set(body) == {"status", "error"}, body  # and a status: checked by parts
        conforms("IcebergErrorResponse", {"error": body["error"]})
        return body
    assert status in schemas, body
    conforms(schemas[status], body)
    assert set(body) <= KEYS[status], body
    return body


def plan_result(response: httpx.Response) -> dict[str, Any]:
    """A 200 planTableScan answer, checked against PlanTableScanResult."""
    assert response.status_code == 200, response.text
    return _result(response.json(), PLAN_RESULT)


def fetch_result(response: httpx.Response) -> dict[str, Any]:
    """A 200 fetchPlanningResult answer, checked against FetchPlanningResult."""
    assert response.status_code == 200, response.text
    return _result(response.json(), FETCH_RESULT)


def tasks_result(response: httpx.Response) -> dict[str, Any]:
    """A 200 fetchScanTasks answer, checked against FetchScanTasksResult."""
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    conforms("FetchScanTasksResult", body)
    assert set(body) <= {"file-scan-tasks", "delete-files", "plan-tasks"}, body
    return body


def error(response: httpx.Response, status: int, type_name: str, message: str | None = None) -> None:
    """The spec's error model (IcebergErrorResponse) with ``status`` and ``type``."""
    assert_error(response, status, type_name, message)
    conforms("IcebergErrorResponse", response.json())


# pyiceberg through the in-process app ----------------------------------------------------------------------
class _ToApp(requests.adapters.BaseAdapter):
    """A requests transport that hands each request to the in-process app."""

    def __init__(self, proxy: InProcessProxy) -> None:
        super().__init__()
        self._client = proxy.client(timeout=60)

    def send(self, request: requests.PreparedRequest, **_: Any) -> requests.Response:  # type: ignore[override]
        body = request.body.encode() if isinstance(request.body, str) else request.body
        reply = self._client.request(request.method or "GET", request.url or "", headers=request.headers, content=body)
        response = requests.Response()
        response.status_code, response.url, response.request = reply.status_code, request.url or "", request
        response.headers = CaseInsensitiveDict(reply.headers)
        response._content = reply.content
        response.encoding = "utf-8"
        return response

    def close(self) -> None:
        self._client.close()


def in_process_catalog(proxy: InProcessProxy, warehouse: str, **properties: str) -> RestCatalog:
    """pyiceberg's RestCatalog for ``proxy`` (pass ``token=``: a credential would be exchanged before the mount)."""

    class InProcessCatalog(RestCatalog):
        def _create_session(self) -> requests.Session:
            session = super()._create_session()
            session.mount(proxy.url, _ToApp(proxy))
            return session

    return InProcessCatalog(f"in-process-{warehouse}", uri=proxy.url, warehouse=warehouse, **properties)


def rows(ids: range | list[int], partitions: int = 1) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "data": f"p{i % partitions}"} for i in ids], schema=ARROW)


def client_side_paths(table: Table, **scan: Any) -> set[str]:
    """The data files pyiceberg's own (client-side) planning reads."""
    return {task.file.file_path for task in table.scan(**scan).plan_files()}


def scan_tasks(*answers: dict[str, Any]) -> list[dict[str, Any]]:
    """The file scan tasks of ``answers`` (ScanTasks), in order."""
    return [task for answer in answers for task in answer.get("file-scan-tasks", [])]


def paths(*answers: dict[str, Any]) -> list[str]:
    """The data file paths of the file scan tasks in ``answers``, in order, duplicates kept."""
    return [task["data-file"]["file-path"] for task in scan_tasks(*answers)]


def table_path(namespace: str, name: str, catalog: str = "local") -> str:
    return f"/v1/{catalog}/namespaces/{ns_path(namespace)}/tables/{name}"


def fetch_all(http: httpx.Client, url: str, plan_tasks: list[str]) -> list[dict[str, Any]]:
    return [tasks_result(http.post(f"{url}/tasks", json={"plan-task": task})) for task in plan_tasks]


def poll(http: httpx.Client, url: str, plan_id: str, timeout: float = 20.0) -> dict[str, Any]:
    """fetchPlanningResult until the plan is no longer ``submitted``."""
    deadline = time.monotonic() + timeout
    while True:
        body = fetch_result(http.get(f"{url}/plan/{plan_id}"))
        if body["status"] != "submitted" or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


# The in-process proxy most tests use: oauth2 with grants, small plan pages, three catalogs -------------------
@pytest.fixture(scope="module")
def proxy(serve_in_process: ServeInProcess) -> InProcessProxy:
    config = f"""
[auth]
mode = "oauth2"
admins = ["root"]
[[auth.clients]]
id = "root"
secret_hash = "{hash_secret(ROOT_SECRET)}"
principal = "root"
[server.scan_planning]
files_per_task = 10
tasks_per_response = 5
[catalogs.local]
kind = "local"
[catalogs.closed]
kind = "local"
scan_planning = "off"
[catalogs.eager]
kind = "local"
scan_planning = "preferred"
"""
    return serve_in_process(config, "scan-planning")


@pytest.fixture(scope="module")
def root_token(proxy: InProcessProxy) -> str:
    with proxy.client() as plain:
        return token_of(plain, "root", ROOT_SECRET)


@pytest.fixture(scope="module")
def root(proxy: InProcessProxy, root_token: str) -> Iterator[httpx.Client]:
    with proxy.client(headers={"Authorization": f"Bearer {root_token}"}, timeout=60) as http:
        yield http


@pytest.fixture(scope="module")
def catalog(proxy: InProcessProxy, root_token: str) -> RestCatalog:
    catalog = in_process_catalog(proxy, "local", token=root_token)
    catalog.create_namespace((NS,))
    return catalog


@pytest.fixture(scope="module")
def paged(catalog: RestCatalog) -> Table:
    """``plans.paged``: 6 appends of 10 files (one per ``data`` partition) of 3 rows each: 60 files."""
    table = catalog.create_table((NS, "paged"), schema=SCHEMA, partition_spec=BY_DATA)
    for append in range(6):
        table.append(rows(range(append * 30, append * 30 + 30), partitions=10))
    return table


@pytest.fixture(scope="module")
def incremental(catalog: RestCatalog) -> tuple[Table, list[int], list[set[str]]]:
    """``plans.incremental``: append, append, append, overwrite (deletes a row of append 2), append.

    Returns the table, its snapshot ids in order and the data files each snapshot added.
    """
    table = catalog.create_table((NS, "incremental"), schema=SCHEMA)
    added: list[set[str]] = []
    for step in range(5):
        before = client_side_paths(table) if table.current_snapshot() else set()
        if step == 3:
            table.delete(EqualTo("id", 3))
        else:
            table.append(rows([2 * step + 1, 2 * step + 2]))
        added.append(client_side_paths(table) - before)
    snapshots = [s.snapshot_id for s in table.metadata.snapshots]
    operations = [s.summary.operation.value for s in table.metadata.snapshots if s.summary]
    assert operations == ["append", "append", "append", "overwrite", "append"], operations
    return table, snapshots, added


def everything(http: httpx.Client, url: str, body: dict[str, Any]) -> list[str]:
    """A completed plan's data file paths: the inline tasks and those of every plan task."""
    answer = plan_result(http.post(f"{url}/plan", json=body))
    assert answer["status"] == "completed", answer
    return paths(answer) + paths(*fetch_all(http, url, answer.get("plan-tasks", [])))


# 1. Asynchronous plans across replicas -----------------------------------------------------------------------
@dataclass(frozen=True)
class Replicas:
    a: ProxyProcess
    b: ProxyProcess
    c: InProcessProxy
    warehouse: Path


@pytest.fixture(scope="module")
def replicas(serve: Serve, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    """Replicas A and B (processes, every plan asynchronous) and C (in-process, synchronous plans), all on one
    PostgreSQL state database and one local catalog in it."""
    with scratch_database() as url:
        warehouse = tmp_path_factory.mktemp("replicas-warehouse")
        shared = (
            f'[state]\ndatabase_url = "{url}"\n'
            f'[catalogs.local]\nkind = "local"\ndatabase_url = "{url}"\nwarehouse = "{warehouse.as_uri()}"\n'
        )
        asynchronous = "[server.scan_planning]\nsync_budget_seconds = 0\nfiles_per_task = 3\n"
        a, b = serve(asynchronous + shared, "replica-a"), serve(asynchronous + shared, "replica-b")
        synchronous = "[server.scan_planning]\nfiles_per_task = 3\n"
        with in_process(tmp_path_factory.mktemp("replica-c"), synchronous + shared) as c:
            yield Replicas(a, b, c, warehouse)
        a.stop()
        b.stop()


@pytest.mark.postgres
def test_a_plan_submitted_on_one_replica_is_polled_fetched_and_cancelled_on_another(
    replicas: Replicas,
) -> None:
    a, b, c = replicas.a, replicas.b, replicas.c
    catalog = RestCatalog("replica-a", uri=a.url, warehouse="local")
    catalog.create_namespace((NS,))
    table = catalog.create_table((NS, "shared"), schema=SCHEMA)
    for start in range(0, 70, 10):
        table.append(rows(range(start, start + 10)))
    url = table_path(NS, "shared")
    with httpx.Client(base_url=a.url, timeout=60) as on_a, httpx.Client(base_url=b.url, timeout=60) as on_b:
        submitted = plan_result(on_a.post(f"{url}/plan", json={}))
        assert submitted == {"status": "submitted", "plan-id": submitted["plan-id"]}
        plan_id = submitted["plan-id"]
        completed = poll(on_b, url, plan_id)
        assert completed["status"] == "completed" and "file-scan-tasks" not in completed, completed
        assert len(completed["plan-tasks"]) == 3  # 7 files, 3 a task
        pages = fetch_all(on_b, url, completed["plan-tasks"])
        asynchronous = paths(*pages)
        with c.client(timeout=60) as on_c:
            synchronous = everything(on_c, url, {})
        assert len(asynchronous) == len(set(asynchronous)) == 7
        assert sorted(asynchronous) == sorted(synchronous)
        assert set(asynchronous) == client_side_paths(table)

        assert on_b.delete(f"{url}/plan/{plan_id}").status_code == 204
        assert fetch_result(on_a.get(f"{url}/plan/{plan_id}")) == {"status": "cancelled"}
        for task in completed["plan-tasks"]:
            error(on_a.post(f"{url}/tasks", json={"plan-task": task}), 404, "NoSuchPlanTaskException")
            error(on_b.post(f"{url}/tasks", json={"plan-task": task}), 404, "NoSuchPlanTaskException")

        # Cancelled while it is still being planned: it stays cancelled once the planner finishes.
        racing = plan_result(on_a.post(f"{url}/plan", json={}))["plan-id"]
        assert on_b.delete(f"{url}/plan/{racing}").status_code == 204
        time.sleep(0.5)
        assert fetch_result(on_a.get(f"{url}/plan/{racing}")) == {"status": "cancelled"}
        assert fetch_result(on_b.get(f"{url}/plan/{racing}")) == {"status": "cancelled"}

        # A plan that fails while planned in the background is ``failed`` with the spec's error, on every replica.
        register_with(on_a, replicas.warehouse, "elsewhere", "file:///etc/passwd")
        elsewhere = table_path(NS, "elsewhere")
        failing = plan_result(on_a.post(f"{elsewhere}/plan", json={}))
        assert failing["status"] == "submitted"
        failed = poll(on_b, elsewhere, failing["plan-id"])
        assert failed["status"] == "failed" and failed["error"]["code"] == 403, failed
        assert failed["error"]["type"] == "ForbiddenException" and "root:x" not in json.dumps(failed)
        assert fetch_result(on_a.get(f"{elsewhere}/plan/{failing['plan-id']}")) == failed
        error(
            on_b.post(f"{elsewhere}/tasks", json={"plan-task": f"{failing['plan-id']}:0"}),
            404,
            "NoSuchPlanTaskException",
        )


# 2. Plans are bound to the caller ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def principals(proxy: InProcessProxy, root: httpx.Client, catalog: RestCatalog) -> Iterator[dict[str, httpx.Client]]:
    """``x`` and ``y`` may read every table of ``plans``; ``z`` may only use the namespace."""
    catalog.create_table((NS, "other"), schema=SCHEMA).append(rows(range(3)))
    clients = {}
    for name, privilege in (("x", "table.read"), ("y", "table.read"), ("z", "namespace.use")):
        client_id, secret = make_principal(root, f"planner-{name}", {"privilege": privilege, "namespace": [NS]})
        with proxy.client() as plain:
            token = token_of(plain, client_id, secret)
        clients[name] = proxy.client(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    yield clients
    for http in clients.values():
        http.close()


def test_a_plan_belongs_to_its_principal_and_its_table(
    proxy: InProcessProxy, principals: dict[str, httpx.Client], paged: Table
) -> None:
    x, y, z = principals["x"], principals["y"], principals["z"]
    url, other = table_path(NS, "paged"), table_path(NS, "other")
    answer = plan_result(x.post(f"{url}/plan", json={}))
    plan_id, task = answer["plan-id"], answer["plan-tasks"][0]

    error(y.get(f"{url}/plan/{plan_id}"), 404, "NoSuchPlanIdException")
    error(y.post(f"{url}/tasks", json={"plan-task": task}), 404, "NoSuchPlanTaskException")
    error(y.delete(f"{url}/plan/{plan_id}"), 404, "NoSuchPlanIdException")
    error(x.get(f"{other}/plan/{plan_id}"), 404, "NoSuchPlanIdException")
    error(x.post(f"{other}/tasks", json={"plan-task": task}), 404, "NoSuchPlanTaskException")
    error(x.delete(f"{other}/plan/{plan_id}"), 404, "NoSuchPlanIdException")
    # The owner still has it, untouched; y's own plans work.
    assert fetch_result(x.get(f"{url}/plan/{plan_id}"))["status"] == "completed"
    assert paths(tasks_result(x.post(f"{url}/tasks", json={"plan-task": task})))
    assert plan_result(y.post(f"{url}/plan", json={}))["plan-id"] != plan_id

    for response in (
        z.post(f"{url}/plan", json={}),
        z.get(f"{url}/plan/{plan_id}"),
        z.delete(f"{url}/plan/{plan_id}"),
        z.post(f"{url}/tasks", json={"plan-task": task}),
    ):
        error(response, 403, "ForbiddenException", "table.read on table local.plans.paged")
    with proxy.client() as anonymous:
        for response in (
            anonymous.post(f"{url}/plan", json={}),
            anonymous.get(f"{url}/plan/{plan_id}"),
            anonymous.delete(f"{url}/plan/{plan_id}"),
            anonymous.post(f"{url}/tasks", json={"plan-task": task}),
        ):
            error(response, 401, "NotAuthorizedException")
    assert fetch_result(x.get(f"{url}/plan/{plan_id}"))["status"] == "completed"


def test_a_plan_does_not_outlive_its_table(root: httpx.Client, catalog: RestCatalog) -> None:
    """Dropped and created again under the same name, the table is another table: the old plan is not its plan."""
    url = table_path(NS, "reborn")
    old = catalog.create_table((NS, "reborn"), schema=SCHEMA)
    for start in range(0, 24, 2):  # 12 files: 10 inline, a plan task for the rest
        old.append(rows([start, start + 1]))
    answer = plan_result(root.post(f"{url}/plan", json={}))
    plan_id, task = answer["plan-id"], answer["plan-tasks"][0]
    old_files = client_side_paths(old)
    assert root.delete(url).status_code == 204
    error(root.get(f"{url}/plan/{plan_id}"), 404, "NoSuchTableException")
    error(root.post(f"{url}/tasks", json={"plan-task": task}), 404, "NoSuchTableException")

    catalog.create_table((NS, "reborn"), schema=SCHEMA).append(rows([100]))
    polled = root.get(f"{url}/plan/{plan_id}")
    fetched = root.post(f"{url}/tasks", json={"plan-task": task})
    assert not set(old_files) & set(paths(fetched.json())), "the new table's plan task lists the dropped table's files"
    error(polled, 404, "NoSuchPlanIdException")
    error(fetched, 404, "NoSuchPlanTaskException")


# 3. Audit ----------------------------------------------------------------------------------------------------
def test_every_planning_call_is_audited_with_its_operation_principal_and_table(
    root: httpx.Client, principals: dict[str, httpx.Client], paged: Table
) -> None:
    x, url = principals["x"], table_path(NS, "paged")
    planned = x.post(f"{url}/plan", json={})
    plan_id = plan_result(planned)["plan-id"]
    polled = x.get(f"{url}/plan/{plan_id}")
    fetched = x.post(f"{url}/tasks", json={"plan-task": planned.json()["plan-tasks"][0]})
    cancelled = x.delete(f"{url}/plan/{plan_id}")
    assert cancelled.status_code == 204 and cancelled.content == b""
    calls = {
        r.headers["x-request-id"]: (operation, r.status_code)
        for operation, r in zip(OPERATIONS, (planned, polled, fetched, cancelled), strict=True)
    }
    deadline = time.monotonic() + 10
    while True:
        listed = root.get(f"{MGMT}/audit", params={"principal": "planner-x", "object": "plans.paged", "limit": 1000})
        assert listed.status_code == 200, listed.text
        found = [record for record in listed.json()["records"] if record["request_id"] in calls]
        if len(found) >= len(calls) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert sorted(record["request_id"] for record in found) == sorted(calls), found
    for record in found:
        operation, status = calls[record["request_id"]]
        assert (record["operation"], record["status"]) == (operation, status), record
        assert (record["principal"], record["catalog"], record["object"]) == ("planner-x", "local", "plans.paged")
        assert record["decision"] == "allowed" and "table.read" in record["reason"], record


# 4. Plans expire ---------------------------------------------------------------------------------------------
def test_a_plan_and_its_tasks_are_gone_after_the_plan_ttl(serve_in_process: ServeInProcess) -> None:
    config = '[server.scan_planning]\nplan_ttl = "PT2S"\nfiles_per_task = 1\ntasks_per_response = 1\n'
    proxy = serve_in_process(config, "scan-planning-ttl")
    table = in_process_catalog(proxy, "local")
    table.create_namespace((NS,))
    written = table.create_table((NS, "brief"), schema=SCHEMA)
    for start in (0, 10, 20):
        written.append(rows(range(start, start + 2)))
    url = table_path(NS, "brief")
    with proxy.client(timeout=60) as http:
        started = time.monotonic()
        answer = plan_result(http.post(f"{url}/plan", json={}))
        plan_id, tasks = answer["plan-id"], answer["plan-tasks"]
        assert len(paths(answer)) == 1 and len(tasks) == 2
        assert fetch_result(http.get(f"{url}/plan/{plan_id}"))["status"] == "completed"
        assert len(paths(*fetch_all(http, url, tasks))) == 2
        assert time.monotonic() - started < 1.5, "too slow to see the plan alive"
        time.sleep(max(0.0, started + 2.5 - time.monotonic()))
        error(http.get(f"{url}/plan/{plan_id}"), 404, "NoSuchPlanIdException")
        for task in tasks:
            error(http.post(f"{url}/tasks", json={"plan-task": task}), 404, "NoSuchPlanTaskException")
        error(http.delete(f"{url}/plan/{plan_id}"), 404, "NoSuchPlanIdException")
        assert plan_result(http.post(f"{url}/plan", json={}))["plan-id"] != plan_id


# 5. Limits and errors ----------------------------------------------------------------------------------------
BAD_FILTERS = {
    "unknown predicate type": {"type": "almost-eq", "term": "id", "value": 1},
    "unknown column": {"type": "eq", "term": "nope", "value": 1},
    "literal of the wrong type": {"type": "eq", "term": "id", "value": "one"},
    "apply as the filter": {"type": "apply", "function": "is_even", "arguments": [{"type": "reference", "name": "id"}]},
    "apply as a term": {
        "type": "eq",
        "left": {"type": "apply", "function": "abs", "arguments": [{"type": "reference", "name": "id"}]},
        "right": 1,
    },
    "not a predicate": ["eq", "id", 1],
    "and without right": {"type": "and", "left": True},
}


@pytest.mark.parametrize("name", list(BAD_FILTERS))
def test_a_malformed_filter_is_400(root: httpx.Client, incremental: Any, name: str) -> None:
    response = root.post(f"{table_path(NS, 'incremental')}/plan", json={"filter": BAD_FILTERS[name]})
    error(response, 400, "BadRequestException")


def test_bad_scan_requests_are_400_and_unknown_objects_404(
    root: httpx.Client, incremental: tuple[Table, list[int], list[set[str]]]
) -> None:
    _, snapshots, added = incremental
    url = table_path(NS, "incremental")
    bad_bodies: list[tuple[Any, str]] = [
        ({"snapshot-id": 12345}, "the table has no snapshot 12345"),
        ({"start-snapshot-id": snapshots[0]}, "end-snapshot-id is required with start-snapshot-id"),
        ({"start-snapshot-id": snapshots[3], "end-snapshot-id": snapshots[1]}, "is not an ancestor of snapshot"),
        ({"start-snapshot-id": 12345, "end-snapshot-id": snapshots[1]}, "the table has no snapshot 12345"),
        ({"end-snapshot-id": 12345}, "the table has no snapshot 12345"),
        ({"snapshot-id": snapshots[0], "end-snapshot-id": snapshots[1]}, "cannot be combined"),
        ({"snapshot-id": "1"}, "snapshot-id must be an integer"),
        ({"select": ["nope"]}, "select names no column 'nope'"),
        ({"stats-fields": "id"}, "stats-fields must be a list"),
        ({"case-sensitive": "yes"}, "case-sensitive must be a boolean"),
        ({"min-rows-requested": -1}, "min-rows-requested must not be negative"),
        ([], "expected a JSON object"),
    ]
    for body, message in bad_bodies:
        error(root.post(f"{url}/plan", json=body), 400, "BadRequestException", message)
    error(root.post(f"{url}/plan", content=b"{not json"), 400, "BadRequestException")
    error(root.post(f"{url}/plan", content=b"\xff\xfe"), 400, "BadRequestException")
    error(root.post(table_path(NS, "missing") + "/plan", json={}), 404, "NoSuchTableException")
    error(root.post(table_path("nowhere", "t") + "/plan", json={}), 404, "NoSuchTableException")  # as loadTable
    # Case-insensitive names, time travel and the snapshot schema are fine.
    assert everything(root, url, {"select": ["ID"], "case-sensitive": False}) != []
    travelled = everything(root, url, {"snapshot-id": snapshots[1], "use-snapshot-schema": True})
    assert sorted(travelled) == sorted(added[0] | added[1])


def test_plan_ids_and_plan_tasks_that_do_not_exist_are_404(root: httpx.Client, paged: Table) -> None:
    url = table_path(NS, "paged")
    answer = plan_result(root.post(f"{url}/plan", json={}))
    plan_id = answer["plan-id"]
    for unknown in ("0" * 32, "nope", "x" * 300, uuid.uuid4().hex):
        error(root.get(f"{url}/plan/{unknown}"), 404, "NoSuchPlanIdException")
        error(root.delete(f"{url}/plan/{unknown}"), 404, "NoSuchPlanIdException")
    garbage = [
        "garbage",
        f"{plan_id}:99",
        f"{plan_id}:-1",
        f"{plan_id}:x",
        f"{plan_id}:",
        ":0",
        "0" * 32 + ":0",
        f"{plan_id}:{'9' * 40}",
        "x" * 5000,
    ]
    for token in garbage:
        error(root.post(f"{url}/tasks", json={"plan-task": token}), 404, "NoSuchPlanTaskException")
    bodies: list[Any] = [{"plan-task": 5}, {"plan-task": None}, {"plan-task": [answer["plan-tasks"][0]]}, {}, []]
    for body in bodies:
        error(root.post(f"{url}/tasks", json=body), 400, "BadRequestException")
    error(root.post(f"{url}/tasks", content=b"plan-task"), 400, "BadRequestException")
    # None of that touched the plan.
    assert fetch_result(root.get(f"{url}/plan/{plan_id}"))["status"] == "completed"


def test_scan_planning_off_is_406_and_not_advertised_preferred_is_advertised(
    root: httpx.Client, catalog: RestCatalog
) -> None:
    for name in ("closed", "eager", "local"):
        if name != "local":
            assert root.post(f"/v1/{name}/namespaces", json={"namespace": [NS]}).status_code == 200
        created = root.post(f"/v1/{name}/namespaces/{NS}/tables", json={"name": "cfg", "schema": SCHEMA_JSON})
        assert created.status_code == 200, created.text
    planning = {
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
        "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
        "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
    }
    configs = {name: root.get("/v1/config", params={"warehouse": name}).json() for name in ("closed", "eager", "local")}
    assert not planning & set(configs["closed"]["endpoints"])
    assert planning <= set(configs["local"]["endpoints"]) and planning <= set(configs["eager"]["endpoints"])
    assert "scan-planning-mode" not in configs["closed"]["defaults"] | configs["local"]["defaults"]
    assert configs["eager"]["defaults"]["scan-planning-mode"] == "server"
    loaded = {name: root.get(table_path(NS, "cfg", name)).json().get("config", {}) for name in ("eager", "local")}
    assert loaded["eager"]["scan-planning-mode"] == "server" and "scan-planning-mode" not in loaded["local"]

    url = table_path(NS, "cfg", "closed")
    for response in (
        root.post(f"{url}/plan", json={}),
        root.get(f"{url}/plan/abc"),
        root.delete(f"{url}/plan/abc"),
        root.post(f"{url}/tasks", json={"plan-task": "abc:0"}),
    ):
        error(response, 406, "UnsupportedOperationException")
    assert plan_result(root.post(f"{table_path(NS, 'cfg', 'eager')}/plan", json={}))["status"] == "completed"


def test_pyiceberg_plans_on_the_server_when_the_catalog_prefers_it(
    proxy: InProcessProxy, root: httpx.Client, root_token: str
) -> None:
    """pyiceberg 0.12 plans on the server when told ``scan-planning-mode = server``: it parses every answer."""
    eager = in_process_catalog(proxy, "eager", token=root_token)
    assert eager.supports_server_side_planning()
    eager.create_namespace(("planned",))
    table = eager.create_table(("planned", "rows"), schema=SCHEMA, partition_spec=BY_DATA)
    for append in range(6):  # 18 files in 6 manifests: 9 inline, a plan task for the other 9
        table.append(rows(range(append * 10, append * 10 + 10), partitions=3))
    table = eager.load_table(("planned", "rows"))
    assert len(list(table.scan().plan_files())) == 18
    assert sorted(table.scan(row_filter=EqualTo("data", "p1")).to_arrow()["id"].to_pylist()) == list(range(1, 60, 3))
    assert sorted(table.scan(row_filter=GreaterThanOrEqual("id", 55)).to_arrow()["id"].to_pylist()) == list(
        range(55, 60)
    )
    deadline = time.monotonic() + 10
    while True:
        records = root.get(f"{MGMT}/audit", params={"object": "planned.rows", "limit": 100}).json()["records"]
        operations = {record["operation"] for record in records}
        if {"planTableScan", "fetchScanTasks"} <= operations or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert {"planTableScan", "fetchScanTasks"} <= operations, operations


# 6. Pages ----------------------------------------------------------------------------------------------------
def test_a_large_plan_is_paged_into_plan_tasks_that_cover_every_file_exactly_once(
    root: httpx.Client, paged: Table
) -> None:
    url = table_path(NS, "paged")
    first = plan_result(root.post(f"{url}/plan", json={}))
    assert first["status"] == "completed"
    assert 0 < len(first["file-scan-tasks"]) < 60 and first["plan-tasks"], first
    assert first["delete-files"] == []
    assert all(
        "residual-filter" not in task and "delete-file-references" not in task for task in first["file-scan-tasks"]
    ), "a residual of true is not sent (the spec: the client applies the original filter, here none)"
    fetched = fetch_all(root, url, first["plan-tasks"])
    assert all(0 < len(page["file-scan-tasks"]) <= 10 and "plan-tasks" not in page for page in fetched)
    every = paths(first, *fetched)
    assert len(every) == len(set(every)) == 60
    assert set(every) == client_side_paths(paged)
    records = [task["data-file"]["record-count"] for answer in (first, *fetched) for task in answer["file-scan-tasks"]]
    assert sum(records) == 180
    # A poll lists the plan tasks still to fetch; the chunk answered inline is no plan task.
    assert fetch_result(root.get(f"{url}/plan/{first['plan-id']}"))["plan-tasks"] == first["plan-tasks"]
    inline = f"{first['plan-id']}:0"
    assert inline not in first["plan-tasks"]
    error(root.post(f"{url}/tasks", json={"plan-task": inline}), 404, "NoSuchPlanTaskException")
    # A plan task stays valid: fetched again, it is the same files.
    assert paths(tasks_result(root.post(f"{url}/tasks", json={"plan-task": first["plan-tasks"][0]}))) == paths(
        fetched[0]
    )


def test_min_rows_requested_smaller_than_a_file_ends_the_plan_in_its_first_answer(
    root: httpx.Client, paged: Table
) -> None:
    url = table_path(NS, "paged")
    answer = plan_result(root.post(f"{url}/plan", json={"min-rows-requested": 2}))
    assert answer["status"] == "completed"
    assert answer["file-scan-tasks"] and answer["file-scan-tasks"][0]["data-file"]["record-count"] == 3
    assert "plan-tasks" not in answer, answer.get("plan-tasks")


def test_a_filter_prunes_files_and_returns_residuals(root: httpx.Client, paged: Table) -> None:
    url = table_path(NS, "paged")
    by_partition = {"type": "eq", "term": "data", "value": "p3"}
    found = everything(root, url, {"filter": by_partition})
    assert len(found) == 6 and set(found) == client_side_paths(paged, row_filter=EqualTo("data", "p3"))
    by_metrics = {
        "type": "gt-eq",
        "left": {"type": "reference", "name": "id"},
        "right": {"type": "literal", "value": 150},
    }
    answer = plan_result(root.post(f"{url}/plan", json={"filter": by_metrics, "stats-fields": ["id"]}))
    tasks = scan_tasks(answer, *fetch_all(root, url, answer.get("plan-tasks", [])))
    assert len(tasks) == 10
    assert all(task["residual-filter"] == {"type": "gt-eq", "term": "id", "value": 150} for task in tasks), tasks[0]
    assert all(task["data-file"]["lower-bounds"]["keys"] == [1] for task in tasks), tasks[0]["data-file"]
    assert all(task["data-file"]["lower-bounds"]["values"][0] >= 150 for task in tasks)


# 7. Incremental append scans ---------------------------------------------------------------------------------
def test_an_incremental_scan_reads_the_files_appended_after_the_start_up_to_the_end(
    root: httpx.Client, incremental: tuple[Table, list[int], list[set[str]]]
) -> None:
    _, snapshots, added = incremental
    url = table_path(NS, "incremental")

    def between(start: int | None, end: int) -> list[str]:
        body = {"end-snapshot-id": end} | ({"start-snapshot-id": start} if start is not None else {})
        return sorted(everything(root, url, body))

    assert between(snapshots[0], snapshots[2]) == sorted(added[1] | added[2])
    # The overwrite between them is skipped (its rewritten file too); the file it deleted was appended by
    # snapshot 2 and is read, as Java's IncrementalAppendScan reads it.
    assert between(snapshots[0], snapshots[4]) == sorted(added[1] | added[2] | added[4])
    assert between(snapshots[2], snapshots[4]) == sorted(added[4])
    assert between(snapshots[2], snapshots[2]) == []
    assert between(None, snapshots[1]) == sorted(added[0] | added[1])


# 8. Vended credentials ---------------------------------------------------------------------------------------
VEND = "vend"
VEND_BUCKET = "irc-scan-planning"


def test_a_completed_plan_carries_vended_credentials_for_callers_who_may_have_them(
    moto: str, sts: FakeSts, serve_in_process: ServeInProcess
) -> None:
    prepare_vending(moto, VEND_BUCKET)
    auth = (
        f'[auth]\nmode = "oauth2"\nadmins = ["root"]\n[[auth.clients]]\nid = "root"\n'
        f'secret_hash = "{hash_secret(ROOT_SECRET)}"\nprincipal = "root"\n'
    )
    proxy = serve_in_process(auth + vending_catalog_config(VEND, moto, sts.url, VEND_BUCKET), "scan-planning-vend")
    with proxy.client() as plain:
        root_token = token_of(plain, "root", ROOT_SECRET)
    catalog = in_process_catalog(proxy, VEND, token=root_token)
    catalog.create_namespace((NS,))
    table = catalog.create_table((NS, "vended"), schema=SCHEMA)
    table.append(rows(range(5)))
    table.append(rows(range(5, 9)))
    location = table.metadata.location
    assert location.startswith(f"s3://{VEND_BUCKET}/")

    readers = {}
    with proxy.client(headers={"Authorization": f"Bearer {root_token}"}) as root, proxy.client() as anonymous:
        for name, privileges in (("reader", ["table.read", "credentials.read"]), ("plain", ["table.read"])):
            grants = [{"catalog": VEND, "namespace": [NS], "privilege": p} for p in privileges]
            readers[name] = token_of(anonymous, *make_principal(root, f"vend-{name}", *grants))
    url = table_path(NS, "vended", VEND)
    expected = client_side_paths(table)
    with (
        proxy.client(headers={"Authorization": f"Bearer {readers['reader']}"}, timeout=60) as reader,
        proxy.client(headers={"Authorization": f"Bearer {readers['plain']}"}, timeout=60) as plain,
    ):
        sts.reset()
        answer = plan_result(reader.post(f"{url}/plan", json={}, headers=DELEGATION))
        assert set(paths(answer)) == expected
        [credential] = answer["storage-credentials"]
        conforms("StorageCredential", credential)
        assert location.startswith(credential["prefix"]) and credential["prefix"].startswith(f"s3://{VEND_BUCKET}/")
        assert set(credential["config"]) >= CREDENTIAL_KEYS, credential["config"]
        assert credential["config"]["s3.access-key-id"].startswith("ASIA")  # an STS session's, not the proxy's
        [call] = sts.assume_role_calls()
        assert call["RoleSessionName"] == "irc-proxy@vend-reader"

        undelegated = plan_result(reader.post(f"{url}/plan", json={}))
        assert set(paths(undelegated)) == expected and "storage-credentials" not in undelegated
        refused = plan_result(plain.post(f"{url}/plan", json={}, headers=DELEGATION))
        assert set(paths(refused)) == expected and "storage-credentials" not in refused
        assert len(sts.assume_role_calls()) == 1

        # A completed plan polled later carries them too (the caller's, as for the plan).
        polled = fetch_result(reader.get(f"{url}/plan/{answer['plan-id']}", headers=DELEGATION))
        assert polled["storage-credentials"][0]["prefix"] == credential["prefix"]
        assert "storage-credentials" not in fetch_result(
            plain.get(f"{url}/plan/{refused['plan-id']}", headers=DELEGATION)
        )


# 9. A table whose files lie elsewhere ------------------------------------------------------------------------
LEAK = "root:x:0:0:do-not-leak-this-line:/root:/bin/bash"


@contextmanager
def never_opened(path: Path) -> Iterator[None]:
    """A FIFO at ``path`` that fails the block if anybody opens it (a reader would get ``LEAK``)."""
    os.mkfifo(path)
    opened, done = threading.Event(), threading.Event()

    def feed() -> None:
        with path.open("wb") as out:  # blocks until a reader opens the FIFO
            if not done.is_set():
                opened.set()
                out.write(LEAK.encode())

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        yield
    finally:
        done.set()
        release = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # lets the feeder go if nobody else did
        feeder.join(5)
        os.close(release)
    assert not opened.is_set(), f"the server opened {path}"


def hand_written_metadata(location: str, manifest_list: str) -> dict[str, Any]:
    """Format-v2 metadata of a table at ``location`` with one snapshot whose manifest list is ``manifest_list``."""
    return {
        "format-version": 2,
        "table-uuid": str(uuid.uuid4()),
        "location": location,
        "last-sequence-number": 1,
        "last-updated-ms": 1_700_000_000_000,
        "last-column-id": 2,
        "current-schema-id": 0,
        "schemas": [SCHEMA_JSON],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": 1,
        "refs": {"main": {"snapshot-id": 1, "type": "branch"}},
        "snapshots": [
            {
                "snapshot-id": 1,
                "sequence-number": 1,
                "timestamp-ms": 1_700_000_000_000,
                "manifest-list": manifest_list,
                "summary": {"operation": "append"},
                "schema-id": 0,
            }
        ],
    }


def register_with(root: httpx.Client, warehouse: Path, name: str, manifest_list: str) -> None:
    """Register ``plans.<name>``: hand-written metadata in its own directory naming ``manifest_list``."""
    directory = warehouse / NS / name / "metadata"
    directory.mkdir(parents=True, exist_ok=True)
    metadata = directory / "00000-hand-written.metadata.json"
    metadata.write_text(json.dumps(hand_written_metadata((warehouse / NS / name).as_uri(), manifest_list)))
    body = {"name": name, "metadata-location": metadata.as_uri()}
    registered = root.post(f"/v1/local/namespaces/{NS}/register", json=body)
    assert registered.status_code == 200, registered.text


def list_naming(manifest: str | None, source: str, directory: Path) -> str:
    """A copy of the manifest list ``source`` in ``directory``, its manifests all ``manifest`` (None: as they were)."""
    io = PyArrowFileIO()
    manifests = list(read_manifest_list(io.new_input(source)))
    for entry in manifests:
        entry[0] = manifest or entry.manifest_path  # manifest_path
    path = directory / "snap-rewritten.avro"
    with write_manifest_list(2, io.new_output(path.as_uri()), 1, None, 1, "deflate") as writer:
        writer.add_manifests(manifests)
    return path.as_uri()


ATTACKS = [
    "manifest list outside the warehouse",
    "manifest list in a sibling directory named like the table",
    "manifest list through a symlink out of the table",
    "manifest list of another table",
    "manifests of another table",
    "manifest outside the table",
    "manifest list /etc/passwd",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_table_whose_manifests_lie_outside_it_is_403_and_nothing_is_read(
    proxy: InProcessProxy, root: httpx.Client, catalog: RestCatalog, paged: Table, attack: str
) -> None:
    warehouse = proxy.workdir / "data" / "warehouse" / "local"
    name = f"evil_{uuid.uuid4().hex[:8]}"
    metadata_dir = warehouse / NS / name / "metadata"
    metadata_dir.mkdir(parents=True)
    outside = proxy.workdir / f"outside-{name}"
    outside.mkdir()
    victim = paged.metadata.current_snapshot()
    assert victim is not None
    assert plan_result(root.post(f"{table_path(NS, 'paged')}/plan", json={}))["status"] == "completed"  # read once
    fifo = outside / "secret.avro"
    if attack == "manifest list in a sibling directory named like the table":  # in the warehouse, not the table
        fifo = warehouse / NS / f"{name}x" / "snap.avro"
        fifo.parent.mkdir()
    escape = metadata_dir / "escape"
    if attack == "manifest list through a symlink out of the table":
        escape.symlink_to(outside, target_is_directory=True)
    with never_opened(fifo):
        if attack == "manifest list of another table":
            catalog.create_table((NS, name), schema=SCHEMA)
            snapshot = {
                "snapshot-id": 1,
                "timestamp-ms": 1_700_000_000_000,
                "manifest-list": victim.manifest_list,
                "summary": {"operation": "append"},
                "schema-id": 0,
            }
            updates = [
                {"action": "add-snapshot", "snapshot": snapshot},
                {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1},
            ]
            committed = root.post(table_path(NS, name), json={"requirements": [], "updates": updates})
            assert committed.status_code == 200, committed.text
        else:
            manifest_list = {
                "manifest list outside the warehouse": fifo.as_uri,
                "manifest list in a sibling directory named like the table": fifo.as_uri,
                "manifest list through a symlink out of the table": (escape / "secret.avro").as_uri,
                "manifests of another table": lambda: list_naming(None, victim.manifest_list, metadata_dir),
                "manifest outside the table": lambda: list_naming(fifo.as_uri(), victim.manifest_list, metadata_dir),
                "manifest list /etc/passwd": lambda: "file:///etc/passwd",
            }[attack]()
            register_with(root, warehouse, name, manifest_list)
        started = time.monotonic()
        response = root.post(f"{table_path(NS, name)}/plan", json={})
        assert time.monotonic() - started < 5
    error(response, 403, "ForbiddenException", "outside the catalog's allowed locations")
    assert "do-not-leak" not in response.text and "root:x" not in response.text
    assert f"{NS}/paged/data" not in response.text
    # The table itself still loads, and other plans work.
    assert root.get(table_path(NS, name)).status_code == 200
    assert plan_result(root.post(f"{table_path(NS, 'paged')}/plan", json={}))["status"] == "completed"
