"""Two proxy replicas on one PostgreSQL: concurrent view replaces lose no version; concurrent
identical creates give exactly one winner and 409s; table commits through both lose nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.behaviour.test_views import VIEW_SCHEMA, create_view, version
from tests.support.postgres import scratch_database
from tests.support.rest import create_namespace, create_table, table_url
from tests.support.server import ProxyProcess

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProxyProcess, ProxyProcess]]:
    with scratch_database() as url:
        warehouse = tmp_path_factory.mktemp("shared-warehouse")
        config = (
            f'[state]\ndatabase_url = "{url}"\n'
            f'[catalogs.local]\nkind = "local"\ndatabase_url = "{url}"\nwarehouse = "{warehouse.as_uri()}"\n'
        )
        first = ProxyProcess(tmp_path_factory.mktemp("replica-a"), config).start()
        second = ProxyProcess(tmp_path_factory.mktemp("replica-b"), config).start()
        yield first, second
        first.stop()
        second.stop()


def _replace_body(uuid: str, sql: str) -> dict[str, object]:
    new_version = version(sql, schema_id=-1)
    return {
        "requirements": [{"type": "assert-view-uuid", "uuid": uuid}],
        "updates": [
            {"action": "add-schema", "schema": VIEW_SCHEMA},
            {"action": "add-view-version", "view-version": new_version},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }


def test_concurrent_view_replaces_on_two_replicas_lose_no_version(
    replicas: tuple[ProxyProcess, ProxyProcess], ns_name: str, tmp_path: Path
) -> None:
    a, b = replicas
    clients = [httpx.Client(base_url=p.url, timeout=60) for p in (a, b)]
    create_namespace(clients[0], ns_name)
    created = create_view(clients[0], (ns_name,), "v", properties={"version.history.num-entries": "1000"})
    assert created.status_code == 200, created.text
    uuid = created.json()["metadata"]["view-uuid"]
    url = f"/v1/local/namespaces/{ns_name}/views/v"
    attempts = 48

    def replace(i: int) -> tuple[int, str]:
        sql = f"select {i} as id -- replace {i}"
        return clients[i % 2].post(url, json=_replace_body(uuid, sql)).status_code, sql

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(replace, range(attempts)))
    statuses = Counter(status for status, _ in results)
    acknowledged = {sql for status, sql in results if status == 200}
    metadata = clients[1].get(url).json()["metadata"]
    stored = {v["representations"][0]["sql"] for v in metadata["versions"]}
    lost = acknowledged - stored
    print(f"\nview replaces: attempts={attempts} ok={statuses[200]} conflicts={statuses[409]} lost={len(lost)}")
    assert set(statuses) <= {200, 409}
    assert not lost
    assert len(metadata["versions"]) == 1 + statuses[200]
    assert len({v["version-id"] for v in metadata["versions"]}) == len(metadata["versions"])
    assert statuses[409] <= attempts * 0.05
    for client in clients:
        client.close()


def test_concurrent_identical_creates_have_one_winner(
    replicas: tuple[ProxyProcess, ProxyProcess], ns_name: str
) -> None:
    a, b = replicas
    clients = [httpx.Client(base_url=p.url, timeout=60) for p in (a, b)]
    create_namespace(clients[0], ns_name)

    def create(i: int) -> int:
        return create_view(clients[i % 2], (ns_name,), "same").status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = Counter(pool.map(create, range(16)))
    assert statuses == Counter({200: 1, 409: 15})
    for client in clients:
        client.close()


def test_concurrent_table_commits_on_two_replicas_lose_nothing(
    replicas: tuple[ProxyProcess, ProxyProcess], ns_name: str
) -> None:
    a, b = replicas
    clients = [httpx.Client(base_url=p.url, timeout=60) for p in (a, b)]
    create_namespace(clients[0], ns_name)
    create_table(clients[0], (ns_name,), "t")
    url = table_url((ns_name,), "t")

    def commit(i: int) -> tuple[int, int]:
        body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {f"k{i}": "v"}}]}
        return i, clients[i % 2].post(url, json=body).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(commit, range(40)))
    statuses = Counter(status for _, status in results)
    properties = clients[0].get(url).json()["metadata"]["properties"]
    acknowledged = {f"k{i}" for i, status in results if status == 200}
    print(f"\ntable commits: attempts=40 ok={statuses[200]} conflicts={statuses[409]}")
    assert set(statuses) <= {200, 409}
    assert acknowledged <= set(properties)
    assert statuses[409] <= 2
    for client in clients:
        client.close()
