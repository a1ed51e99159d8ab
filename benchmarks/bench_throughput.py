"""loadTable requests/s through the proxy vs a bare hypercorn + Starlette app returning the same bytes.

Workload: the local catalog, one table with 5 append snapshots; ``GET .../tables/orders`` (200 with
the LoadTableResult) from ``benchmarks/tools/loadgen.py`` (16 keep-alive connections, closed loop,
one process) against the proxy, then the same generator against ``benchmarks/tools/bare_app.py``
serving the proxy's response bytes, both with 1 worker. Rounds alternate proxy/bare; each round is
5 s (warm-up: one 1 s round each, dropped), 3 rounds per side (quick: 1 round of 1 s). The
ceiling is the best bare round; the proxy's is its best round. Goal: proxy/bare >= 0.6.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from pyiceberg.catalog.rest import RestCatalog

from benchmarks.support import ROOT, SCHEMA, free_port, row, rows, served_proxy

CONNECTIONS = 16


def loadgen(url: str, seconds: float) -> dict[str, float]:
    args = ["--connections", str(CONNECTIONS), "--seconds", str(seconds)]
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.tools.loadgen", url, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if out.returncode != 0:
        raise RuntimeError(f"load generator failed: {out.stderr[-2000:]}")
    return dict(json.loads(out.stdout))


def start_bare(body_file: Path, port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.tools.bare_app", str(body_file), str(port), "1"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("bare app did not start")


def run(quick: bool = False) -> list[dict[str, object]]:
    rounds, seconds = (1, 1.0) if quick else (3, 5.0)
    with served_proxy() as proxy, tempfile.TemporaryDirectory(prefix="irc-bench-") as tmp:
        rest = RestCatalog("proxy", uri=proxy.url, warehouse="local")
        rest.create_namespace("bench")
        table = rest.create_table(("bench", "orders"), schema=SCHEMA)
        for i in range(5):
            table.append(rows(100, i * 100))
        proxy_url = f"{proxy.url}/v1/local/namespaces/bench/tables/orders"
        body_file = Path(tmp) / "body.json"
        body_file.write_bytes(httpx.get(proxy_url).content)
        size = body_file.stat().st_size
        port = free_port()
        bare = start_bare(body_file, port)
        bare_url = f"http://127.0.0.1:{port}/v1/local/namespaces/bench/tables/orders"
        try:
            if not quick:
                loadgen(proxy_url, 1.0)
                loadgen(bare_url, 1.0)
            results: dict[str, list[dict[str, float]]] = {"proxy": [], "bare hypercorn+Starlette": []}
            for i in range(rounds):
                order = [("proxy", proxy_url), ("bare hypercorn+Starlette", bare_url)]
                for side, url in order if i % 2 == 0 else reversed(order):
                    results[side].append(loadgen(url, seconds))
        finally:
            bare.terminate()
            bare.wait(timeout=15)
    best = {side: max(r["rps"] for r in runs) for side, runs in results.items()}
    errors = sum(r["errors"] for runs in results.values() for r in runs)
    workload = (
        f"GET loadTable (5-snapshot table, {size} B) x "
        f"{CONNECTIONS} keep-alive connections, 1 worker each, {rounds} x {seconds:g}s rounds per side "
        f"(best), warm-up {'none' if quick else '1 s each'}; {errors} error responses"
    )
    return [
        row(
            "throughput",
            workload,
            "req/s",
            best["proxy"],
            best["bare hypercorn+Starlette"],
            0.6,
            higher_is_better=True,
        )
    ]
