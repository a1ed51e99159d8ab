"""CPU per forwarded request of a front proxy (``kind = "rest"``), its app called directly, the remote a process.

``python -m benchmarks.tools.rest_cpu [--requests N] [--rounds R] [--profile get|head|send] [--top K]``

What a pass-through adds is the front's own work: the app's layers, the forwarder and the upstream client.
This starts the remote as ``irc-proxy serve`` (as ``bench_rest_passthrough`` does: OAuth2, a table with 5
appends) and builds the front's app in this process, called as ``asgi_cpu`` calls it (uvloop when the proxy
would use it, the access log written to /dev/null). The process CPU time (``time.process_time``) per request
is then the front's alone: the remote's CPU is another process's. Workloads, alternating in each round:

* ``get``: a forwarded loadTable through the app;
* ``head``: a forwarded tableExists through the app;
* ``send``: the upstream client alone (``RestUpstream.send`` of the same GET), what the forwarding costs
  below the handling layer.

It prints microseconds per request (best round and median); ``--profile`` runs cProfile over one workload.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pyiceberg.catalog.rest import RestCatalog
from starlette.types import ASGIApp

from benchmarks.support import SCHEMA, rows
from benchmarks.tools.asgi_cpu import HEADERS, Call, caller, profiled, run_loop, served_app
from irc_proxy.app import APP_STATE_KEY
from tests.support.federation import front_config, rest_catalog, start_remote, token
from tests.support.server import write_config

FRONT_PATH = "/v1/remote/namespaces/bench/tables/orders"


async def cpu_us(call: Call, expected: int, requests: int) -> tuple[float, float]:
    """Process and event-loop-thread CPU microseconds per request over ``requests`` sequential calls (the
    difference is other threads': the audit sink's writes, the thread runner's work)."""
    started, started_loop = time.process_time(), time.thread_time()
    for _ in range(requests):
        status = await call()
        if status != expected:
            raise RuntimeError(f"expected {expected}, got {status}")
    return (time.process_time() - started) / requests * 1e6, (time.thread_time() - started_loop) / requests * 1e6


def app_caller(app: ASGIApp, method: str, state: dict[str, Any]) -> Call:
    """One request through ``app``; returns the status."""
    return caller(app, HEADERS, state, FRONT_PATH, method)


def upstream_caller(upstream: Any) -> Call:
    """The same GET sent by the upstream client alone."""
    path = upstream.path("namespaces/bench/tables/orders")
    headers = [("accept", "*/*"), ("user-agent", "PyIceberg/0.12.0")]

    async def call() -> int:
        return int((await upstream.send("GET", path, headers=headers)).status_code)

    return call


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="irc-rest-cpu-") as tmp:
        (Path(tmp) / "remote").mkdir()
        (Path(tmp) / "front").mkdir()
        remote = start_remote(Path(tmp) / "remote")
        try:
            seed = RestCatalog("remote", uri=remote.url, warehouse="local", token=token(remote.url))
            seed.create_namespace("bench")
            table = seed.create_table(("bench", "orders"), schema=SCHEMA)
            for i in range(5):
                table.append(rows(100, i * 100))
            front = Path(tmp) / "front"
            app = served_app(write_config(front, front_config(rest_catalog("remote", remote.url))))
            from tests.support.in_process import _lifespan

            async with _lifespan(app) as state:
                workloads: dict[str, tuple[Call, int]] = {
                    "get": (app_caller(app, "GET", state), 200),
                    "head": (app_caller(app, "HEAD", state), 204),
                }
                for call, expected in workloads.values():  # warm-up (discovers the upstream's config)
                    await cpu_us(call, expected, 200)
                workloads["send"] = (upstream_caller(_upstream(state)), 200)
                await cpu_us(*workloads["send"], 200)
                if args.profile:
                    await profile(*workloads[args.profile], args.requests, args.top)
                    return
                results: dict[str, list[tuple[float, float]]] = {name: [] for name in workloads}
                for i in range(args.rounds):
                    order = list(workloads) if i % 2 == 0 else list(reversed(workloads))
                    for name in order:
                        results[name].append(await cpu_us(*workloads[name], args.requests))
        finally:
            remote.stop()
    print(f"{args.rounds} rounds x {args.requests} requests, front CPU us/request (process; event loop thread)")
    for name, values in results.items():
        process, loop = [v[0] for v in values], [v[1] for v in values]
        print(
            f"  {name:>4}: best {min(process):7.1f}  median {statistics.median(process):7.1f};"
            f"  loop thread best {min(loop):7.1f}  median {statistics.median(loop):7.1f}"
        )


def _upstream(state: dict[str, Any]) -> Any:
    """The front's ``RestUpstream`` of catalog ``remote`` (found in the lifespan state)."""
    return state[APP_STATE_KEY].catalogs.get("remote").backend.upstream


async def profile(call: Call, expected: int, requests: int, top: int) -> None:
    await profiled(cpu_us(call, expected, requests), top)


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per round and workload")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", choices=["get", "head", "send"], help="cProfile one workload instead")
    parser.add_argument("--top", type=int, default=40, help="functions shown per profile order")
    run_loop(main(parser.parse_args()))


if __name__ == "__main__":
    cli()
