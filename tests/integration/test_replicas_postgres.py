"""Two proxy replicas on one PostgreSQL: concurrent view replaces lose no version; concurrent
identical creates give exactly one winner and 409s; table commits through both lose nothing."""

from __future__ import annotations

import re
import time
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


def _pointer_metrics(client: httpx.Client) -> dict[str, float]:
    """This replica's pointer cache counters for the ``local`` catalog (hits, misses, feed invalidations)."""
    found = {"hits": 0.0, "misses": 0.0, "feed": 0.0}
    for line in client.get("/metrics").text.splitlines():
        if 'catalog="local"' not in line or line.startswith("#"):
            continue
        value = float(line.rsplit(" ", 1)[1])
        if line.startswith("irc_proxy_pointer_cache_hits_total"):
            found["hits"] += value
        elif line.startswith("irc_proxy_pointer_cache_misses_total"):
            found["misses"] += value
        elif line.startswith("irc_proxy_pointer_cache_invalidations_total") and 'cause="feed"' in line:
            found["feed"] += value
    return found


def test_a_commit_through_one_replica_is_seen_at_once_through_the_other(
    replicas: tuple[ProxyProcess, ProxyProcess], ns_name: str
) -> None:
    """Read-your-writes across replicas with warm pointer caches: B has the table cached (hits), A commits,
    and B's very next load (no pause) shows the commit, every time."""
    a, b = replicas
    with httpx.Client(base_url=a.url, timeout=60) as first, httpx.Client(base_url=b.url, timeout=60) as second:
        create_namespace(first, ns_name)
        create_table(first, (ns_name,), "ryw")
        url = table_url((ns_name,), "ryw")
        before = _pointer_metrics(second)
        for i in range(30):
            for _ in range(3):  # warm: B answers from its cache
                assert second.get(url).status_code == 200
            body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"round": str(i)}}]}
            committed = first.post(url, json=body)
            assert committed.status_code == 200, committed.text
            loaded = second.get(url)
            assert loaded.json()["metadata-location"] == committed.json()["metadata-location"]
            assert loaded.json()["metadata"]["properties"]["round"] == str(i)
            tag = loaded.headers["etag"]
            assert second.get(url, headers={"If-None-Match": tag}).status_code == 304
        after = _pointer_metrics(second)
        assert after["hits"] - before["hits"] >= 60  # the cache was in use, not bypassed
        assert after["feed"] - before["feed"] >= 30  # and A's commits reached B through the feed


def test_loads_alternating_between_replicas_never_go_back_in_time(
    replicas: tuple[ProxyProcess, ProxyProcess], ns_name: str
) -> None:
    """Monotonic reads: while commits land through both replicas, a reader alternating between them never
    sees a metadata version older than one it saw before."""
    a, b = replicas
    clients = [httpx.Client(base_url=p.url, timeout=60) for p in (a, b)]
    create_namespace(clients[0], ns_name)
    create_table(clients[0], (ns_name,), "mono")
    url = table_url((ns_name,), "mono")
    writers = [httpx.Client(base_url=p.url, timeout=60) for p in (a, b)]

    def write(i: int) -> int:
        body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {f"w{i}": "v"}}]}
        return writers[i % 2].post(url, json=body).status_code

    def read(_: int) -> list[int]:
        seen = []
        for j in range(150):
            location = clients[j % 2].get(url).json()["metadata-location"]
            seen.append(int(location.rsplit("/", 1)[1].split("-", 1)[0]))
        return seen

    with ThreadPoolExecutor(max_workers=6) as pool:
        writes = pool.map(write, range(30))
        readers = [pool.submit(read, r) for r in range(3)]
        assert set(writes) <= {200, 409}
        sequences = [reader.result() for reader in readers]
    for seen in sequences:
        assert seen == sorted(seen), seen
    assert max(max(seen) for seen in sequences) > 0
    for client in (*clients, *writers):
        client.close()


def test_a_replica_whose_change_feed_was_cut_still_sees_every_commit(
    replicas: tuple[ProxyProcess, ProxyProcess], ns_name: str
) -> None:
    """The feed's connections killed on the server: a replica stops trusting its cache (it reads the database)
    until it reconnected, flushed and synced again, and loads through it show every commit meanwhile."""
    import sqlalchemy

    from irc_proxy.backends.pointer_feed import APPLICATION_NAME

    a, b = replicas
    with httpx.Client(base_url=a.url, timeout=60) as first, httpx.Client(base_url=b.url, timeout=60) as second:
        create_namespace(first, ns_name)
        create_table(first, (ns_name,), "cut")
        url = table_url((ns_name,), "cut")
        second.get(url)
        database = re.search(r'database_url = "([^"]+)"', a.config_path.read_text())
        assert database is not None
        engine = sqlalchemy.create_engine(database.group(1))
        with engine.begin() as conn:
            cut = conn.execute(
                sqlalchemy.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = :n AND datname = current_database()"
                ),
                {"n": APPLICATION_NAME},
            ).all()
        engine.dispose()
        assert len(cut) >= 4  # listener and sender of both replicas
        for i in range(15):
            body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"cut": str(i)}}]}
            committed = first.post(url, json=body)
            assert committed.status_code == 200, committed.text
            assert second.get(url).json()["metadata-location"] == committed.json()["metadata-location"]
            time.sleep(0.1)
        flushes = [
            line
            for line in second.get("/metrics").text.splitlines()
            if line.startswith("irc_proxy_pointer_cache_invalidations_total") and 'cause="flush"' in line
        ]
        assert flushes and float(flushes[0].rsplit(" ", 1)[1]) >= 2  # the first connect and the reconnect
