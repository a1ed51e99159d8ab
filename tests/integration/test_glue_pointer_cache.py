"""The Glue pointer cache against changes made outside the proxy: Glue's own change events (EventBridge ->
SQS, in the documented "Glue Data Catalog Table State Change" shape, on moto's SQS) make a proxy forget a
cached pointer at once; without them, ``pointer_cache_seconds`` bounds how long the change goes unseen.

A real ``irc-proxy serve`` process; Glue and SQS are moto's server; metadata files in a ``file://`` warehouse.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from tests.support.aws import ACCOUNT, REGION, client, glue_catalog_config
from tests.support.postgres import scratch_database
from tests.support.rest import SCHEMA
from tests.support.server import ProxyProcess, Serve

CATALOG = "glue"


def _outside_commit(glue: Any, database: str, name: str, location: str) -> str:
    """What another engine does: a new metadata file, and Glue's pointer moved to it (UpdateTable)."""
    moved = location.replace(".metadata.json", "-outside.metadata.json")
    shutil.copyfile(urlparse(location).path, urlparse(moved).path)
    table = glue.get_table(DatabaseName=database, Name=name)["Table"]
    parameters = dict(table["Parameters"]) | {"metadata_location": moved, "previous_metadata_location": location}
    kept = {key: table[key] for key in ("StorageDescriptor", "TableType", "Description") if key in table}
    glue.update_table(DatabaseName=database, TableInput={"Name": name, "Parameters": parameters, **kept})
    return moved


def _table_change_event(database: str, name: str) -> str:
    return json.dumps(
        {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Glue Data Catalog Table State Change",
            "source": "aws.glue",
            "account": ACCOUNT,
            "time": "2026-11-27T12:00:00Z",
            "region": REGION,
            "resources": [f"arn:aws:glue:{REGION}:{ACCOUNT}:table/{database}/{name}"],
            "detail": {"databaseName": database, "tableName": name, "typeOfChange": "UpdateTable"},
        }
    )


def _setup(http: httpx.Client, database: str) -> tuple[str, str]:
    assert http.post("/namespaces", json={"namespace": [database]}).status_code == 200
    created = http.post(f"/namespaces/{database}/tables", json={"name": "t", "schema": SCHEMA})
    assert created.status_code == 200, created.text
    return f"/namespaces/{database}/tables/t", created.json()["metadata-location"]


def _location_within(http: httpx.Client, path: str, expected: str, seconds: float) -> float | None:
    """Seconds until a load shows ``expected``, or None if it did not within ``seconds``."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if http.get(path).json()["metadata-location"] == expected:
            return time.monotonic() - started
        time.sleep(0.05)
    return None


def test_a_glue_table_state_change_event_makes_the_proxy_see_an_outside_commit(
    moto: str, serve: Serve, tmp_path: Path, ns_name: str
) -> None:
    sqs, glue = client("sqs", moto), client("glue", moto)
    queue = sqs.create_queue(QueueName=f"glue-events-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    extra = {"pointer_cache_seconds": "3600", "events_queue_url": f'"{queue}"', "events_endpoint_url": f'"{moto}"'}
    proxy = serve(glue_catalog_config(CATALOG, moto, tmp_path.as_uri(), **extra), "glue-events")
    with httpx.Client(base_url=f"{proxy.url}/v1/{CATALOG}", timeout=30) as http:
        path, location = _setup(http, ns_name)
        assert http.get(path).json()["metadata-location"] == location  # cached now
        moved = _outside_commit(glue, ns_name, "t", location)
        assert _location_within(http, path, moved, 1.0) is None  # the cache answers (one-hour ttl)
        sqs.send_message(QueueUrl=queue, MessageBody=_table_change_event(ns_name, "t"))
        took = _location_within(http, path, moved, 15.0)
        assert took is not None, "the event did not invalidate the cached pointer"
        metrics = httpx.get(f"{proxy.url}/metrics").text
    assert f'irc_proxy_pointer_cache_invalidations_total{{catalog="{CATALOG}",cause="feed"}} 1.0' in metrics
    assert "Messages" not in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0)  # consumed


def test_without_events_an_outside_commit_is_seen_after_pointer_cache_seconds(
    moto: str, serve: Serve, tmp_path: Path, ns_name: str
) -> None:
    glue = client("glue", moto)
    proxy = serve(glue_catalog_config(CATALOG, moto, tmp_path.as_uri(), pointer_cache_seconds="1.5"), "glue-ttl")
    with httpx.Client(base_url=f"{proxy.url}/v1/{CATALOG}", timeout=30) as http:
        path, location = _setup(http, ns_name)
        assert http.get(path).json()["metadata-location"] == location
        moved = _outside_commit(glue, ns_name, "t", location)
        took = _location_within(http, path, moved, 5.0)
    assert took is not None and took <= 1.5 + 0.5, took


@pytest.mark.postgres
def test_a_glue_commit_through_one_replica_is_seen_at_once_through_the_other(
    moto: str, tmp_path_factory: pytest.TempPathFactory, ns_name: str
) -> None:
    """Replicas on one PostgreSQL state database hear each other's Glue commits (pointer cache ttl one hour)."""
    warehouse = tmp_path_factory.mktemp("glue-replicas")
    with scratch_database() as url:
        config = f'[state]\ndatabase_url = "{url}"\n' + glue_catalog_config(
            CATALOG, moto, warehouse.as_uri(), pointer_cache_seconds="3600"
        )
        proxies = [ProxyProcess(tmp_path_factory.mktemp(f"glue-{n}"), config).start() for n in "ab"]
        try:
            first, second = (httpx.Client(base_url=f"{p.url}/v1/{CATALOG}", timeout=30) for p in proxies)
            path, _ = _setup(first, ns_name)
            for i in range(10):
                for _ in range(3):
                    assert second.get(path).status_code == 200  # warm: cached on B
                body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"i": str(i)}}]}
                committed = first.post(path, json=body)
                assert committed.status_code == 200, committed.text
                assert second.get(path).json()["metadata-location"] == committed.json()["metadata-location"]
            first.close()
            second.close()
        finally:
            for proxy in proxies:
                proxy.stop()
