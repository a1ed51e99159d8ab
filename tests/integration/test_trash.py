"""The trash (issue 17): a dropped table or view is kept, restorable, and a table is purged only when its
retention ends; the management API lists, restores and expunges entries under the drop and create
privileges, with the spec's error model; the command line does the same, and everything is audited.

The local catalogs are served by one real ``irc-proxy serve`` process (pyiceberg writes data through
its socket, and expiry runs on the server's own loop): ``local`` keeps drops for the default ``P7D``,
``brief`` for ``PT3S``, ``instant`` not at all (``PT0S``); expiry runs every 0.2 s. Replicas sharing
expiry are two processes on one scratch PostgreSQL; OAuth2 and Glue (on moto) are served in-process.
Races (restore against create, two drops, a drop against commits, a register against the expiry's purge)
are repeated many times: each would show within a few rounds if its guard were lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlparse

import httpx
import pyarrow as pa
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import Table

from tests.support.aws import client as aws_client
from tests.support.aws import glue_catalog_config
from tests.support.console import root_config
from tests.support.in_process import ServeInProcess
from tests.support.postgres import scratch_database
from tests.support.rest import MGMT, SCHEMA, assert_error, make_principal, ns_path, token_of
from tests.support.server import ProxyProcess, Serve

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "data": pa.array(["a", "b", "c"])})
SEP = "\x1f"
CONFIG = """
[server]
trash_expiry_interval_seconds = 0.2
[catalogs.local]
kind = "local"
[catalogs.brief]
kind = "local"
drop_retention = "PT3S"
[catalogs.instant]
kind = "local"
drop_retention = "PT0S"
[catalogs.spare]
kind = "local"
"""
BRIEF = timedelta(seconds=3)


# Helpers ---------------------------------------------------------------------------------------------------
def tables_url(catalog: str, namespace: tuple[str, ...]) -> str:
    return f"/v1/{catalog}/namespaces/{ns_path(*namespace)}/tables"


def table_url(catalog: str, namespace: tuple[str, ...], name: str) -> str:
    return f"{tables_url(catalog, namespace)}/{quote(name, safe='')}"


def trash_url(catalog: str, entry_id: str = "") -> str:
    return f"{MGMT}/catalogs/{catalog}/trash" + (f"/{entry_id}" if entry_id else "")


def new_namespace(http: httpx.Client, catalog: str, *levels: str) -> tuple[str, ...]:
    response = http.post(f"/v1/{catalog}/namespaces", json={"namespace": list(levels)})
    assert response.status_code == 200, response.text
    return tuple(levels)


def create_table(http: httpx.Client, catalog: str, namespace: tuple[str, ...], name: str) -> httpx.Response:
    return http.post(tables_url(catalog, namespace), json={"name": name, "schema": SCHEMA})


def created(http: httpx.Client, catalog: str, namespace: tuple[str, ...], name: str) -> dict[str, Any]:
    response = create_table(http, catalog, namespace, name)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def drop(http: httpx.Client, catalog: str, namespace: tuple[str, ...], name: str, purge: bool = False) -> None:
    params = {"purgeRequested": "true"} if purge else {}
    response = http.delete(table_url(catalog, namespace, name), params=params)
    assert response.status_code == 204, response.text


def listed(http: httpx.Client, catalog: str, **params: str) -> dict[str, Any]:
    response = http.get(trash_url(catalog), params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def entries_in(http: httpx.Client, catalog: str, namespace: tuple[str, ...]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = listed(http, catalog, namespace=SEP.join(namespace))["entries"]
    return entries


def only_entry(http: httpx.Client, catalog: str, namespace: tuple[str, ...]) -> dict[str, Any]:
    entries = entries_in(http, catalog, namespace)
    assert len(entries) == 1, entries
    return entries[0]


def restore(http: httpx.Client, catalog: str, entry_id: str, **body: Any) -> httpx.Response:
    return http.post(trash_url(catalog, entry_id) + "/restore", json=body)


def to(namespace: tuple[str, ...], name: str) -> dict[str, Any]:
    return {"namespace": list(namespace), "name": name}


def table_names(http: httpx.Client, catalog: str, namespace: tuple[str, ...]) -> set[str]:
    response = http.get(tables_url(catalog, namespace))
    assert response.status_code == 200, response.text
    return {ident["name"] for ident in response.json()["identifiers"]}


def path_of(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def files_under(location: str) -> set[Path]:
    return {p for p in path_of(location).rglob("*") if p.is_file()}


def counter(http: httpx.Client, name: str, **labels: str) -> float:
    """The sum of a counter's samples (those with ``labels``) in ``/metrics``."""
    families = text_string_to_metric_families(http.get("/metrics").text)
    return sum(
        sample.value
        for family in families
        for sample in family.samples
        if sample.name == f"{name}_total" and all(sample.labels.get(k) == v for k, v in labels.items())
    )


def trash_events(http: httpx.Client, event: str) -> float:
    return counter(http, "irc_proxy_trash_events", event=event)


def with_data(catalog: RestCatalog, namespace: tuple[str, ...], name: str, appends: int = 2) -> Table:
    table: Table = catalog.create_table((*namespace, name), schema=ROWS.schema)
    for _ in range(appends):
        table.append(ROWS)
    return table


def wait_until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        time.sleep(0.1)


