"""loadTable over HTTP driven by ``wrk``: the proxy vs a bare hypercorn + Starlette app serving the same bytes.

Workload: the local catalog, one table with 5 append snapshots; ``GET .../tables/orders`` against the proxy
and against ``tools/bare_app.py`` serving the proxy's response bytes, both with 1 worker, driven by ``wrk``
(one thread). Three figures, rounds alternating proxy/bare (warm-up: one 1 s round each, dropped):

* throughput: 16 keep-alive connections, best round per side; goal proxy/bare >= 0.6;
* latency: one connection, the median of the rounds' p50 (informational: the pyiceberg-client row is
  ``local loadTable``);
* 304: one connection sending the table's ``If-None-Match``, its p50 against the bare app's full 200 p50;
  goal <= 1.2.

3 rounds of 5 s per side and figure (quick: 2 rounds of 2 s). Skipped (one row saying so) without ``wrk``.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx
from pyiceberg.catalog.rest import RestCatalog

from benchmarks.bench_throughput import start_bare
from benchmarks.support import SCHEMA, free_port, row, rows, served_proxy
from benchmarks.wrk import WrkReport, available, wrk

CONNECTIONS = 16
PROXY, BARE = "proxy", "bare hypercorn+Starlette"


def _rounds(sides: dict[str, Callable[[], WrkReport]], rounds: int) -> dict[str, list[WrkReport]]:
    results: dict[str, list[WrkReport]] = {side: [] for side in sides}
    order = list(sides)
    for i in range(rounds):
        for side in order if i % 2 == 0 else reversed(order):
            results[side].append(sides[side]())
    return results


def run(quick: bool = False) -> list[dict[str, object]]:
    if not available():
        return [row("http (wrk)", "wrk is not installed (make bench installs it)", "skipped", 0.0, None, None)]
    rounds, seconds = (2, 2.0) if quick else (3, 5.0)
    with served_proxy() as proxy, tempfile.TemporaryDirectory(prefix="irc-bench-") as tmp:
        rest = RestCatalog("proxy", uri=proxy.url, warehouse="local")
        rest.create_namespace("bench")
        table = rest.create_table(("bench", "orders"), schema=SCHEMA)
        for i in range(5):
            table.append(rows(100, i * 100))
        proxy_url = f"{proxy.url}/v1/local/namespaces/bench/tables/orders"
        answer = httpx.get(proxy_url)
        body_file = Path(tmp) / "body.json"
        body_file.write_bytes(answer.content)
        not_modified = {"If-None-Match": answer.headers["etag"]}
        port = free_port()
        bare = start_bare(body_file, port)
        bare_url = f"http://127.0.0.1:{port}/v1/local/namespaces/bench/tables/orders"
        try:
            wrk(proxy_url, 1, CONNECTIONS)
            wrk(bare_url, 1, CONNECTIONS)
            busy = _rounds(
                {
                    PROXY: lambda: wrk(proxy_url, seconds, CONNECTIONS),
                    BARE: lambda: wrk(bare_url, seconds, CONNECTIONS),
                },
                rounds,
            )
            single = _rounds(
                {
                    PROXY: lambda: wrk(proxy_url, seconds, 1),
                    "proxy 304": lambda: wrk(proxy_url, seconds, 1, not_modified),
                    BARE: lambda: wrk(bare_url, seconds, 1),
                },
                rounds,
            )
        finally:
            bare.terminate()
            bare.wait(timeout=15)
    bad = sum(r.bad_responses for runs in (*busy.values(), *single.values()) for r in runs if r is not None)
    statuses = [r.bad_responses for r in single["proxy 304"]]
    if any(statuses):
        raise RuntimeError("the 304 round got answers other than 2xx/3xx")
    p50 = {side: statistics.median(r.p50_ms for r in runs) for side, runs in single.items()}
    shape = f"{rounds} x {seconds:g}s rounds per side, alternating, warm-up 1 s each; {bad} bad responses"
    size = len(answer.content)
    return [
        row(
            "http throughput (wrk)",
            f"GET loadTable ({size} B), {CONNECTIONS} connections, 1 worker each, best round; {shape}",
            "req/s",
            max(r.rps for r in busy[PROXY]),
            max(r.rps for r in busy[BARE]),
            0.6,
            higher_is_better=True,
        ),
        row(
            "http latency (wrk)",
            f"GET loadTable, one connection, median of the rounds' p50; {shape}",
            "p50 ms",
            p50[PROXY],
            p50[BARE],
            None,
        ),
        row(
            "http 304 (wrk)",
            f"GET loadTable with If-None-Match (304) vs the bare app's 200, one connection; {shape}",
            "p50 ms",
            p50["proxy 304"],
            p50[BARE],
            1.2,
        ),
    ]
