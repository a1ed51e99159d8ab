"""Server-side scan planning over HTTP on every backend: what is advertised, the plan lifecycle of a
table without data, and the spec's errors (the rows a plan returns are tested with real clients in
tests/e2e/test_scan_planning.py)."""

from __future__ import annotations

import httpx

from tests.support.rest import assert_error, create_namespace, create_table, table_url

PLAN_ENDPOINTS = {
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
}


def test_planning_is_advertised(client: httpx.Client) -> None:
    endpoints = set(client.get("/v1/config", params={"warehouse": "local"}).json()["endpoints"])
    assert endpoints >= PLAN_ENDPOINTS


def test_plan_lifecycle_of_a_table_without_snapshots(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    url = table_url((ns_name,), "t")
    planned = client.post(f"{url}/plan", json={})
    assert planned.status_code == 200, planned.text
    body = planned.json()
    assert body["status"] == "completed"
    assert isinstance(body["plan-id"], str) and body["plan-id"]
    assert not body.get("file-scan-tasks") and not body.get("plan-tasks") and not body.get("delete-files")
    polled = client.get(f"{url}/plan/{body['plan-id']}")
    assert polled.status_code == 200 and polled.json()["status"] == "completed"
    assert client.delete(f"{url}/plan/{body['plan-id']}").status_code == 204
    assert client.get(f"{url}/plan/{body['plan-id']}").json() == {"status": "cancelled"}


def test_unknown_plans_and_tasks_are_404(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    url = table_url((ns_name,), "t")
    assert_error(client.get(f"{url}/plan/nope"), 404, "NoSuchPlanIdException")
    assert_error(client.delete(f"{url}/plan/nope"), 404, "NoSuchPlanIdException")
    assert_error(client.post(f"{url}/tasks", json={"plan-task": "nope:0"}), 404, "NoSuchPlanTaskException")
    assert_error(client.post(f"{url}/tasks", json={}), 400, "BadRequestException")


def test_a_plan_belongs_to_its_table(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "a")
    create_table(client, (ns_name,), "b")
    plan_id = client.post(table_url((ns_name,), "a") + "/plan", json={}).json()["plan-id"]
    assert_error(client.get(table_url((ns_name,), "b") + f"/plan/{plan_id}"), 404, "NoSuchPlanIdException")
    assert_error(client.delete(table_url((ns_name,), "b") + f"/plan/{plan_id}"), 404, "NoSuchPlanIdException")


def test_bad_requests_are_400_in_the_spec_shape(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    url = table_url((ns_name,), "t") + "/plan"
    for body in (
        {"filter": {"type": "between", "term": "id"}},
        {"filter": {"type": "eq", "term": "no_such_column", "value": 1}},
        {"snapshot-id": 123},
        {"start-snapshot-id": 1},
        {"select": ["no_such_column"]},
        {"case-sensitive": "yes"},
    ):
        assert_error(client.post(url, json=body), 400, "BadRequestException")
    assert_error(client.post(url, content=b"{not json"), 400, "BadRequestException")


def test_planning_an_unknown_table_is_404(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    assert_error(client.post(table_url((ns_name,), "missing") + "/plan", json={}), 404, "NoSuchTableException")
