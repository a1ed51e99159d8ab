"""Attacks on the pointer caches (issue 29): the Glue event queue and the PostgreSQL change feed.

A real ``irc-proxy serve`` process; Glue and SQS are moto's server.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.test_glue_pointer_cache import _location_within, _outside_commit, _setup, _table_change_event
from tests.integration.test_replicas_postgres import _pointer_metrics
from tests.support.aws import client, glue_catalog_config
from tests.support.postgres import scratch_database
from tests.support.rest import SCHEMA, create_namespace, create_table, table_url
from tests.support.server import ProxyProcess, Serve

CATALOG = "glue"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProxyProcess, ProxyProcess]]:
    """Two replicas of one local catalog on one PostgreSQL database (also their state database)."""
    with scratch_database() as url:
        warehouse = tmp_path_factory.mktemp("replicas-warehouse")
        config = (
            f'[state]\ndatabase_url = "{url}"\n'
            f'[catalogs.local]\nkind = "local"\ndatabase_url = "{url}"\nwarehouse = "{warehouse.as_uri()}"\n'
        )
        a = ProxyProcess(tmp_path_factory.mktemp("replica-a"), config).start()
        b = ProxyProcess(tmp_path_factory.mktemp("replica-b"), config).start()
        yield a, b
        a.stop()
        b.stop()


def test_a_poison_message_on_the_glue_event_queue_does_not_wedge_the_poller(
    moto: str, serve: Serve, tmp_path: Path, ns_name: str
) -> None:
    """Anyone who may send to the queue sends a body nested too deep to parse (json raises RecursionError,
    not ValueError): the batch it came in must still be applied and deleted, or the poison message and
    every event received with it come back forever and outside commits go unseen for the whole ttl."""
    sqs, glue = client("sqs", moto), client("glue", moto)
    queue = sqs.create_queue(QueueName=f"glue-poison-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    extra = {"pointer_cache_seconds": "3600", "events_queue_url": f'"{queue}"', "events_endpoint_url": f'"{moto}"'}
    proxy = serve(glue_catalog_config(CATALOG, moto, tmp_path.as_uri(), **extra), "glue-poison")
    with httpx.Client(base_url=f"{proxy.url}/v1/{CATALOG}", timeout=30) as http:
        path, location = _setup(http, ns_name)
        assert http.get(path).json()["metadata-location"] == location  # cached, the poller started
        time.sleep(0.5)
        moved = _outside_commit(glue, ns_name, "t", location)
        sqs.send_message_batch(
            QueueUrl=queue,
            Entries=[
                {"Id": "poison", "MessageBody": "[" * 50_000},
                {"Id": "huh", "MessageBody": '{"source": "aws.glue", "detail": {"databaseName": [[[]]]}}'},
                {"Id": "event", "MessageBody": _table_change_event(ns_name, "t")},
            ],
        )
        took = _location_within(http, path, moved, 15.0)
        assert took is not None, "the event sent with a poison message was never applied"
    assert "Messages" not in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0)  # all consumed


@pytest.mark.postgres
def test_catalogs_on_one_database_share_one_change_feed(tmp_path_factory: pytest.TempPathFactory, ns_name: str) -> None:
    """Cost: every local catalog on one PostgreSQL database (and the state database) is served by one change
    feed per process (two connections, one heartbeat), not one per catalog: N feeds per replica would
    open 2N connections and send 5N syncs a second that every feed of every replica receives and parses
    (N^2 R^2 deliveries)."""
    import sqlalchemy

    from irc_proxy.backends.pointer_feed import APPLICATION_NAME

    with scratch_database() as url:
        warehouse = tmp_path_factory.mktemp("feeds-warehouse")
        names = [f"c{i}" for i in range(4)]
        config = f'[state]\ndatabase_url = "{url}"\n' + "".join(
            f'[catalogs.{n}]\nkind = "local"\ndatabase_url = "{url}"\nwarehouse = "{warehouse.as_uri()}/{n}"\n'
            for n in names
        )
        proxy = ProxyProcess(tmp_path_factory.mktemp("feeds"), config).start()
        try:
            with httpx.Client(base_url=proxy.url, timeout=60) as http:
                for n in names:
                    assert http.post(f"/v1/{n}/namespaces", json={"namespace": [ns_name]}).status_code == 200
                    created = http.post(f"/v1/{n}/namespaces/{ns_name}/tables", json={"name": "t", "schema": SCHEMA})
                    assert created.status_code == 200, created.text
                    assert http.get(f"/v1/{n}/namespaces/{ns_name}/tables/t").status_code == 200
            time.sleep(0.5)
            engine = sqlalchemy.create_engine(url)
            with engine.connect() as conn:
                feeds = conn.execute(
                    sqlalchemy.text(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = :n "
                        "AND datname = current_database()"
                    ),
                    {"n": APPLICATION_NAME},
                ).scalar_one()
            engine.dispose()
        finally:
            proxy.stop()
    assert feeds == 2, f"{feeds} change-feed connections for {len(names)} catalogs on one database"


def test_a_glue_event_in_lower_case_drops_a_pointer_cached_under_a_mixed_case_name(
    moto: str, serve: Serve, tmp_path: Path, ns_name: str
) -> None:
    """Glue stores and answers names case-insensitively (lower case) and its change events name tables in
    lower case; a client that loads ``T`` must not keep being served the cached pointer of ``T`` after an
    event about ``t`` (with events a deployment sets a long ttl: a dropped table would stay loadable, its
    files vended, for that long). moto keeps the case it was given, so the table here is ``T`` in moto
    while the event names it as Glue would."""
    sqs, glue = client("sqs", moto), client("glue", moto)
    queue = sqs.create_queue(QueueName=f"glue-case-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    extra = {"pointer_cache_seconds": "3600", "events_queue_url": f'"{queue}"', "events_endpoint_url": f'"{moto}"'}
    proxy = serve(glue_catalog_config(CATALOG, moto, tmp_path.as_uri(), **extra), "glue-case")
    with httpx.Client(base_url=f"{proxy.url}/v1/{CATALOG}", timeout=30) as http:
        assert http.post("/namespaces", json={"namespace": [ns_name]}).status_code == 200
        created = http.post(f"/namespaces/{ns_name}/tables", json={"name": "T", "schema": SCHEMA})
        assert created.status_code == 200, created.text
        path, location = f"/namespaces/{ns_name}/tables/T", created.json()["metadata-location"]
        assert http.get(path).json()["metadata-location"] == location  # cached under "T"
        moved = _outside_commit(glue, ns_name, "T", location)
        sqs.send_message(QueueUrl=queue, MessageBody=_table_change_event(ns_name.lower(), "t"))
        took = _location_within(http, path, moved, 15.0)
        assert took is not None, "an event naming the table in Glue's lower case left the cached pointer"


@pytest.mark.postgres
def test_a_transaction_over_many_long_names_does_not_flush_the_other_replicas_caches(
    replicas: tuple[ProxyProcess, ProxyProcess], ns_name: str
) -> None:
    """A writer commits one transaction over 16 of its own tables with 255-byte names: the change names
    more than a NOTIFY payload holds (< 8000 bytes). Sent as a flush, every such commit would empty every
    replica's cache of the whole catalog (everyone's tables): the writer turns the cache off for all at
    its commit rate. The other replica must keep serving an unrelated table from its cache, and still
    see the writer's commit at once."""
    a, b = replicas
    with httpx.Client(base_url=a.url, timeout=60) as first, httpx.Client(base_url=b.url, timeout=60) as second:
        namespace = ns_name + "n" * (240 - len(ns_name))
        create_namespace(first, namespace)
        names = [f"{i:02d}" + "t" * 238 for i in range(16)]  # ~500 bytes a key: 16 > 7000 bytes
        for name in names:
            create_table(first, (namespace,), name)
        create_table(first, (namespace,), "bystander")
        bystander = table_url((namespace,), "bystander")
        assert second.get(bystander).status_code == 200
        time.sleep(1.5)  # both feeds know their members
        assert second.get(bystander).status_code == 200  # cached
        last = table_url((namespace,), names[-1])
        assert second.get(last).status_code == 200
        before = _pointer_metrics(second)
        changes = [
            {
                "identifier": {"namespace": [namespace], "name": name},
                "requirements": [],
                "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
            }
            for name in names
        ]
        committed = first.post("/v1/local/transactions/commit", json={"table-changes": changes})
        assert committed.status_code == 204, committed.text
        assert second.get(last).json()["metadata"]["properties"]["k"] == "v"  # read-your-writes
        assert second.get(bystander).status_code == 200
        after = _pointer_metrics(second)
    assert after["hits"] - before["hits"] >= 1, "the other replica's cache of an unrelated table was flushed"


