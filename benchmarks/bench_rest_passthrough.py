"""Added latency of a federated prefix: client -> front proxy -> remote irc-proxy, vs client -> remote.

Workload: a remote ``irc-proxy serve`` (local backend, OAuth2 on) holding one table with 5 append
snapshots, and a front ``irc-proxy serve`` whose ``kind = "rest"`` catalog points at it (OAuth2
client credentials, token cached). Two keep-alive httpx clients issue the same request, one to each;
rounds alternate the order. Workloads: ``loadTable`` (GET) and ``tableExists`` (HEAD).
Warm-up 50 rounds, 400 timed rounds (quick: 5 + 40). Goal (issue 29): added p50 <= 0.5 ms and p50 ratio
(proxy / direct) <= 1.4, both; added p99 <= 3 ms.

Run as ``python -m benchmarks.bench_rest_passthrough``.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import httpx
from pyiceberg.catalog.rest import RestCatalog

from benchmarks.support import SCHEMA, alternate, environment, percentile, row, rows
from tests.support.federation import rest_catalog, start_front, start_remote, token
from tests.support.server import ProxyProcess

GOALS = {"p50": (0.5, 0.5, 1.4), "p99": (0.99, 3.0, None)}
"""Percentile: (quantile, most added ms, largest ratio or None). Issue 29: added p50 <= 0.5 ms and ratio <= 1.4."""


@contextlib.contextmanager
def federation() -> Iterator[tuple[ProxyProcess, ProxyProcess]]:
    with tempfile.TemporaryDirectory(prefix="irc-bench-rest-") as tmp:
        remote = start_remote(_mkdir(Path(tmp) / "remote"))
        try:
            front = start_front(_mkdir(Path(tmp) / "front"), rest_catalog("remote", remote.url))
            try:
                yield remote, front
            finally:
                front.stop()
        finally:
            remote.stop()


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def added_rows(name: str, workload: str, times: dict[str, list[float]]) -> list[dict[str, object]]:
    """p50 and p99 of both sides; ``passed`` judges the added milliseconds (proxy - direct) and, for the p50,
    the ratio too (both must hold)."""
    result = []
    for label, (q, goal, most_ratio) in GOALS.items():
        proxy, direct = percentile(times["proxy"], q), percentile(times["direct"], q)
        entry = row(name, workload, f"{label} ms (added {proxy - direct:+.3f})", proxy, direct, None)
        entry["goal"] = f"added <= {goal:g} ms" + (f", ratio <= {most_ratio:g}" if most_ratio else "")
        entry["passed"] = proxy - direct <= goal and (most_ratio is None or proxy / direct <= most_ratio)
        result.append(entry)
    return result


def call(client: httpx.Client, method: str, path: str) -> None:
    response = client.request(method, path)
    assert response.status_code in (200, 204), response.text


def run(quick: bool = False) -> list[dict[str, object]]:
    warmup, samples = (5, 40) if quick else (50, 400)
    results: list[dict[str, object]] = []
    with federation() as (remote, front):
        bearer = {"Authorization": f"Bearer {token(remote.url)}"}
        seed = RestCatalog("remote", uri=remote.url, warehouse="local", token=token(remote.url))
        seed.create_namespace("bench")
        table = seed.create_table(("bench", "orders"), schema=SCHEMA)
        for i in range(2 if quick else 5):
            table.append(rows(100, i * 100))
        with (
            httpx.Client(base_url=front.url, timeout=30) as via_front,
            httpx.Client(base_url=remote.url, timeout=30, headers=bearer) as direct,
        ):
            for name, method, front_path, remote_path in (
                ("rest pass-through loadTable", "GET", "/v1/remote", "/v1/local"),
                ("rest pass-through tableExists", "HEAD", "/v1/remote", "/v1/local"),
            ):
                tail = "/namespaces/bench/tables/orders"

                times = alternate(
                    {
                        "proxy": partial(call, via_front, method, front_path + tail),
                        "direct": partial(call, direct, method, remote_path + tail),
                    },
                    warmup,
                    samples,
                )
                workload = (
                    f"{method} {tail} via front proxy (kind=rest, OAuth2 upstream) vs straight to the remote "
                    f"irc-proxy; keep-alive httpx; warm-up {warmup}, {samples} samples"
                )
                results += added_rows(name, workload, times)
    return results


if __name__ == "__main__":
    print(json.dumps({"environment": environment(), "results": run()}, indent=2))
