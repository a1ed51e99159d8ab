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
import asyncio
import cProfile
import io
import logging
import os
import pstats
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pyiceberg.catalog.rest import RestCatalog
from starlette.types import ASGIApp, Message

from benchmarks.support import SCHEMA, rows
from benchmarks.tools.asgi_cpu import HEADERS, Call, scope_for
from irc_proxy.app import APP_STATE_KEY, create_app
from irc_proxy.cli_serve import use_uvloop
from irc_proxy.logs import configure_logging
from irc_proxy.settings import load_settings
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

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def call() -> int:
        status = 0

        async def send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        scope = scope_for(FRONT_PATH, HEADERS, state)
        scope["method"] = method
        await app(scope, receive, send)
        return status

    return call


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
            settings = load_settings(write_config(front, front_config(rest_catalog("remote", remote.url))), environ={})
            configure_logging(settings.server.log_level, settings.server.log_format)
            devnull = open(os.devnull, "w")  # noqa: SIM115 (open for the run)
            for handler in logging.getLogger().handlers:
                if isinstance(handler, logging.StreamHandler):
                    handler.setStream(devnull)
            app = create_app(settings)
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
    """cProfile timed by process CPU: a send on loopback may hand the CPU to the remote at once, which a
    wall-clock profile would charge to whatever function made the system call."""
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    await cpu_us(call, expected, requests)
    profiler.disable()
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(top)
        print(out.getvalue())


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per round and workload")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", choices=["get", "head", "send"], help="cProfile one workload instead")
    parser.add_argument("--top", type=int, default=40, help="functions shown per profile order")
    args = parser.parse_args()
    if use_uvloop("auto"):
        import uvloop

        uvloop.run(main(args))
    else:
        asyncio.run(main(args))


if __name__ == "__main__":
    cli()