@pytest.mark.postgres
def test_a_stalled_replica_delays_commits_by_one_lease_at_most_and_misses_none(
    replicas: tuple[ProxyProcess, ProxyProcess], ns_name: str
) -> None:
    """A replica that stops acknowledging (its process frozen: connections open, nothing read or sent)
    costs the other's commits one lease once, not every commit; thawed, it serves the latest pointer at
    once (its cache is not trusted until a fresh sync came back)."""
    import os
    import signal

    from irc_proxy.backends.pointer_feed import LEASE_SECONDS

    a, b = replicas
    with httpx.Client(base_url=a.url, timeout=60) as first, httpx.Client(base_url=b.url, timeout=60) as second:
        create_namespace(first, ns_name)
        create_table(first, (ns_name,), "stall")
        url = table_url((ns_name,), "stall")
        assert second.get(url).status_code == 200
        time.sleep(1.5)
        assert second.get(url).status_code == 200  # cached on B
        os.kill(b.pid, signal.SIGSTOP)
        try:
            took = []
            for i in range(8):
                started = time.monotonic()
                body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"i": str(i)}}]}
                committed = first.post(url, json=body)
                assert committed.status_code == 200, committed.text
                took.append(time.monotonic() - started)
        finally:
            os.kill(b.pid, signal.SIGCONT)
        loaded = second.get(url).json()
    print(f"\ncommit seconds while the other replica is frozen: {[round(t, 3) for t in took]}")
    assert loaded["metadata-location"] == committed.json()["metadata-location"]
    assert sum(took) < 2 * LEASE_SECONDS + 1.0, took
    assert max(took[3:]) < 0.5, took


