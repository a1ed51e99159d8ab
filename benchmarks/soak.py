"""Soak: two proxy replicas on one PostgreSQL under a mixed load, then an audit of what was acknowledged.

    python -m benchmarks.soak --seconds 120 [--clients 6] [--seed N]

Two ``irc-proxy serve`` processes share one scratch PostgreSQL database (state database and local catalog
database) and one ``file://`` warehouse. Client threads send requests round-robin across the replicas:
table loads, appends (an ``add-snapshot`` + ``set-snapshot-ref`` commit guarded by
``assert-ref-snapshot-id``, retried on 409 like Iceberg clients do), view replaces (guarded by
``assert-view-uuid``), view loads and namespace creates; mutations carry an ``Idempotency-Key``.

Afterwards, through both replicas: every acknowledged snapshot is in its table's ``main`` lineage, every
acknowledged view version is in its view, every created namespace exists. The summary counts requests,
commits, conflicts, retries and 5xx; the exit code is 1 if anything acknowledged was lost or any 5xx was seen.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.postgres import scratch_database
from tests.support.server import ProxyProcess

NAMESPACE = "soak"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
MAX_COMMIT_ATTEMPTS = 20
WEIGHTS = {"load": 35, "append": 30, "view-replace": 15, "view-load": 10, "namespace-create": 10}


@dataclass
class Tally:
    """What the clients saw, shared by their threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    snapshots: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    view_versions: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    namespaces: set[str] = field(default_factory=set)
    conflicts: Counter[str] = field(default_factory=Counter)
    gave_up: int = 0
    transport_errors: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def record(self, operation: str, status: int, millis: float, body: str = "") -> None:
        with self.lock:
            self.statuses[operation, status] += 1
            self.latencies[operation].append(millis)
            if status >= 500 and len(self.failures) < 20:
                self.failures.append(f"{operation} {status} {body[:300]}")


@dataclass
class Summary:
    seconds: float
    clients: int
    requests: int
    by_operation: dict[str, Counter[int]]
    p50_ms: dict[str, float]
    p99_ms: dict[str, float]
    commits_acknowledged: int
    view_replaces_acknowledged: int
    namespaces_created: int
    conflicts: dict[str, int]
    gave_up: int
    server_errors: int
    transport_errors: int
    lost_snapshots: int
    lost_view_versions: int
    lost_namespaces: int
    failures: list[str]

    @property
    def ok(self) -> bool:
        lost = self.lost_snapshots + self.lost_view_versions + self.lost_namespaces
        return lost == 0 and self.server_errors == 0 and self.transport_errors == 0

    def render(self) -> str:
        lines = [
            f"soak: {self.seconds:.0f} s, 2 replicas on one PostgreSQL, {self.clients} clients",
            f"requests: {self.requests} ({self.requests / self.seconds:.1f}/s)",
        ]
        for operation, statuses in sorted(self.by_operation.items()):
            counts = ", ".join(f"{status}: {count}" for status, count in sorted(statuses.items()))
            lines.append(
                f"  {operation:<16} {sum(statuses.values()):>6}  [{counts}]  "
                f"p50 {self.p50_ms[operation]:.1f} ms  p99 {self.p99_ms[operation]:.1f} ms"
            )
        lines += [
            f"commits acknowledged: {self.commits_acknowledged} appends, {self.view_replaces_acknowledged} view "
            f"replaces, {self.namespaces_created} namespace creates",
            "conflicts (409, retried): " + ", ".join(f"{k} {v}" for k, v in sorted(self.conflicts.items())),
            f"appends given up after {MAX_COMMIT_ATTEMPTS} attempts: {self.gave_up}",
            f"5xx: {self.server_errors}, transport errors: {self.transport_errors}",
            f"lost: snapshots {self.lost_snapshots}, view versions {self.lost_view_versions}, "
            f"namespaces {self.lost_namespaces}",
            "result: " + ("OK" if self.ok else "FAILED"),
        ]
        lines += [f"  {failure}" for failure in self.failures]
        return "\n".join(lines)


