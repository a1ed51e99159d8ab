"""Guarantees 5 and 8: request bodies are bounded (nesting depth, updates and requirements per commit),
bad input is a 4xx in the spec's shape without a stack trace, and the event loop stays free while the
largest allowed commit is applied."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import httpx
import pytest

from tests.integration.security.conftest import Target
from tests.support.rest import assert_error, create_namespace, create_table, ns_path, table_url

MAX_UPDATES = 10_000  # server.max_commit_updates (default)
MAX_REQUIREMENTS = 1_000  # server.max_commit_requirements (default)


@pytest.fixture
def table(client: httpx.Client) -> str:
    namespace = f"bounds_{uuid.uuid4().hex[:8]}"
    create_namespace(client, namespace)
    create_table(client, (namespace,), "t")
    return table_url((namespace,), "t")


def _no_trace(response: httpx.Response) -> None:
    assert "Traceback" not in response.text and 'File "' not in response.text


def _commit(
    client: httpx.Client, url: str, updates: list[Any], requirements: list[Any] | None = None
) -> httpx.Response:
    return client.post(url, json={"requirements": requirements or [], "updates": updates})


def test_a_body_of_a_hundred_thousand_open_brackets_is_a_400(client: httpx.Client, table: str) -> None:
    response = client.post(table, content=b"[" * 100_000, headers={"content-type": "application/json"})
    assert_error(response, 400, "BadRequestException", "nested more than 100 levels")
    _no_trace(response)


def test_nesting_three_thousand_deep_inside_updates_is_a_400(client: httpx.Client, table: str) -> None:
    deep = "[" * 3000 + "]" * 3000
    body = f'{{"requirements": [], "updates": [{{"action": "set-properties", "updates": {deep}}}]}}'
    response = client.post(table, content=body.encode(), headers={"content-type": "application/json"})
    assert_error(response, 400, "BadRequestException", "nested more than 100 levels")


def test_deep_nesting_in_a_create_table_body_is_a_400(client: httpx.Client, table: str) -> None:
    namespace_url = table.rsplit("/tables/", 1)[0]
    body = '{"name": "deep", "schema": ' + "[" * 500 + "]" * 500 + "}"
    response = client.post(
        f"{namespace_url}/tables", content=body.encode(), headers={"Content-Type": "application/json"}
    )
    assert_error(response, 400, "BadRequestException", "nested more than 100 levels")


def test_more_updates_than_the_limit_is_a_413(client: httpx.Client, table: str) -> None:
    updates = [{"action": "set-properties", "updates": {f"k{i}": "v"}} for i in range(MAX_UPDATES + 1)]
    response = _commit(client, table, updates)
    assert_error(response, 413, "RequestEntityTooLargeException", f"the limit is {MAX_UPDATES}")


@pytest.mark.parametrize("action", ["set-properties", "remove-properties"])
def test_one_property_update_naming_more_keys_than_the_update_limit_is_a_413(
    client: httpx.Client, table: str, action: str
) -> None:
    """A million keys in one set-properties made a 14 MB metadata file that every load parses again."""
    keys = [f"k{i}" for i in range(MAX_UPDATES + 1)]
    named = {"updates": dict.fromkeys(keys, "v")} if action == "set-properties" else {"removals": keys}
    response = _commit(client, table, [{"action": action, **named}])
    assert_error(response, 413, "RequestEntityTooLargeException", f"the limit is {MAX_UPDATES}")
    within = keys[:MAX_UPDATES]
    assert (
        _commit(client, table, [{"action": "set-properties", "updates": dict.fromkeys(within, "v")}]).status_code == 200
    )
    assert _commit(client, table, [{"action": "remove-properties", "removals": within}]).status_code == 200


def test_more_list_growing_updates_than_the_limit_is_a_413(client: httpx.Client, table: str) -> None:
    """pyiceberg applies these in time quadratic in their number: they have a lower limit of their own."""
    order = {
        "order-id": 1,
        "fields": [{"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}],
    }
    updates = [{"action": "add-sort-order", "sort-order": order | {"order-id": i + 1}} for i in range(1001)]
    response = _commit(client, table, updates)
    assert_error(response, 413, "RequestEntityTooLargeException", "the limit is 1000")


def test_more_requirements_than_the_limit_is_a_413(client: httpx.Client, table: str) -> None:
    requirements = [{"type": "assert-current-schema-id", "current-schema-id": 0}] * (MAX_REQUIREMENTS + 1)
    response = _commit(client, table, [], requirements)
    assert_error(response, 413, "RequestEntityTooLargeException", f"the limit is {MAX_REQUIREMENTS}")


def test_a_transaction_counts_the_updates_of_all_its_tables_together(client: httpx.Client, table: str) -> None:
    namespace = table.split("/namespaces/")[1].split("/", maxsplit=1)[0]
    half = [{"action": "set-properties", "updates": {f"k{i}": "v"}} for i in range(MAX_UPDATES // 2 + 1)]
    changes = [
        {"identifier": {"namespace": [namespace], "name": name}, "requirements": [], "updates": half}
        for name in ("t", "u")
    ]
    response = client.post("/v1/local/transactions/commit", json={"table-changes": changes})
    assert_error(response, 413, "RequestEntityTooLargeException", f"the limit is {MAX_UPDATES}")


SPEC_FIELD = {"source-id": 1, "field-id": 1000, "name": "p"}


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [SPEC_FIELD | {"transform": "bucket[-1]"}]}},
         "bucket"),
        ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [SPEC_FIELD | {"transform": "truncate[abc]"}]}},
         "truncate"),
        (
            {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
                {"id": 1, "name": "x", "type": "decimal(999999999999,2)", "required": False}]}},
            "precision",
        ),
        (
            {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
                {"id": 1, "name": "x", "type": {"type": "list"}, "required": False}]}},
            "element",
        ),
        ({"action": "upgrade-format-version", "format-version": 99}, "format version"),
        ({"action": "remove-properties", "removals": ["never-set"]}, "never-set"),
    ],
)  # fmt: skip
def test_malformed_update_is_a_400_without_a_stack_trace(
    client: httpx.Client, table: str, update: dict[str, Any], message: str
) -> None:
    response = _commit(client, table, [update])
    assert_error(response, 400, "BadRequestException")
    assert message in response.json()["error"]["message"].lower()
    _no_trace(response)


@pytest.mark.parametrize(
    "extra",
    [
        {"partition-spec": {"spec-id": 0, "fields": [SPEC_FIELD | {"transform": "bucket[-1]"}]}},
        {"write-order": {"order-id": 1, "fields": [
            {"source-id": 1, "transform": "truncate[abc]", "direction": "asc", "null-order": "nulls-first"}]}},
        {"schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "x", "type": "decimal(999999999999,2)", "required": False}]}},
    ],
)  # fmt: skip
def test_malformed_create_table_is_a_400(client: httpx.Client, table: str, extra: dict[str, Any]) -> None:
    namespace_url = table.rsplit("/tables/", 1)[0]
    body = {"name": "bad", "schema": json.loads(json.dumps(SCHEMA_FOR_CREATE))} | extra
    response = client.post(f"{namespace_url}/tables", json=body)
    assert_error(response, 400, "BadRequestException")
    _no_trace(response)


SCHEMA_FOR_CREATE = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}


def test_huge_input_is_not_echoed_in_the_error(client: httpx.Client, table: str) -> None:
    transform = "bucket[" + "9" * 200_000 + "x]"
    update = {"action": "add-spec", "spec": {"spec-id": 1, "fields": [SPEC_FIELD | {"transform": transform}]}}
    response = _commit(client, table, [update])
    assert_error(response, 400, "BadRequestException")
    assert len(response.text) < 2_000


def test_a_malformed_view_version_is_a_400(client: httpx.Client, table: str) -> None:
    namespace = table.split("/namespaces/")[1].split("/", maxsplit=1)[0]
    body = {
        "name": "v",
        "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "x", "type": "decimal(999999999999,2)", "required": False}]},
        "view-version": {"version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {},
                         "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}],
                         "default-namespace": [namespace]},
    }  # fmt: skip
    response = client.post(f"/v1/local/namespaces/{ns_path(namespace)}/views", json=body)
    assert_error(response, 400, "BadRequestException", "precision")
    _no_trace(response)


def test_healthz_answers_quickly_while_the_largest_commit_is_applied(target: Target, table: str) -> None:
    updates = [{"action": "set-properties", "updates": {f"property-{i:05d}": f"value-{i}"}} for i in range(MAX_UPDATES)]
    body = json.dumps({"requirements": [], "updates": updates}).encode()
    assert len(body) < 16 * 1024 * 1024
    outcome: dict[str, httpx.Response] = {}

    def commit() -> None:
        with target.client() as http:
            outcome["response"] = http.post(table, content=body, headers={"content-type": "application/json"})

    worker = threading.Thread(target=commit)
    slowest = 0.0
    polls = 0
    with target.client() as http:
        http.get("/healthz")  # connection established before timing
        worker.start()
        while worker.is_alive() or polls < 3:
            started = time.perf_counter()
            assert http.get("/healthz").status_code == 200
            slowest = max(slowest, time.perf_counter() - started)
            polls += 1
            time.sleep(0.02)
    worker.join()
    response = outcome["response"]
    assert response.status_code == 200, response.text[:500]
    assert len(response.json()["metadata"]["properties"]) >= MAX_UPDATES
    assert slowest < 0.5, f"slowest /healthz took {slowest:.3f}s over {polls} polls"