def moment(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    assert parsed.tzinfo is not None, text
    return parsed


# Fixtures --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve(CONFIG, "trash")


@pytest.fixture
def http(proxy: ProxyProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=60) as client:
        yield client


def iceberg(proxy: ProxyProcess, catalog: str) -> RestCatalog:
    return RestCatalog(f"trash-{catalog}", uri=proxy.url, warehouse=catalog)


# 1. Drop, reuse the name, restore ---------------------------------------------------------------------------
def test_drop_keeps_the_table_frees_its_name_and_restore_brings_back_snapshots_refs_and_rows(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    ns = new_namespace(http, "local", ns_name)
    catalog = iceberg(proxy, "local")
    table = with_data(catalog, ns, "events")
    first = table.metadata.snapshots[0].snapshot_id
    table.manage_snapshots().create_tag(first, "v1").create_branch(first, "audit").commit()
    before = http.get(table_url("local", ns, "events")).json()
    location = before["metadata-location"]
    kept, restored = trash_events(http, "kept"), trash_events(http, "restored")

    drop(http, "local", ns, "events")
    assert "events" not in table_names(http, "local", ns)
    assert_error(http.get(table_url("local", ns, "events")), 404, "NoSuchTableException")
    assert http.head(table_url("local", ns, "events")).status_code == 404
    assert path_of(location).is_file() and files_under(before["metadata"]["location"])

    entry = only_entry(http, "local", ns)
    assert entry["kind"] == "table"
    assert entry["identifier"] == to(ns, "events")
    assert entry["metadata-location"] == location
    assert entry["dropped-by"] == "anonymous"
    assert entry["purge-requested"] is False
    dropped_at, expires_at = moment(entry["dropped-at"]), moment(entry["expires-at"])
    assert abs(datetime.now(dropped_at.tzinfo) - dropped_at) < timedelta(minutes=1)
    assert expires_at - dropped_at == timedelta(days=7)
    assert trash_events(http, "kept") == kept + 1

    # The name is free at once: a new table gets it (and storage of its own).
    newcomer = created(http, "local", ns, "events")
    assert newcomer["metadata"]["location"] != before["metadata"]["location"]
    occupied = restore(http, "local", entry["id"])
    assert_error(occupied, 409, "AlreadyExistsException", "events")
    assert only_entry(http, "local", ns)["id"] == entry["id"]

    back = restore(http, "local", entry["id"], identifier=to(ns, "events_restored"))
    assert back.status_code == 200, back.text
    assert back.json() == {"identifier": to(ns, "events_restored"), "kind": "table", "metadata-location": location}
    assert entries_in(http, "local", ns) == []
    assert trash_events(http, "restored") == restored + 1
    assert_error(restore(http, "local", entry["id"]), 404, "NotFoundException")

    loaded = http.get(table_url("local", ns, "events_restored"))
    assert loaded.status_code == 200, loaded.text
    after = loaded.json()
    assert after["metadata-location"] == location
    assert after["metadata"]["snapshots"] == before["metadata"]["snapshots"]
    assert after["metadata"]["refs"] == before["metadata"]["refs"]
    assert set(after["metadata"]["refs"]) == {"main", "v1", "audit"}
    assert table_names(http, "local", ns) == {"events", "events_restored"}
    back_table = catalog.load_table((*ns, "events_restored"))
    assert back_table.scan().to_arrow().num_rows == 2 * ROWS.num_rows
    assert back_table.scan(snapshot_id=first).to_arrow().sort_by("id") == ROWS
    assert catalog.load_table((*ns, "events")).scan().to_arrow().num_rows == 0


# 2. Restore into a missing namespace ------------------------------------------------------------------------
def test_restore_into_a_missing_namespace_is_404_naming_it_unless_it_is_created(
    http: httpx.Client, ns_name: str
) -> None:
    ns = new_namespace(http, "local", ns_name)
    location = created(http, "local", ns, "t")["metadata-location"]
    drop(http, "local", ns, "t")
    entry = only_entry(http, "local", ns)
    nested = (f"{ns_name}_a", "b")

    for bad in ({"identifier": {"namespace": list(nested)}}, {"identifier": to((), "t")}, {"create-namespace": "yes"}):
        assert_error(restore(http, "local", entry["id"], **bad), 400, "BadRequestException")
    malformed = http.post(trash_url("local", entry["id"]) + "/restore", content=b"{not json")
    assert_error(malformed, 400, "BadRequestException")
    missing = restore(http, "local", entry["id"], identifier=to(nested, "t"))
    assert_error(missing, 404, "NoSuchNamespaceException", f"{ns_name}_a.b")
    assert only_entry(http, "local", ns)["id"] == entry["id"]

    back = restore(http, "local", entry["id"], identifier=to(nested, "t"), **{"create-namespace": True})
    assert back.status_code == 200, back.text
    assert back.json() == {"identifier": to(nested, "t"), "kind": "table", "metadata-location": location}
    assert http.get(f"/v1/local/namespaces/{ns_path(*nested)}").status_code == 200
    assert http.get(table_url("local", nested, "t")).json()["metadata-location"] == location
    assert entries_in(http, "local", ns) == []


# 3. Deferred purge ------------------------------------------------------------------------------------------
def test_purge_waits_for_the_end_of_the_retention_and_a_plain_drop_keeps_its_files(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    ns = new_namespace(http, "brief", ns_name)
    catalog = iceberg(proxy, "brief")
    purged, restored, kept = (with_data(catalog, ns, name) for name in ("purged", "restored", "kept"))
    files = {t.name()[-1]: files_under(t.metadata.location) for t in (purged, restored, kept)}
    drop(http, "brief", ns, "purged", purge=True)
    drop(http, "brief", ns, "restored", purge=True)
    drop(http, "brief", ns, "kept")

    entries = {e["identifier"]["name"]: e for e in entries_in(http, "brief", ns)}
    assert set(entries) == {"purged", "restored", "kept"}
    assert entries["purged"]["purge-requested"] is True and entries["kept"]["purge-requested"] is False
    expires_at = moment(entries["purged"]["expires-at"])
    assert expires_at - moment(entries["purged"]["dropped-at"]) == BRIEF
    assert files_under(purged.metadata.location) == files["purged"]  # right after a purging drop: all there
    back = restore(http, "brief", entries["restored"]["id"])
    assert back.status_code == 200, back.text

    time.sleep(max(0.0, (expires_at - datetime.now(expires_at.tzinfo)).total_seconds() - 1.0))
    assert files_under(purged.metadata.location) == files["purged"]  # a second before the end: still there
    wait_until(lambda: not files_under(purged.metadata.location), 6, "the deferred purge")
    wait_until(lambda: not entries_in(http, "brief", ns), 3, "the expired entries go")
    assert files_under(kept.metadata.location) == files["kept"]
    assert files_under(restored.metadata.location) >= files["restored"]  # restored: never purged
    assert catalog.load_table((*ns, "restored")).scan().to_arrow().num_rows == 2 * ROWS.num_rows
    assert_error(http.get(table_url("brief", ns, "purged")), 404, "NoSuchTableException")


# 4. Drop, then register the dropped metadata ----------------------------------------------------------------
def test_registering_a_dropped_tables_metadata_takes_it_out_of_the_trash_and_expiry_purges_nothing(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    ns = new_namespace(http, "brief", ns_name)
    catalog = iceberg(proxy, "brief")
    table = with_data(catalog, ns, "original")
    files = files_under(table.metadata.location)
    claimed = trash_events(http, "claimed-by-register")
    drop(http, "brief", ns, "original", purge=True)
    entry = only_entry(http, "brief", ns)
    assert entry["purge-requested"] is True

    body = {"name": "moved", "metadata-location": table.metadata_location}
    registered = http.post(f"/v1/brief/namespaces/{ns_path(*ns)}/register", json=body)
    assert registered.status_code == 200, registered.text
    assert entries_in(http, "brief", ns) == []
    assert trash_events(http, "claimed-by-register") == claimed + 1
    assert_error(restore(http, "brief", entry["id"]), 404, "NotFoundException")

    time.sleep(BRIEF.total_seconds() + 1.5)  # the retention and several expiry rounds
    assert files_under(table.metadata.location) >= files
    assert catalog.load_table((*ns, "moved")).scan().to_arrow().num_rows == 2 * ROWS.num_rows


def test_a_register_racing_the_expiry_purge_either_keeps_every_file_or_is_refused(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    """Registers are fired at each entry from just before its expiry until it is gone: whichever wins, a
    registered table never loses a file (the purge holds the table's storage while it deletes)."""
    ns = new_namespace(http, "brief", ns_name)
    catalog = iceberg(proxy, "brief")
    tables = {f"t{i}": with_data(catalog, ns, f"t{i}", appends=3) for i in range(4)}
    for name in tables:
        drop(http, "brief", ns, name, purge=True)
    expires = {e["identifier"]["name"]: moment(e["expires-at"]) for e in entries_in(http, "brief", ns)}

    offsets = dict(zip(tables, (-0.1, 0.05, 0.15, 0.3), strict=True))  # around the expiry rounds (every 0.2 s)

    def hammer(name: str) -> bool:
        """Register ``name``'s metadata as ``<name>_back`` until it lands or the entry is gone."""
        wait = (expires[name] - datetime.now(expires[name].tzinfo)).total_seconds() + offsets[name]
        time.sleep(max(0.0, wait))
        body = {"name": f"{name}_back", "metadata-location": tables[name].metadata_location}
        with httpx.Client(base_url=proxy.url, timeout=60) as client:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                answer = client.post(f"/v1/brief/namespaces/{ns_path(*ns)}/register", json=body)
                if answer.status_code == 200:
                    return True
                assert answer.status_code < 500, answer.text
                if not any(e["identifier"]["name"] == name for e in entries_in(client, "brief", ns)):
                    return False
        raise AssertionError(f"{name}: neither registered nor expired within 10 s")

    with ThreadPoolExecutor(len(tables)) as pool:
        outcome = dict(zip(tables, pool.map(hammer, tables), strict=True))
    time.sleep(1.0)  # a purge that lost the race would be deleting now
    for name, registered in outcome.items():
        if registered:
            back = catalog.load_table((*ns, f"{name}_back"))
            assert back.scan().to_arrow().num_rows == 3 * ROWS.num_rows, name
        else:
            assert_error(http.get(table_url("brief", ns, f"{name}_back")), 404, "NoSuchTableException")


# 5. Expunge -------------------------------------------------------------------------------------------------
def test_expunge_purges_at_once_when_asked_and_the_entry_is_gone(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    ns = new_namespace(http, "local", ns_name)
    catalog = iceberg(proxy, "local")
    purged, kept = with_data(catalog, ns, "purged"), with_data(catalog, ns, "kept")
    kept_files = files_under(kept.metadata.location)
    expunged = trash_events(http, "expunged")
    drop(http, "local", ns, "purged", purge=True)
    drop(http, "local", ns, "kept")
    entries = {e["identifier"]["name"]: e["id"] for e in entries_in(http, "local", ns)}

    assert files_under(purged.metadata.location)
    response = http.delete(trash_url("local", entries["purged"]))
    assert response.status_code == 204, response.text
    assert files_under(purged.metadata.location) == set()
    assert_error(http.delete(trash_url("local", entries["purged"])), 404, "NotFoundException")
    assert_error(restore(http, "local", entries["purged"]), 404, "NotFoundException")

    assert http.delete(trash_url("local", entries["kept"])).status_code == 204
    assert files_under(kept.metadata.location) == kept_files  # no purge asked for: files stay
    assert entries_in(http, "local", ns) == []
    assert trash_events(http, "expunged") == expunged + 2
    assert_error(http.delete(trash_url("local", "no-such-entry")), 404, "NotFoundException")


# 6. Two replicas share expiry -------------------------------------------------------------------------------
@pytest.mark.postgres
def test_two_replicas_expire_each_entry_exactly_once(tmp_path_factory: pytest.TempPathFactory, ns_name: str) -> None:
    with scratch_database() as url:
        warehouse = tmp_path_factory.mktemp("trash-shared-warehouse")
        config = (
            '[server]\ndrop_retention = "PT2S"\ntrash_expiry_interval_seconds = 0.1\n'
            f'[state]\ndatabase_url = "{url}"\n'
            f'[catalogs.local]\nkind = "local"\ndatabase_url = "{url}"\nwarehouse = "{warehouse.as_uri()}"\n'
        )
        replicas = [ProxyProcess(tmp_path_factory.mktemp(f"trash-replica-{n}"), config).start() for n in "ab"]
        try:
            a, b = (httpx.Client(base_url=r.url, timeout=60) for r in replicas)
            ns = new_namespace(a, "local", ns_name)
            catalog = iceberg(replicas[0], "local")
            tables = [with_data(catalog, ns, f"t{i}", appends=1) for i in range(6)]
            assert all(files_under(t.metadata.location) for t in tables)
            expired = trash_events(a, "expired") + trash_events(b, "expired")
            for table in tables:
                drop(a, "local", ns, table.name()[-1], purge=True)
            assert len(entries_in(b, "local", ns)) == 6  # the trash is shared

            wait_until(lambda: not entries_in(a, "local", ns) and not entries_in(b, "local", ns), 15, "expiry")
            wait_until(lambda: not any(files_under(t.metadata.location) for t in tables), 5, "every purge")
            time.sleep(0.5)  # a late (double) expiry would show now
            counts = {name: trash_events(c, "expired") for name, c in (("a", a), ("b", b))}
            assert sum(counts.values()) == expired + 6, counts
            print(f"\nexpired by replica: {counts}")
            for table in tables:
                assert_error(b.get(table_url("local", ns, table.name()[-1])), 404, "NoSuchTableException")
            a.close()
            b.close()
        finally:
            for replica in replicas:
                replica.stop()


# 7. Restore racing a create ---------------------------------------------------------------------------------
def race(http: httpx.Client, ns: tuple[str, ...], name: str) -> tuple[str, str, httpx.Response, httpx.Response]:
    """Create ``name``, drop it, then restore it and create the name again at once: (its entry, its
    metadata location, the restore's answer, the create's answer)."""
    location = created(http, "local", ns, name)["metadata-location"]
    drop(http, "local", ns, name)
    entry_id = only_entry(http, "local", ns)["id"]
    start = threading.Barrier(2)

    def restoring() -> httpx.Response:
        start.wait()
        return restore(http, "local", entry_id)

    def creating() -> httpx.Response:
        start.wait()
        return create_table(http, "local", ns, name)

    with ThreadPoolExecutor(max_workers=2) as pool:
        restored, made = pool.submit(restoring), pool.submit(creating)
        return entry_id, location, restored.result(), made.result()


def test_a_restore_racing_a_create_of_the_same_name_has_exactly_one_winner(http: httpx.Client, ns_name: str) -> None:
    ns = new_namespace(http, "local", ns_name)
    winners = []
    for i in range(8):
        entry_id, location, restored, made = race(http, ns, f"race{i}")
        statuses = (restored.status_code, made.status_code)
        assert statuses in {(200, 409), (409, 200)}, (restored.text, made.text)
        current = http.get(table_url("local", ns, f"race{i}")).json()["metadata-location"]
        if restored.status_code == 200:
            winners.append("restore")
            assert_error(made, 409, "AlreadyExistsException")
            assert restored.json()["metadata-location"] == current == location
            assert entries_in(http, "local", ns) == []
        else:
            winners.append("create")
            assert restored.json()["error"]["code"] == 409
            assert current == made.json()["metadata-location"] != location
            assert only_entry(http, "local", ns)["id"] == entry_id  # still restorable, elsewhere
            assert http.delete(trash_url("local", entry_id)).status_code == 204
    print(f"\nrestore vs create winners: {winners}")


def test_a_restore_that_loses_the_race_answers_already_exists(http: httpx.Client, ns_name: str) -> None:
    ns = new_namespace(http, "local", ns_name)
    lost = 0
    for i in range(30):  # the restore loses about 4 races in 10
        entry_id, _, restored, made = race(http, ns, f"race{i}")
        if restored.status_code == 200:
            continue
        assert made.status_code == 200, made.text
        assert_error(restored, 409, "AlreadyExistsException", f"race{i}")
        assert http.delete(trash_url("local", entry_id)).status_code == 204
        lost += 1
        if lost == 3:
            return
    pytest.skip(f"the restore lost only {lost} of 30 races")


def test_two_drops_of_one_table_at_once_are_one_204_one_404_and_one_entry(proxy: ProxyProcess, ns_name: str) -> None:
    limits = httpx.Limits(max_connections=32)
    with httpx.Client(base_url=proxy.url, timeout=60, limits=limits) as http:
        ns = new_namespace(http, "local", ns_name)
        for round_ in range(10):  # 16 drops at once (two per table): nearly every round shows it on SQLite
            names = [f"r{round_}_{k}" for k in range(8)]
            for name in names:
                created(http, "local", ns, name)
            start = threading.Barrier(2 * len(names))

            def dropping(name: str) -> tuple[str, httpx.Response]:
                start.wait()
                return name, http.delete(table_url("local", ns, name))

            with ThreadPoolExecutor(max_workers=2 * len(names)) as pool:
                answers = list(pool.map(dropping, names + names))
            statuses = {name: sorted(r.status_code for n, r in answers if n == name) for name in names}
            assert statuses == {name: [204, 404] for name in names}
            for _, response in answers:
                if response.status_code == 404:
                    assert_error(response, 404, "NoSuchTableException")
            kept = Counter(e["identifier"]["name"] for e in entries_in(http, "local", ns))
            assert {name: kept[name] for name in names} == {name: 1 for name in names}


# Drop racing commits ----------------------------------------------------------------------------------------
def test_a_drop_racing_commits_keeps_the_last_acknowledged_metadata(proxy: ProxyProcess, ns_name: str) -> None:
    limits = httpx.Limits(max_connections=32)
    with httpx.Client(base_url=proxy.url, timeout=60, limits=limits) as http:
        ns = new_namespace(http, "local", ns_name)
        for round_ in range(15):  # about one table in ten shows it on SQLite, where other commits widen the gap
            names = [f"r{round_}_{k}" for k in range(8)]
            acknowledged = {name: [created(http, "local", ns, name)["metadata-location"]] for name in names}

            def commit_until_dropped(name: str) -> None:
                for k in range(10_000):
                    body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": str(k)}}]}
                    response = http.post(table_url("local", ns, name), json=body)
                    if response.status_code == 200:
                        acknowledged[name].append(response.json()["metadata-location"])
                    elif response.status_code == 404:
                        return

            with ThreadPoolExecutor(max_workers=2 * len(names)) as pool:
                committing = [pool.submit(commit_until_dropped, name) for name in names]
                time.sleep(0.15)
                dropping = [pool.submit(drop, http, "local", ns, name) for name in names]
                for future in dropping + committing:
                    future.result()
            kept = {e["identifier"]["name"]: e["metadata-location"] for e in entries_in(http, "local", ns)}
            assert {name: kept[name] for name in names} == {name: acknowledged[name][-1] for name in names}


# 8. No retention --------------------------------------------------------------------------------------------
def test_a_catalog_without_retention_drops_and_purges_at_once(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    ns = new_namespace(http, "instant", ns_name)
    table = with_data(iceberg(proxy, "instant"), ns, "gone")
    assert files_under(table.metadata.location)
    kept = trash_events(http, "kept")
    drop(http, "instant", ns, "gone", purge=True)
    assert files_under(table.metadata.location) == set()
    assert listed(http, "instant")["entries"] == []
    assert trash_events(http, "kept") == kept
    assert_error(http.get(table_url("instant", ns, "gone")), 404, "NoSuchTableException")


# 9. Listing, paging, who may use the trash ------------------------------------------------------------------
def test_listing_filters_by_namespace_kind_and_dropper_and_pages(http: httpx.Client, ns_name: str) -> None:
    ns = new_namespace(http, "local", ns_name)
    sub = new_namespace(http, "local", ns_name, "sub")
    for i in range(5):
        created(http, "local", ns, f"p{i}")
        drop(http, "local", ns, f"p{i}")
    created(http, "local", sub, "deep")
    drop(http, "local", sub, "deep")

    pages: list[list[dict[str, Any]]] = []
    token: str | None = None
    while True:
        params = {"namespace": ns_name, "page-size": "2"} | ({"page-token": token} if token else {})
        body = listed(http, "local", **params)
        pages.append(body["entries"])
        token = body.get("next-page-token")
        if token is None:
            break
    assert [len(page) for page in pages] == [2, 2, 1]
    names = [e["identifier"]["name"] for page in pages for e in page]
    assert names == [f"p{i}" for i in reversed(range(5))]  # newest first, none twice
    assert [e["identifier"]["name"] for e in entries_in(http, "local", sub)] == ["deep"]

    everything = listed(http, "local", **{"page-size": "1000"})["entries"]
    assert {(tuple(e["identifier"]["namespace"]), e["identifier"]["name"]) for e in everything} >= {
        *((ns, f"p{i}") for i in range(5)),
        (sub, "deep"),
    }
    assert len(listed(http, "local", namespace=ns_name, kind="table")["entries"]) == 5
    assert listed(http, "local", namespace=ns_name, kind="view")["entries"] == []
    assert len(listed(http, "local", namespace=ns_name, **{"dropped-by": "anonymous"})["entries"]) == 5
    assert listed(http, "local", namespace=ns_name, **{"dropped-by": "somebody-else"})["entries"] == []
    assert_error(http.get(trash_url("local"), params={"page-size": "0"}), 400, "BadRequestException")
    assert_error(http.get(trash_url("local"), params={"page-token": "nonsense"}), 400, "BadRequestException")
    assert_error(http.get(trash_url("nowhere")), 404, "NoSuchWarehouseException")


ROOT_SECRET = "root-secret-for-trash-tests"
AUTH_CONFIG = root_config(ROOT_SECRET, '[catalogs.local]\nkind = "local"\n[catalogs.elsewhere]\nkind = "local"\n')


def test_the_trash_api_holds_callers_to_the_drop_and_create_privileges_and_records_who_dropped(
    serve_in_process: ServeInProcess,
) -> None:
    server = serve_in_process(AUTH_CONFIG, "trash-oauth2")
    with server.client(timeout=60) as anonymous:
        root_token = token_of(anonymous, "root", ROOT_SECRET)
    with server.client(timeout=60, headers={"Authorization": f"Bearer {root_token}"}) as root:
        ns = new_namespace(root, "local", "shared")
        other = new_namespace(root, "local", "other")
        for name in ("by_alice", "by_root", "secret"):
            created(root, "local", ns if name != "secret" else other, name)
        logins = {
            "alice": make_principal(root, "alice", {"privilege": "all", "namespace": list(ns)}),
            "dropper": make_principal(root, "dropper", {"privilege": "table.drop", "namespace": list(ns)}),
            "reader": make_principal(root, "reader", {"privilege": "table.read", "namespace": list(ns)}),
            "stranger": make_principal(root, "stranger", {"privilege": "all", "catalog": "elsewhere"}),
        }
        tokens = {}
        with server.client(timeout=60) as login:
            for name, credentials in logins.items():
                tokens[name] = token_of(login, *credentials)

        def as_(name: str) -> httpx.Client:
            return server.client(timeout=60, headers={"Authorization": f"Bearer {tokens[name]}"})

        with as_("alice") as alice, as_("dropper") as dropper, as_("reader") as reader, as_("stranger") as stranger:
            drop(alice, "local", ns, "by_alice")
            drop(root, "local", ns, "by_root")
            drop(root, "local", other, "secret")
            entries = {e["identifier"]["name"]: e for e in listed(root, "local")["entries"]}
            assert {name: e["dropped-by"] for name, e in entries.items()} == {
                "by_alice": "alice",
                "by_root": "root",
                "secret": "root",
            }
            by_alice = listed(root, "local", **{"dropped-by": "alice"})["entries"]
            assert [e["id"] for e in by_alice] == [entries["by_alice"]["id"]]

            # Listing shows what the caller could have dropped: nothing of ``other``.
            assert {e["identifier"]["name"] for e in listed(alice, "local")["entries"]} == {"by_alice", "by_root"}
            assert {e["identifier"]["name"] for e in listed(dropper, "local")["entries"]} == {"by_alice", "by_root"}
            assert listed(reader, "local")["entries"] == []
            assert_error(stranger.get(trash_url("local")), 403, "ForbiddenException", "catalog.use")
            with server.client(timeout=60) as nobody:
                assert_error(nobody.get(trash_url("local")), 401, "NotAuthorizedException")

            # Restoring needs the drop at the source and the create at the destination.
            secret = entries["secret"]["id"]
            assert_error(restore(alice, "local", secret), 403, "ForbiddenException", "table.drop")
            assert_error(alice.delete(trash_url("local", secret)), 403, "ForbiddenException", "table.drop")
            by_root = entries["by_root"]["id"]
            assert_error(restore(dropper, "local", by_root), 403, "ForbiddenException", "table.create")
            assert_error(restore(reader, "local", by_root), 403, "ForbiddenException", "table.drop")
            moved = restore(alice, "local", by_root, identifier=to(other, "by_root"))
            assert_error(moved, 403, "ForbiddenException", "table.create")
            made = restore(alice, "local", by_root, identifier=to((*ns, "sub"), "t"), **{"create-namespace": True})
            assert made.status_code == 200, made.text  # namespace.create on ``shared`` comes with ``all`` there
            assert len(listed(root, "local")["entries"]) == 2

            back = restore(alice, "local", entries["by_alice"]["id"])
            assert back.status_code == 200, back.text
            assert alice.get(table_url("local", ns, "by_alice")).status_code == 200
            assert dropper.delete(trash_url("local", secret)).status_code == 403
            assert root.delete(trash_url("local", secret)).status_code == 204
            assert listed(root, "local")["entries"] == []

        def alices_restores() -> Counter[tuple[str, str]]:
            records = root.get(f"{MGMT}/audit", params={"principal": "alice", "limit": "200"}).json()["records"]
            return Counter(
                (r["decision"], r["object"]) for r in records if r["operation"] == "management.restoreTrashEntry"
            )

        # Each restore under its original identifier; the one under a new identifier under that one too.
        expected = Counter(
            {
                ("denied", "other.secret"): 1,
                ("denied", "shared.by_root"): 1,
                ("allowed", "shared.by_root"): 1,
                ("allowed", "shared.sub.t"): 1,
                ("allowed", "shared.by_alice"): 1,
            }
        )
        wait_until(lambda: alices_restores() == expected, 15, "alice's restores audited")


# 9b. Views ---------------------------------------------------------------------------------------------------
VIEW_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def view_url(catalog: str, namespace: tuple[str, ...], name: str) -> str:
    return f"/v1/{catalog}/namespaces/{ns_path(*namespace)}/views/{name}"


def view_version(sql: str, schema_id: int) -> dict[str, Any]:
    return {
        "version-id": 1,
        "timestamp-ms": int(time.time() * 1000),
        "schema-id": schema_id,
        "summary": {"engine-name": "test"},
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
        "default-namespace": ["db"],
    }


def make_view(http: httpx.Client, catalog: str, namespace: tuple[str, ...], name: str, *sqls: str) -> dict[str, Any]:
    """A view whose versions run ``sqls`` in order (the last is current); its LoadViewResult."""
    body = {"name": name, "schema": VIEW_SCHEMA, "view-version": view_version(sqls[0], 0), "properties": {}}
    response = http.post(f"/v1/{catalog}/namespaces/{ns_path(*namespace)}/views", json=body)
    assert response.status_code == 200, response.text
    for sql in sqls[1:]:
        change = {
            "requirements": [{"type": "assert-view-uuid", "uuid": response.json()["metadata"]["view-uuid"]}],
            "updates": [
                {"action": "add-view-version", "view-version": view_version(sql, 0)},
                {"action": "set-current-view-version", "view-version-id": -1},
            ],
        }
        response = http.post(view_url(catalog, namespace, name), json=change)
        assert response.status_code == 200, response.text
    return dict(response.json())


def view_names(http: httpx.Client, catalog: str, namespace: tuple[str, ...]) -> set[str]:
    listed = http.get(f"/v1/{catalog}/namespaces/{ns_path(*namespace)}/views")
    assert listed.status_code == 200, listed.text
    return {ident["name"] for ident in listed.json()["identifiers"]}


def test_a_dropped_view_keeps_every_version_and_comes_back_under_its_name_or_a_new_one(
    http: httpx.Client, ns_name: str
) -> None:
    ns = new_namespace(http, "local", ns_name)
    before = make_view(http, "local", ns, "v", "select 1 as id", "select 2 as id", "select 3 as id")
    assert len(before["metadata"]["versions"]) == 3

    dropped = http.delete(view_url("local", ns, "v"))
    assert dropped.status_code == 204, dropped.text
    assert_error(http.get(view_url("local", ns, "v")), 404, "NoSuchViewException")
    assert http.head(view_url("local", ns, "v")).status_code == 404
    assert "v" not in view_names(http, "local", ns)
    entry = only_entry(http, "local", ns)
    assert entry["kind"] == "view" and entry["identifier"] == to(ns, "v")
    assert entry["metadata-location"] == before["metadata-location"] and entry["purge-requested"] is False
    assert [e["id"] for e in listed(http, "local", kind="view")["entries"] if e["identifier"] == to(ns, "v")] == [
        entry["id"]
    ]

    newcomer = make_view(http, "local", ns, "v", "select 42 as id")  # the name is free at once
    assert newcomer["metadata"]["view-uuid"] != before["metadata"]["view-uuid"]
    assert_error(restore(http, "local", entry["id"]), 409, "AlreadyExistsException", "v")
    created(http, "local", ns, "t_named")
    assert_error(restore(http, "local", entry["id"], identifier=to(ns, "t_named")), 409, "AlreadyExistsException")
    assert only_entry(http, "local", ns)["id"] == entry["id"]

    back = restore(http, "local", entry["id"], identifier=to(ns, "v_back"))
    assert back.status_code == 200, back.text
    assert back.json() == {
        "identifier": to(ns, "v_back"),
        "kind": "view",
        "metadata-location": entry["metadata-location"],
    }
    restored = http.get(view_url("local", ns, "v_back"))
    assert restored.status_code == 200, restored.text
    assert restored.json()["metadata"] == before["metadata"]  # every version, the log, the uuid
    assert restored.json()["metadata-location"] == before["metadata-location"]
    assert entries_in(http, "local", ns) == []
    assert_error(restore(http, "local", entry["id"]), 404, "NotFoundException")

    # The restored view is a live one: it commits a new version on top of its history.
    later = make_view(http, "local", ns, "w", "select 1 as id")
    assert later["metadata"]["versions"][0]["representations"][0]["sql"] == "select 1 as id"
    change = {
        "requirements": [{"type": "assert-view-uuid", "uuid": before["metadata"]["view-uuid"]}],
        "updates": [
            {"action": "add-view-version", "view-version": view_version("select 4 as id", 0)},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }
    replaced = http.post(view_url("local", ns, "v_back"), json=change)
    assert replaced.status_code == 200, replaced.text
    assert [v["version-id"] for v in replaced.json()["metadata"]["versions"]] == [1, 2, 3, 4]


def test_registering_a_dropped_views_metadata_takes_it_out_of_the_trash(http: httpx.Client, ns_name: str) -> None:
    ns = new_namespace(http, "local", ns_name)
    view = make_view(http, "local", ns, "v", "select 1 as id", "select 2 as id")
    assert http.delete(view_url("local", ns, "v")).status_code == 204
    entry = only_entry(http, "local", ns)
    body = {"name": "moved", "metadata-location": view["metadata-location"]}
    registered = http.post(f"/v1/local/namespaces/{ns_path(*ns)}/register-view", json=body)
    assert registered.status_code == 200, registered.text
    assert len(registered.json()["metadata"]["versions"]) == 2
    assert entries_in(http, "local", ns) == []
    assert_error(restore(http, "local", entry["id"]), 404, "NotFoundException")


def test_view_entries_expire_at_the_end_of_the_retention_and_expunge_at_once(http: httpx.Client, ns_name: str) -> None:
    brief = new_namespace(http, "brief", ns_name)
    make_view(http, "brief", brief, "v", "select 1 as id")
    assert http.delete(view_url("brief", brief, "v")).status_code == 204
    entry = only_entry(http, "brief", brief)
    assert moment(entry["expires-at"]) - moment(entry["dropped-at"]) == BRIEF
    wait_until(lambda: entries_in(http, "brief", brief) == [], 15, "the view's entry expired")
    assert_error(restore(http, "brief", entry["id"]), 404, "NotFoundException")
    assert "v" not in view_names(http, "brief", brief)

    local = new_namespace(http, "local", ns_name)
    make_view(http, "local", local, "v", "select 1 as id")
    assert http.delete(view_url("local", local, "v")).status_code == 204
    kept = only_entry(http, "local", local)
    assert http.delete(trash_url("local", kept["id"])).status_code == 204
    assert entries_in(http, "local", local) == []
    assert_error(restore(http, "local", kept["id"]), 404, "NotFoundException")

    instant = new_namespace(http, "instant", ns_name)
    make_view(http, "instant", instant, "v", "select 1 as id")
    assert http.delete(view_url("instant", instant, "v")).status_code == 204
    assert entries_in(http, "instant", instant) == []


def test_a_view_restore_racing_a_view_create_of_the_same_name_has_exactly_one_winner(
    http: httpx.Client, ns_name: str
) -> None:
    ns = new_namespace(http, "local", ns_name)
    winners = []
    for i in range(8):
        name = f"race{i}"
        original_view = make_view(http, "local", ns, name, "select 1 as id", "select 2 as id")
        assert http.delete(view_url("local", ns, name)).status_code == 204
        entry_id = only_entry(http, "local", ns)["id"]
        start = threading.Barrier(2)
        body = {
            "name": name,
            "schema": VIEW_SCHEMA,
            "view-version": view_version("select 3 as id", 0),
            "properties": {},
        }

        def restoring() -> httpx.Response:
            start.wait()
            return restore(http, "local", entry_id)

        def creating() -> httpx.Response:
            start.wait()
            return http.post(f"/v1/local/namespaces/{ns_path(*ns)}/views", json=body)

        with ThreadPoolExecutor(max_workers=2) as pool:
            restored_future, made_future = pool.submit(restoring), pool.submit(creating)
            restored, made = restored_future.result(), made_future.result()
        assert (restored.status_code, made.status_code) in {(200, 409), (409, 200)}, (restored.text, made.text)
        current = http.get(view_url("local", ns, name)).json()
        if restored.status_code == 200:
            winners.append("restore")
            assert_error(made, 409, "AlreadyExistsException")
            assert current["metadata"] == original_view["metadata"]
            assert entries_in(http, "local", ns) == []
        else:
            winners.append("create")
            assert_error(restored, 409, "AlreadyExistsException")
            assert len(current["metadata"]["versions"]) == 1
            assert only_entry(http, "local", ns)["id"] == entry_id  # still restorable, elsewhere
            assert http.delete(trash_url("local", entry_id)).status_code == 204
    print(f"\nview restore vs create winners: {winners}")


# 9c. The command line ----------------------------------------------------------------------------------------
def cli(proxy: ProxyProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``irc-proxy trash ARGS`` on the serving proxy's configuration (the same state database and catalogs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")} | {"USER": "operator"}
    command = [sys.executable, "-m", "irc_proxy", "trash", *args, "--config", str(proxy.config_path)]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=proxy.workdir, timeout=60)


def test_the_command_line_lists_restores_and_expunges_and_is_audited(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    ns = new_namespace(http, "local", ns_name)
    table = created(http, "local", ns, "t")
    make_view(http, "local", ns, "v", "select 1 as id", "select 2 as id")
    drop(http, "local", ns, "t")
    assert http.delete(view_url("local", ns, "v")).status_code == 204

    listing = cli(proxy, "list", "--catalog", "local", "--namespace", ns_name)
    assert listing.returncode == 0, listing.stderr
    entries = {e["identifier"]["name"]: e for e in json.loads(listing.stdout)}
    assert {name: e["kind"] for name, e in entries.items()} == {"t": "table", "v": "view"}
    views_only = json.loads(cli(proxy, "list", "--catalog", "local", "--namespace", ns_name, "--kind", "view").stdout)
    assert [e["identifier"]["name"] for e in views_only] == ["v"]

    restored = cli(proxy, "restore", entries["t"]["id"], "--catalog", "local", "--to", f"{ns_name}.t_back")
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout)["identifier"] == to(ns, "t_back")
    assert http.get(table_url("local", ns, "t_back")).json()["metadata-location"] == table["metadata-location"]
    again = cli(proxy, "restore", entries["t"]["id"], "--catalog", "local")
    assert again.returncode == 1 and "No such trash entry" in again.stderr

    expunged = cli(proxy, "expunge", entries["v"]["id"], "--catalog", "local")
    assert expunged.returncode == 0, expunged.stderr
    assert entries_in(http, "local", ns) == []

    records = http.get(f"{MGMT}/audit", params={"principal": "cli:operator", "limit": "1000"}).json()["records"]
    mine = {(r["operation"], r["object"]) for r in records if r["object"] in (f"{ns_name}.t", f"{ns_name}.v")}
    assert mine == {("trash.restore", f"{ns_name}.t"), ("trash.expunge", f"{ns_name}.v")}


def test_the_command_line_restores_and_expunges_by_the_id_alone(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    """Entry ids are unique across catalogs: --catalog is not needed (the entry is not in the default catalog
    here); when given it must be the one that holds the entry."""
    ns = new_namespace(http, "spare", ns_name, "eu")
    created(http, "spare", ns, "t")
    created(http, "spare", ns, "u")
    drop(http, "spare", ns, "t")
    drop(http, "spare", ns, "u")
    entries = {e["identifier"]["name"]: e["id"] for e in entries_in(http, "spare", ns)}

    wrong = cli(proxy, "restore", entries["t"], "--catalog", "local")
    assert wrong.returncode == 1 and "No such trash entry in catalog local" in wrong.stderr
    restored = cli(proxy, "restore", entries["t"], "--to", f"{ns_name}:eu:t.back")
    assert restored.returncode == 0, restored.stderr
    body = json.loads(restored.stdout)
    assert body["catalog"] == "spare" and body["identifier"] == to(ns, "t.back")
    assert http.get(table_url("spare", ns, "t.back")).status_code == 200

    expunged = cli(proxy, "expunge", entries["u"])
    assert expunged.returncode == 0, expunged.stderr
    assert entries_in(http, "spare", ns) == []
    missing = cli(proxy, "restore", entries["u"])
    assert missing.returncode == 1 and f"No such trash entry: {entries['u']}" in missing.stderr


def test_the_command_line_takes_a_namespace_in_every_typed_form(
    proxy: ProxyProcess, http: httpx.Client, ns_name: str
) -> None:
    ns = new_namespace(http, "spare", ns_name, "new.db")
    created(http, "spare", ns, "t")
    drop(http, "spare", ns, "t")
    for typed in (f"{ns_name}:new.db", f"{ns_name}%1Fnew.db", f"{ns_name}:new%2Edb", f"{ns_name}%1fnew%2Edb"):
        listing = cli(proxy, "list", "--catalog", "spare", "--namespace", typed)
        assert listing.returncode == 0, listing.stderr
        assert [e["identifier"] for e in json.loads(listing.stdout)] == [to(ns, "t")], typed
    dotted = cli(proxy, "list", "--catalog", "spare", "--namespace", f"{ns_name}.new.db")  # three levels
    assert dotted.returncode == 0 and json.loads(dotted.stdout) == []


def test_expiry_is_audited(http: httpx.Client, ns_name: str) -> None:
    ns = new_namespace(http, "brief", ns_name)
    created(http, "brief", ns, "t")
    drop(http, "brief", ns, "t", purge=True)
    wait_until(lambda: entries_in(http, "brief", ns) == [], 15, "the entry expired")

    def expired() -> list[dict[str, Any]]:
        records = http.get(f"{MGMT}/audit", params={"principal": "irc-proxy", "limit": "1000"}).json()["records"]
        return [r for r in records if r["operation"] == "trash.expire" and r["object"] == f"{ns_name}.t"]

    wait_until(lambda: len(expired()) == 1, 15, "the expiry audited")
    assert expired()[0]["catalog"] == "brief" and "files purged" in expired()[0]["reason"]


# 10. Glue ---------------------------------------------------------------------------------------------------
def test_glue_drop_goes_to_the_trash_and_restores_with_the_same_metadata(
    moto: str, serve_in_process: ServeInProcess, tmp_path_factory: pytest.TempPathFactory, ns_name: str
) -> None:
    warehouse = tmp_path_factory.mktemp("trash-glue-warehouse")
    server = serve_in_process(glue_catalog_config("glue", moto, warehouse.as_uri()), "trash-glue")
    with server.client(timeout=60) as http:
        ns = new_namespace(http, "glue", ns_name)
        table = created(http, "glue", ns, "events")
        body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"owner": "team"}}]}
        committed = http.post(table_url("glue", ns, "events"), json=body)
        assert committed.status_code == 200, committed.text
        location = committed.json()["metadata-location"]
        assert location != table["metadata-location"]
        glue = aws_client("glue", moto)  # what people set on the Glue table beside Iceberg's metadata
        current = glue.get_table(DatabaseName=ns_name, Name="events")["Table"]
        table_input = {key: current[key] for key in ("Name", "TableType", "StorageDescriptor") if key in current}
        table_input |= {
            "Description": "click events",
            "Owner": "data-team",
            "Parameters": current["Parameters"] | {"team.cost-center": "42"},
        }
        glue.update_table(DatabaseName=ns_name, TableInput=table_input)

        drop(http, "glue", ns, "events", purge=True)
        assert glue.get_tables(DatabaseName=ns_name)["TableList"] == []
        assert_error(http.get(table_url("glue", ns, "events")), 404, "NoSuchTableException")
        assert "events" not in table_names(http, "glue", ns)
        entry = only_entry(http, "glue", ns)
        assert entry["metadata-location"] == location and entry["purge-requested"] is True
        assert path_of(location).is_file()

        back = restore(http, "glue", entry["id"])
        assert back.status_code == 200, back.text
        assert back.json() == {"identifier": to(ns, "events"), "kind": "table", "metadata-location": location}
        loaded = http.get(table_url("glue", ns, "events"))
        assert loaded.status_code == 200, loaded.text
        assert loaded.json()["metadata-location"] == location
        assert loaded.json()["metadata"]["properties"]["owner"] == "team"
        assert entries_in(http, "glue", ns) == []
        entry_back = glue.get_table(DatabaseName=ns_name, Name="events")["Table"]
        assert (entry_back["Description"], entry_back["Owner"]) == ("click events", "data-team")
        assert entry_back["Parameters"]["team.cost-center"] == "42"
        assert entry_back["Parameters"]["metadata_location"] == location
        assert entry_back["Parameters"]["table_type"] == "ICEBERG"