class Client:
    """One client thread's view of the replicas: requests alternate between them."""

    def __init__(self, replicas: list[httpx.Client], tally: Tally, rng: random.Random, keys: bool) -> None:
        self.replicas = replicas
        self.tally = tally
        self.rng = rng
        self.keys = keys
        self._next = rng.randrange(len(replicas))

    def call(self, operation: str, method: str, url: str, body: Any = None) -> httpx.Response | None:
        http = self.replicas[self._next]
        self._next = (self._next + 1) % len(self.replicas)
        headers = {"Idempotency-Key": str(uuid.uuid4())} if self.keys and method == "POST" else {}
        started = time.perf_counter()
        try:
            response = http.request(method, url, json=body, headers=headers)
        except httpx.TransportError as exc:
            with self.tally.lock:
                self.tally.transport_errors[type(exc).__name__] += 1
            return None
        self.tally.record(operation, response.status_code, (time.perf_counter() - started) * 1000, response.text)
        return response

    # Operations -----------------------------------------------------------------------------------------
    def load(self, table: str) -> None:
        self.call("load", "GET", f"/v1/local/namespaces/{NAMESPACE}/tables/{table}")

    def append(self, table: str) -> None:
        url = f"/v1/local/namespaces/{NAMESPACE}/tables/{table}"
        for _ in range(MAX_COMMIT_ATTEMPTS):
            loaded = self.call("append-load", "GET", url)
            if loaded is None or loaded.status_code != 200:
                return
            metadata = loaded.json()["metadata"]
            current = metadata.get("current-snapshot-id")
            current = None if current in (None, -1) else current
            snapshot_id = self.rng.getrandbits(62) + 1
            snapshot = {
                "snapshot-id": snapshot_id,
                **({"parent-snapshot-id": current} if current is not None else {}),
                "sequence-number": metadata["last-sequence-number"] + 1,
                "timestamp-ms": int(time.time() * 1000),
                "manifest-list": f"{metadata['location']}/metadata/snap-{snapshot_id}.avro",
                "summary": {"operation": "append"},
                "schema-id": metadata["current-schema-id"],
            }
            body = {
                "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": current}],
                "updates": [
                    {"action": "add-snapshot", "snapshot": snapshot},
                    {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id},
                ],
            }
            response = self.call("append-commit", "POST", url, body)
            if response is None or response.status_code not in (200, 409):
                return
            if response.status_code == 200:
                with self.tally.lock:
                    self.tally.snapshots[table].add(snapshot_id)
                return
            with self.tally.lock:
                self.tally.conflicts["append"] += 1
        with self.tally.lock:
            self.tally.gave_up += 1

    def replace_view(self, view: str, uuid_: str) -> None:
        sql = f"select {self.rng.getrandbits(48)} as id -- {uuid.uuid4().hex}"
        version = {
            "version-id": 1,
            "timestamp-ms": int(time.time() * 1000),
            "schema-id": -1,
            "summary": {"engine-name": "soak"},
            "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
            "default-namespace": [NAMESPACE],
        }
        body = {
            "requirements": [{"type": "assert-view-uuid", "uuid": uuid_}],
            "updates": [
                {"action": "add-schema", "schema": SCHEMA},
                {"action": "add-view-version", "view-version": version},
                {"action": "set-current-view-version", "view-version-id": -1},
            ],
        }
        response = self.call("view-replace", "POST", f"/v1/local/namespaces/{NAMESPACE}/views/{view}", body)
        if response is not None and response.status_code == 200:
            with self.tally.lock:
                self.tally.view_versions[view].add(sql)
        elif response is not None and response.status_code == 409:
            with self.tally.lock:
                self.tally.conflicts["view-replace"] += 1

    def load_view(self, view: str) -> None:
        self.call("view-load", "GET", f"/v1/local/namespaces/{NAMESPACE}/views/{view}")

    def create_namespace(self) -> None:
        name = f"soak_{uuid.uuid4().hex[:12]}"
        response = self.call("namespace-create", "POST", "/v1/local/namespaces", {"namespace": [name]})
        if response is not None and response.status_code == 200:
            with self.tally.lock:
                self.tally.namespaces.add(name)


def _setup(http: httpx.Client, tables: int, views: int) -> dict[str, str]:
    """The shared namespace, its tables and views; returns view name -> view uuid."""
    assert http.post("/v1/local/namespaces", json={"namespace": [NAMESPACE]}).status_code == 200
    for i in range(tables):
        created = http.post(f"/v1/local/namespaces/{NAMESPACE}/tables", json={"name": f"t{i}", "schema": SCHEMA})
        assert created.status_code == 200, created.text
    uuids = {}
    for i in range(views):
        body = {
            "name": f"v{i}",
            "schema": SCHEMA,
            "view-version": {
                "version-id": 1,
                "timestamp-ms": int(time.time() * 1000),
                "schema-id": 0,
                "summary": {"engine-name": "soak"},
                "representations": [{"type": "sql", "sql": "select 0 as id", "dialect": "spark"}],
                "default-namespace": [NAMESPACE],
            },
            "properties": {"version.history.num-entries": "1000000"},
        }
        created = http.post(f"/v1/local/namespaces/{NAMESPACE}/views", json=body)
        assert created.status_code == 200, created.text
        uuids[f"v{i}"] = created.json()["metadata"]["view-uuid"]
    return uuids


def _lineage(metadata: dict[str, Any]) -> set[int]:
    parents = {s["snapshot-id"]: s.get("parent-snapshot-id") for s in metadata.get("snapshots", [])}
    lineage, current = set(), metadata.get("current-snapshot-id")
    while current not in (None, -1) and current not in lineage:
        lineage.add(current)
        current = parents.get(current)
    return lineage