@pytest.mark.postgres
def test_a_dropped_or_renamed_table_is_gone_at_once_from_the_other_replicas_cache(
    replicas: tuple[ProxyProcess, ProxyProcess], ns_name: str
) -> None:
    """B serves both tables from its cache; A drops one and renames the other: B's very next loads (and
    its scan planning) answer 404 for the old names, the renamed table under its new name (holds)."""
    a, b = replicas
    with httpx.Client(base_url=a.url, timeout=60) as first, httpx.Client(base_url=b.url, timeout=60) as second:
        create_namespace(first, ns_name)
        create_table(first, (ns_name,), "dropped")
        create_table(first, (ns_name,), "old")
        dropped, old = table_url((ns_name,), "dropped"), table_url((ns_name,), "old")
        for _ in range(2):
            assert second.get(dropped).status_code == 200 and second.get(old).status_code == 200
        assert second.post(f"{dropped}/plan", json={}).status_code == 200
        assert first.delete(dropped).status_code == 204
        assert second.get(dropped).status_code == 404
        assert second.post(f"{dropped}/plan", json={}).status_code == 404
        renamed = first.post(
            "/v1/local/tables/rename",
            json={
                "source": {"namespace": [ns_name], "name": "old"},
                "destination": {"namespace": [ns_name], "name": "new"},
            },
        )
        assert renamed.status_code == 204, renamed.text
        assert second.get(old).status_code == 404
        assert second.get(table_url((ns_name,), "new")).status_code == 200
