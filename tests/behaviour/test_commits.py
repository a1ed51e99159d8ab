"""The commit engine over HTTP: requirements, server-side retry, transactions, bad updates."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.rest import assert_error, create_namespace, create_table, table_url


def _commit(client: httpx.Client, url: str, requirements: list[dict], updates: list[dict]) -> httpx.Response:
    return client.post(url, json={"requirements": requirements, "updates": updates})


def test_failed_requirements_are_409_with_java_messages(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    created = create_table(client, (ns_name,), "t")
    url = table_url((ns_name,), "t")
    cases: list[tuple[dict, str]] = [
        ({"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}, "UUID does not match"),
        ({"type": "assert-current-schema-id", "current-schema-id": 5}, "current schema changed: expected id 5 != 0"),
        ({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 9}, "last assigned field id changed"),
        ({"type": "assert-default-spec-id", "default-spec-id": 3}, "default partition spec changed"),
        ({"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1}, "last assigned partition id"),
        ({"type": "assert-default-sort-order-id", "default-sort-order-id": 4}, "default sort order changed"),
        ({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 42}, "branch or tag main is missing"),
    ]
    for requirement, message in cases:
        response = _commit(client, url, [requirement], [{"action": "set-properties", "updates": {"x": "1"}}])
        assert_error(response, 409, "CommitFailedException", f"Requirement failed: {message}")
    current = client.get(url).json()
    assert current["metadata-location"] == created["metadata-location"]


def test_commit_without_identifier_applies_updates(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    created = create_table(client, (ns_name,), "t")
    uuid = created["metadata"]["table-uuid"]
    new_schema = {
        "type": "struct",
        "schema-id": 1,
        "fields": [
            *created["metadata"]["schemas"][0]["fields"],
            {"id": 3, "name": "extra", "type": "int", "required": False},
        ],
    }
    response = _commit(
        client,
        table_url((ns_name,), "t"),
        [{"type": "assert-table-uuid", "uuid": uuid}, {"type": "assert-current-schema-id", "current-schema-id": 0}],
        [{"action": "add-schema", "schema": new_schema}, {"action": "set-current-schema", "schema-id": -1}],
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["metadata"]["current-schema-id"] == 1
    assert body["metadata"]["metadata-log"][0]["metadata-file"] == created["metadata-location"]
    assert response.headers["etag"]


def test_unknown_update_action_and_requirement_type_are_400(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    url = table_url((ns_name,), "t")
    assert_error(_commit(client, url, [], [{"action": "explode"}]), 400, "BadRequestException", "explode")
    assert_error(_commit(client, url, [{"type": "assert-magic"}], []), 400, "BadRequestException", "assert-magic")
    assert_error(_commit(client, url, [], [{"action": "set-properties"}]), 400, "BadRequestException")
    assert_error(
        _commit(client, url, [], [{"action": "set-current-schema", "schema-id": 99}]), 400, "BadRequestException"
    )
    assert_error(client.post(url, json={"updates": []}), 400, "BadRequestException")


def test_commit_to_missing_table_is_404(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    response = _commit(client, table_url((ns_name,), "nope"), [], [{"action": "set-properties", "updates": {}}])
    assert_error(response, 404, "NoSuchTableException")


def test_concurrent_non_conflicting_commits_are_rebased_not_lost(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    url = table_url((ns_name,), "t")

    def set_property(i: int) -> int:
        return _commit(client, url, [], [{"action": "set-properties", "updates": {f"k{i}": str(i)}}]).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(set_property, range(24)))
    assert statuses == [200] * 24
    properties = client.get(url).json()["metadata"]["properties"]
    assert {f"k{i}" for i in range(24)} <= set(properties)


def test_remove_statistics_after_remove_snapshots_is_idempotent(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    create_table(client, (ns_name,), "t")
    url = table_url((ns_name,), "t")
    response = _commit(client, url, [], [{"action": "remove-statistics", "snapshot-id": 123}])
    assert response.status_code == 200, response.text
    response = _commit(client, url, [], [{"action": "remove-snapshots", "snapshot-ids": [999]}])
    assert response.status_code == 200, response.text


@pytest.mark.needs("multi_table_commit")
def test_transaction_commits_all_or_nothing(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    a = create_table(client, (ns_name,), "a")
    create_table(client, (ns_name,), "b")
    ok = {
        "table-changes": [
            {
                "identifier": {"namespace": [ns_name], "name": name},
                "requirements": [],
                "updates": [{"action": "set-properties", "updates": {"tx": "1"}}],
            }
            for name in ("a", "b")
        ]
    }
    assert client.post("/v1/local/transactions/commit", json=ok).status_code == 204
    for name in ("a", "b"):
        assert client.get(table_url((ns_name,), name)).json()["metadata"]["properties"]["tx"] == "1"
    before = {name: client.get(table_url((ns_name,), name)).json()["metadata-location"] for name in ("a", "b")}
    failing = {
        "table-changes": [
            {
                "identifier": {"namespace": [ns_name], "name": "a"},
                "requirements": [],
                "updates": [{"action": "set-properties", "updates": {"tx": "2"}}],
            },
            {
                "identifier": {"namespace": [ns_name], "name": "b"},
                "requirements": [{"type": "assert-table-uuid", "uuid": a["metadata"]["table-uuid"]}],
                "updates": [{"action": "set-properties", "updates": {"tx": "2"}}],
            },
        ]
    }
    assert_error(client.post("/v1/local/transactions/commit", json=failing), 409, "CommitFailedException")
    after = {name: client.get(table_url((ns_name,), name)).json()["metadata-location"] for name in ("a", "b")}
    assert after == before


def test_transaction_without_identifier_is_400(client: httpx.Client) -> None:
    body: dict = {"table-changes": [{"requirements": [], "updates": []}]}
    assert_error(client.post("/v1/local/transactions/commit", json=body), 400, "BadRequestException")


@pytest.mark.lacks("multi_table_commit")
def test_multi_table_transaction_is_refused_without_atomic_commits(client: httpx.Client, ns_name: str) -> None:
    create_namespace(client, ns_name)
    for name in ("a", "b"):
        create_table(client, (ns_name,), name)
    body = {
        "table-changes": [
            {"identifier": {"namespace": [ns_name], "name": n}, "requirements": [], "updates": []} for n in ("a", "b")
        ]
    }
    assert_error(client.post("/v1/local/transactions/commit", json=body), 406, "UnsupportedOperationException")
    single: dict = {"table-changes": body["table-changes"][:1]}
    single["table-changes"][0]["updates"] = [{"action": "set-properties", "updates": {"k": "v"}}]
    assert client.post("/v1/local/transactions/commit", json=single).status_code == 204
