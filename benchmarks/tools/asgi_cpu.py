"""CPU per request of the proxy's ASGI app, called directly: no socket, no HTTP parsing, no load generator.

``python -m benchmarks.tools.asgi_cpu [--requests N] [--rounds R] [--profile 200|304] [--only 200|304|bare] [--top K]``

The proxy's own cost per request is what is left when the server and the network are taken away: this calls
``app(scope, receive, send)`` in a loop on one event loop (uvloop when the proxy would use it), with the scope a
server hands over (lifespan state copied in, the headers pyiceberg sends) and the access log configured as
``irc-proxy serve`` does (written to /dev/null). Three workloads, alternating in each round:

* ``200``: a warm loadTable of a local table with 5 append snapshots (the bench_http table);
* ``304``: the same GET with the table's ``If-None-Match``;
* ``bare``: ``tools/bare_app.py``'s Starlette app answering the same bytes (the ceiling, as in bench_http).

It prints microseconds of process CPU time (``time.process_time``) per request for each, the best round
(least disturbed by other processes) and the median. ``--profile`` runs cProfile over one workload instead and
prints the ``--top`` functions by cumulative and by own time.
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
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import orjson
from pyiceberg.catalog.sql import SqlCatalog
from starlette.types import ASGIApp, Message

from benchmarks.support import SCHEMA, rows
from irc_proxy.app import create_app
from irc_proxy.cli_serve import use_uvloop
from irc_proxy.logs import configure_logging
from irc_proxy.settings import load_settings
from tests.support.in_process import _lifespan
from tests.support.server import write_config

PATH = "/v1/local/namespaces/bench/tables/orders"
HEADERS = [  # what pyiceberg's RestCatalog sends with a loadTable (and a Host a server would pass on)
    (b"host", b"127.0.0.1:8181"),
    (b"user-agent", b"python-requests/2.32.3"),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept", b"*/*"),
    (b"connection", b"keep-alive"),
    (b"content-type", b"application/json"),
    (b"x-client-version", b"0.14.1"),
    (b"user-agent", b"PyIceberg/0.12.0"),
    (b"authorization", b"Bearer None"),
    (b"x-iceberg-access-delegation", b"vended-credentials"),
]
Call = Callable[[], Awaitable[int]]


def scope_for(path: str, headers: list[tuple[bytes, bytes]], state: dict[str, Any]) -> dict[str, Any]:
    """An HTTP scope as hypercorn builds it (h11, HTTP/1.1), the lifespan state copied in."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8181),
        "extensions": {},
        "state": dict(state),
    }


def caller(
    app: ASGIApp, headers: list[tuple[bytes, bytes]], state: dict[str, Any], path: str = PATH, method: str = "GET"
) -> Call:
    """One request through ``app``; returns the status (the body is dropped, as a server would send it)."""

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def call() -> int:
        status = 0

        async def send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        scope = scope_for(path, headers, state)
        scope["method"] = method
        await app(scope, receive, send)
        return status

    return call


async def prepare(workdir: Path, app: ASGIApp, state: dict[str, Any]) -> bytes:
    """The bench_http table: a namespace and a table created through the app, 5 appends by pyiceberg's own SQL
    catalog on the same database (noticed as any outside writer's). Returns the loadTable answer's bytes."""
    for path, body in (
        ("/v1/local/namespaces", {"namespace": ["bench"]}),
        ("/v1/local/namespaces/bench/tables", {"name": "orders", "schema": orjson.loads(SCHEMA.model_dump_json())}),
    ):
        await _post(app, state, path, orjson.dumps(body))
    data = workdir / "data"
    catalog = SqlCatalog("local", uri=f"sqlite:///{data / 'catalog.db'}", warehouse=(data / "warehouse").as_uri())
    table = catalog.load_table(("bench", "orders"))
    for i in range(5):
        table.append(rows(100, i * 100))
    catalog.engine.dispose()
    chunks: list[bytes] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope_for(PATH, HEADERS, state), receive, send)
    return b"".join(chunks)


async def _post(app: ASGIApp, state: dict[str, Any], path: str, body: bytes) -> None:
    scope = scope_for(path, [*HEADERS, (b"content-length", str(len(body)).encode())], state)
    scope["method"] = "POST"
    status = 0

    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    if status != 200:
        raise RuntimeError(f"POST {path} answered {status}")


