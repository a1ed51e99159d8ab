"""A retried commit through the other replica gets the single outcome, fast (issue 30).

Two replicas on one PostgreSQL; replica A reaches the catalog database through a TCP fault relay, so a
test can stall it in the middle of a request. The commits add a snapshot with no requirements: only
the Idempotency-Key keeps a retry from applying them twice.

* A answers a commit, the relay between the client and A drops the answer: the retry through B
  replays A's stored outcome; the table has the one snapshot.
* A holds a key (stalled mid-commit), the retry through B waits while A is alive (even paused with
  SIGSTOP), and once A is SIGKILLed B takes the key over and answers within 5 s; one snapshot.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
import sqlalchemy as sa

from tests.integration.test_idempotency import append
from tests.support.faults import FaultProxy, fault_proxy
from tests.support.postgres import scratch_database
from tests.support.rest import create_namespace, create_table, table_url
from tests.support.server import ProxyProcess

pytestmark = pytest.mark.postgres

Replicas = tuple[ProxyProcess, ProxyProcess, FaultProxy, str]


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    with scratch_database() as url:
        parsed = urlparse(url)
        with fault_proxy(parsed.hostname or "127.0.0.1", parsed.port or 5432) as relay:
            relayed = url.replace(f"@{parsed.hostname}:{parsed.port}/", f"@{relay.address}/") + "?connect_timeout=60"
            warehouse = tmp_path_factory.mktemp("failover-warehouse").as_uri()
            catalog = '[catalogs.local]\nkind = "local"\nwarehouse = "{}"\ndatabase_url = "{}"\n'
            state = f'[state]\ndatabase_url = "{url}"\n'
            a = ProxyProcess(tmp_path_factory.mktemp("replica-a"), state + catalog.format(warehouse, relayed)).start()
            b = ProxyProcess(tmp_path_factory.mktemp("replica-b"), state + catalog.format(warehouse, url)).start()
            yield a, b, relay, url
            relay.heal()
            a.stop()
            b.stop()


def _commit(base: str, url: str, body: bytes, key: str, timeout: float = 60) -> httpx.Response:
    headers = {"Idempotency-Key": key, "Content-Type": "application/json"}
    return httpx.post(f"{base}{url}", content=body, headers=headers, timeout=timeout)


def _table(replica: ProxyProcess, url: str) -> dict[str, Any]:
    metadata: dict[str, Any] = httpx.get(f"{replica.url}{url}", timeout=30).json()["metadata"]
    return metadata


def _new_table(replica: ProxyProcess, namespace: str) -> tuple[str, bytes]:
    with httpx.Client(base_url=replica.url, timeout=30) as http:
        create_namespace(http, namespace)
        created = create_table(http, (namespace,), "t")
    return table_url((namespace,), "t"), json.dumps(append(created["metadata"]["location"])).encode()


def test_commit_whose_answer_was_cut_is_found_by_the_retry_on_the_other_replica(
    replicas: Replicas, ns_name: str
) -> None:
    a, b, _, _ = replicas
    url, body = _new_table(b, ns_name)
    key = str(uuid.uuid4())
    with fault_proxy("127.0.0.1", a.port) as front:
        front.cut_after_request(key.encode())  # A answers; the client never hears it
        with pytest.raises(httpx.TransportError):
            _commit(f"http://{front.address}", url, body, key)
        assert front.stats["cut_after_request"] == 1
    retry = _commit(b.url, url, body, key)
    assert retry.status_code == 200, retry.text
    assert retry.headers["idempotent-replayed"] == "true"  # A's outcome, not a second run
    table = _table(b, url)
    assert len(table["snapshots"]) == 1
    assert table["current-snapshot-id"] == retry.json()["metadata"]["current-snapshot-id"]


def test_key_of_a_killed_replica_is_taken_over_by_the_retry_within_5_seconds(replicas: Replicas, ns_name: str) -> None:
    a, b, relay, state_url = replicas
    url, body = _new_table(b, ns_name)
    key = str(uuid.uuid4())
    relay.delay = 120.0  # A's catalog database answers nothing more: A stalls mid-commit, holding the key
    first = threading.Thread(target=lambda: _swallow(lambda: _commit(a.url, url, body, key, timeout=120)))
    first.start()
    _wait_for_claim(state_url, key)

    a.send_signal(signal.SIGSTOP)  # paused, not dead: its claim must hold
    answers: list[tuple[float, httpx.Response]] = []

    def retry_through_b() -> None:
        response = _commit(b.url, url, body, key)
        answers.append((time.monotonic(), response))

    retry = threading.Thread(target=retry_through_b)
    retry.start()
    time.sleep(2.5)
    assert not answers, "the retry ran while the first holder was alive"

    a.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    retry.join(timeout=30)
    relay.heal()
    assert answers, "the retry got no answer"
    answered, response = answers[0]
    print(f"\nretry answered {answered - killed:.2f}s after the holder was killed: {response.status_code}")
    assert response.status_code == 200, response.text
    assert answered - killed < 5.0
    assert "idempotent-replayed" not in response.headers  # B ran it: A never got as far as the swap
    table = _table(b, url)
    assert len(table["snapshots"]) == 1
    again = _commit(b.url, url, body, key)
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert len(_table(b, url)["snapshots"]) == 1
    first.join(timeout=5)


def _swallow(call: Any) -> None:
    with contextlib.suppress(httpx.TransportError):  # the replica was killed under it
        call()


def _wait_for_claim(state_url: str, key: str) -> None:
    engine = sa.create_engine(state_url, poolclass=sa.pool.NullPool)
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                found = conn.execute(sa.text("SELECT 1 FROM idempotency_record WHERE key = :k"), {"k": key}).first()
            if found is not None:
                time.sleep(0.3)  # let A go on to the stalled catalog call
                return
            time.sleep(0.05)
    finally:
        engine.dispose()
    raise AssertionError("the first request never claimed its key")