def _audit(replicas: list[httpx.Client], tally: Tally) -> tuple[int, int, int]:
    """Lost snapshots, view versions and namespaces, as seen through every replica."""
    lost_snapshots = lost_versions = lost_namespaces = 0
    for http in replicas:
        for table, acknowledged in tally.snapshots.items():
            loaded = http.get(f"/v1/local/namespaces/{NAMESPACE}/tables/{table}")
            assert loaded.status_code == 200, loaded.text
            lost_snapshots += len(acknowledged - _lineage(loaded.json()["metadata"]))
        for view, acknowledged_sql in tally.view_versions.items():
            loaded = http.get(f"/v1/local/namespaces/{NAMESPACE}/views/{view}")
            assert loaded.status_code == 200, loaded.text
            stored = {v["representations"][0]["sql"] for v in loaded.json()["metadata"]["versions"]}
            lost_versions += len(acknowledged_sql - stored)
        listed = http.get("/v1/local/namespaces")
        assert listed.status_code == 200, listed.text
        names = {levels[0] for levels in listed.json()["namespaces"]}
        lost_namespaces += len(tally.namespaces - names)
    return lost_snapshots, lost_versions, lost_namespaces


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values) or [0.0]
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(
    seconds: float,
    clients: int = 6,
    tables: int = 4,
    views: int = 2,
    seed: int = 1,
    idempotency_keys: bool = True,
    log: Callable[[str], None] = print,
) -> Summary:
    """Start the replicas, run the load for ``seconds``, audit, stop; the scratch database is dropped."""
    workdir = Path(tempfile.mkdtemp(prefix="irc-proxy-soak-"))
    try:
        with scratch_database() as url:
            warehouse = (workdir / "warehouse").as_uri()
            config = (
                f'[state]\ndatabase_url = "{url}"\n'
                f'[catalogs.local]\nkind = "local"\ndatabase_url = "{url}"\nwarehouse = "{warehouse}"\n'
            )
            (workdir / "a").mkdir()
            (workdir / "b").mkdir()
            replicas = [ProxyProcess(workdir / "a", config).start()]
            replicas.append(ProxyProcess(workdir / "b", config).start())  # after A: A initialised the schema
            try:
                return _load(replicas, seconds, clients, tables, views, seed, idempotency_keys, log)
            finally:
                for replica in replicas:
                    replica.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _load(
    replicas: list[ProxyProcess],
    seconds: float,
    clients: int,
    tables: int,
    views: int,
    seed: int,
    idempotency_keys: bool,
    log: Callable[[str], None],
) -> Summary:
    limits = httpx.Limits(max_connections=clients * 2)
    https = [httpx.Client(base_url=r.url, timeout=60, limits=limits) for r in replicas]
    try:
        view_uuids = _setup(https[0], tables, views)
        tally = Tally()
        deadline = time.monotonic() + seconds
        log(f"soak: {seconds:g} s, {clients} clients, replicas {[r.url for r in replicas]}, seed {seed}")

        def worker(index: int) -> None:
            rng = random.Random(seed * 1000 + index)
            client = Client(https, tally, rng, idempotency_keys)
            operations, weights = list(WEIGHTS), list(WEIGHTS.values())
            while time.monotonic() < deadline:
                operation = rng.choices(operations, weights)[0]
                table, view = f"t{rng.randrange(tables)}", f"v{rng.randrange(views)}"
                if operation == "load":
                    client.load(table)
                elif operation == "append":
                    client.append(table)
                elif operation == "view-replace":
                    client.replace_view(view, view_uuids[view])
                elif operation == "view-load":
                    client.load_view(view)
                else:
                    client.create_namespace()

        started = time.monotonic()
        threads = [threading.Thread(target=worker, args=(i,), name=f"soak-{i}") for i in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        lost = _audit(https, tally)
    finally:
        for http in https:
            http.close()
    by_operation: dict[str, Counter[int]] = defaultdict(Counter)
    for (operation, status), count in tally.statuses.items():
        by_operation[operation][status] += count
    return Summary(
        seconds=elapsed,
        clients=clients,
        requests=sum(tally.statuses.values()),
        by_operation=dict(by_operation),
        p50_ms={op: _percentile(values, 0.5) for op, values in tally.latencies.items()},
        p99_ms={op: _percentile(values, 0.99) for op, values in tally.latencies.items()},
        commits_acknowledged=sum(len(s) for s in tally.snapshots.values()),
        view_replaces_acknowledged=sum(len(s) for s in tally.view_versions.values()),
        namespaces_created=len(tally.namespaces),
        conflicts=dict(tally.conflicts),
        gave_up=tally.gave_up,
        server_errors=sum(count for (_, status), count in tally.statuses.items() if status >= 500),
        transport_errors=sum(tally.transport_errors.values()),
        lost_snapshots=lost[0],
        lost_view_versions=lost[1],
        lost_namespaces=lost[2],
        failures=tally.failures,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="how long the load runs (default 120)")
    parser.add_argument("--clients", type=int, default=6, help="concurrent client threads (default 6)")
    parser.add_argument("--tables", type=int, default=4, help="tables appended to (default 4)")
    parser.add_argument("--views", type=int, default=2, help="views replaced (default 2)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the clients' choices (default 1)")
    parser.add_argument("--no-idempotency-keys", action="store_true", help="send mutations without Idempotency-Key")
    args = parser.parse_args(argv)
    summary = run(args.seconds, args.clients, args.tables, args.views, args.seed, not args.no_idempotency_keys)
    print(summary.render())
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
