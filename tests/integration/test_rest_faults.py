"""A remote that freezes or dies mid-run: reads are 503, commits that may have landed are 504
CommitStateUnknownException (never 409 or a 503 that reads as "nothing happened"), within the timeout.
Through a TCP fault relay: pooled connections are reused, one the remote dropped while idle is not, a read
whose answer was lost is sent once more, a commit whose answer was lost never is."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.faults import FaultProxy, fault_proxy
from tests.support.federation import front_config, rest_catalog
from tests.support.rest import SCHEMA, assert_error
from tests.support.server import ProxyProcess, Serve

TIMEOUT = 1.0


@pytest.fixture(scope="module")
def front(remote: ProxyProcess, serve: Serve) -> ProxyProcess:
    catalog = rest_catalog("remote", remote.url, timeout_seconds=TIMEOUT, connect_timeout_seconds=TIMEOUT)
    return serve(front_config(catalog), "front")


@pytest.fixture
def http(front: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=front.url, timeout=30) as client:
        yield client


def timed(call: object) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()  # type: ignore[operator]
    return response, time.monotonic() - started


def test_frozen_then_killed_remote(http: httpx.Client, remote: ProxyProcess) -> None:
    ns = f"faults_{uuid.uuid4().hex[:8]}"
    assert http.post("/v1/remote/namespaces", json={"namespace": [ns]}).status_code == 200
    created = http.post(f"/v1/remote/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA})
    assert created.status_code == 200, created.text
    table = f"/v1/remote/namespaces/{ns}/tables/t"
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    transaction = {"table-changes": [{"identifier": {"namespace": [ns], "name": "t"}} | commit]}

    remote.send_signal(signal.SIGSTOP)  # connections are still accepted by the kernel; nothing answers
    try:
        read, elapsed = timed(lambda: http.get(table))
        assert_error(read, 503, "ServiceUnavailableException", "did not answer (ReadTimeout)")
        assert elapsed < TIMEOUT + 2
        sent, elapsed = timed(lambda: http.post(table, json=commit))
        assert_error(sent, 504, "CommitStateUnknownException", "may or may not have been applied")
        assert elapsed < TIMEOUT + 2
        assert_error(http.post("/v1/remote/transactions/commit", json=transaction), 504, "CommitStateUnknownException")
        assert_error(
            http.post("/v1/remote/namespaces", json={"namespace": [ns + "x"]}), 503, "ServiceUnavailableException"
        )
    finally:
        remote.send_signal(signal.SIGCONT)

    remote.send_signal(signal.SIGKILL)  # now connections are refused: nothing can have been sent
    read, elapsed = timed(lambda: http.get(table))
    assert_error(read, 503, "ServiceUnavailableException", "unreachable (ConnectError)")
    assert elapsed < TIMEOUT + 2
    assert_error(http.post(table, json=commit), 503, "ServiceUnavailableException", "unreachable")
    assert http.head(table).status_code == 503

    remote.start()
    back = http.get(table)
    assert back.status_code == 200, back.text
    # Whether the frozen commits landed depends on what the remote did before it was killed: unknown, as reported.
    defaults = {"write.parquet.compression-codec": "zstd"}  # what every new table gets
    assert back.json()["metadata"]["properties"] in (defaults, defaults | {"k": "v"})


@pytest.fixture(scope="module")
def relayed(remote: ProxyProcess, serve: Serve) -> Iterator[tuple[FaultProxy, ProxyProcess]]:
    """A front whose upstream is the remote behind a fault relay."""
    address = urlsplit(remote.url)
    with fault_proxy(address.hostname or "127.0.0.1", address.port or 80) as relay:
        catalog = rest_catalog(
            "remote", f"http://{relay.address}", timeout_seconds=TIMEOUT, connect_timeout_seconds=TIMEOUT
        )
        yield relay, serve(front_config(catalog), "relayed-front")


def test_pooled_connections_are_reused_and_lost_answers_resent_only_for_reads(
    relayed: tuple[FaultProxy, ProxyProcess],
) -> None:
    relay, front = relayed
    ns = f"relay_{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=front.url, timeout=30) as http:
        assert http.post("/v1/remote/namespaces", json={"namespace": [ns]}).status_code == 200
        for name in ("t", "lost_read", "lost_commit"):
            created = http.post(f"/v1/remote/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA})
            assert created.status_code == 200, created.text
        table = f"/v1/remote/namespaces/{ns}/tables/t"
        accepted = relay.stats["accepted"]
        for _ in range(10):
            assert http.get(table).status_code == 200
        assert relay.stats["accepted"] == accepted  # one kept-alive connection, no new ones

        relay.cut_all()  # the remote's side of the idle pooled connection is gone
        assert http.get(table).status_code == 200
        assert relay.stats["accepted"] == accepted + 1

        relay.cut_after_request(f"/namespaces/{ns}/tables/lost_read HTTP/1.1".encode())
        assert_error(http.get(f"/v1/remote/namespaces/{ns}/tables/lost_read"), 503, "ServiceUnavailableException")
        assert relay.stats["doomed"] == 2  # sent once more after the first answer was lost
        relay.heal()

        relay.cut_after_request(f"/namespaces/{ns}/tables/lost_commit HTTP/1.1".encode())
        commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
        lost = http.post(f"/v1/remote/namespaces/{ns}/tables/lost_commit", json=commit)
        assert_error(lost, 504, "CommitStateUnknownException", "may or may not have been applied")
        assert relay.stats["doomed"] == 3  # never sent twice
        relay.heal()
        landed = http.get(f"/v1/remote/namespaces/{ns}/tables/lost_commit").json()["metadata"]["properties"]
        assert landed.get("k") == "v"  # the remote did apply it: "unknown" was the honest answer