async def cpu_us(call: Call, expected: int, requests: int) -> float:
    """Process CPU microseconds per request over ``requests`` sequential calls.

    The event loop gets one iteration after each call, as a server's loop does between requests: the work a
    request leaves for later (the audit sink's batches, the access log's pending lines) is done and counted, and
    the audit queue does not fill up and drop records as it did when calls followed each other without a pause."""
    started = time.process_time()
    for _ in range(requests):
        await asyncio.sleep(0)
        status = await call()
        if status != expected:
            raise RuntimeError(f"expected {expected}, got {status}")
    return (time.process_time() - started) / requests * 1e6


def bare_app(body: bytes) -> ASGIApp:
    """``tools/bare_app.py``'s app answering ``body`` (its module reads the bytes at import)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as file:
        file.write(body)
    os.environ["BARE_APP_BODY"] = file.name
    from benchmarks.tools import bare_app as module

    module.BODY = body
    return module.app


def served_app(config: Path) -> ASGIApp:
    """The app of ``config`` with logging configured as ``irc-proxy serve`` does, written to /dev/null."""
    settings = load_settings(config, environ={})
    configure_logging(settings.server.log_level, settings.server.log_format)
    devnull = open(os.devnull, "w")  # noqa: SIM115 (open for the run)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(devnull)
    return create_app(settings)


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="irc-asgi-cpu-") as tmp:
        workdir = Path(tmp)
        app = served_app(write_config(workdir))
        async with _lifespan(app) as state:
            body = await prepare(workdir, app, state)
            tag = await _etag(app, state)
            workloads = {
                "200": (caller(app, HEADERS, state), 200),
                "304": (caller(app, [*HEADERS, (b"if-none-match", tag)], state), 304),
                "bare": (caller(bare_app(body), HEADERS, {}), 200),
            }
            for call, expected in workloads.values():  # warm-up
                await cpu_us(call, expected, 500)
            if args.profile:
                await profile(*workloads[args.profile], args.requests, args.top)
                return
            if args.only:  # one workload (for a sampling profiler such as py-spy run around this process)
                workloads = {args.only: workloads[args.only]}
            results: dict[str, list[float]] = {name: [] for name in workloads}
            for i in range(args.rounds):
                order = list(workloads) if i % 2 == 0 else list(reversed(workloads))
                for name in order:
                    results[name].append(await cpu_us(*workloads[name], args.requests))
        print(f"loadTable answer: {len(body)} B; {args.rounds} rounds x {args.requests} requests, CPU us/request")
        for name, values in results.items():
            best, median = min(values), statistics.median(values)
            bare = results.get("bare")
            ratio = f"  (best / bare best {best / min(bare):.2f})" if bare and name != "bare" else ""
            print(f"  {name:>4}: best {best:7.1f}  median {median:7.1f}{ratio}")


async def _etag(app: ASGIApp, state: dict[str, Any]) -> bytes:
    tag = b""

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        nonlocal tag
        if message["type"] == "http.response.start":
            tag = dict(message["headers"])[b"etag"]

    await app(scope_for(PATH, HEADERS, state), receive, send)
    return tag


async def profile(call: Call, expected: int, requests: int, top: int) -> None:
    await profiled(cpu_us(call, expected, requests), top)


async def profiled(work: Awaitable[object], top: int) -> None:
    """cProfile ``work``, timed by process CPU (a send on loopback may hand the CPU to the peer at once, which a
    wall-clock profile would charge to whatever function made the system call); print the ``top`` functions by
    cumulative and by own time."""
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    await work
    profiler.disable()
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(top)
        print(out.getvalue())


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000, help="requests per round and workload")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", choices=["200", "304", "bare"], help="cProfile one workload instead")
    parser.add_argument("--only", choices=["200", "304", "bare"], help="measure one workload only")
    parser.add_argument("--top", type=int, default=40, help="functions shown per profile order")
    run_loop(main(parser.parse_args()))


def run_loop(work: Coroutine[object, object, None]) -> None:
    """Run ``work`` on the event loop the proxy would use (uvloop when available)."""
    if use_uvloop("auto"):
        import uvloop

        uvloop.run(work)
    else:
        asyncio.run(work)


if __name__ == "__main__":
    cli()
