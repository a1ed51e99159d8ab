"""The floor of a pass-through on this stack: a bare hypercorn relay beside the proxy's front, against the remote.

``python -m benchmarks.tools.relay_floor [--samples N] [--proxy-server]``

``bench_rest_passthrough`` compares a front proxy (``kind = "rest"``) with calling the remote directly. This
adds a third side to the same alternating rounds: a raw ASGI app on hypercorn (uvloop) that sends every request
on to the remote with the proxy's own connection pool (``backends/rest/transport.LeanTransport``) and answers
its bytes: no Starlette, no middleware, no auth, no log, no audit. What that relay adds is what any hypercorn
front in Python adds (the server's HTTP parsing and writing, two more loopback hops, the pool); what the proxy
adds beyond it is its own work. ``--proxy-server`` serves the relay on the proxy's connection class
(``http/read_timeout.install``) instead of stock hypercorn's. Prints p50 ms, added ms and ratio per side.
"""

from __future__ import annotations

import argparse
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import httpx

from benchmarks.support import ROOT, SCHEMA, alternate, free_port, percentile, rows

_RELAY: dict[str, Any] = {}
"""What every relayed request shares, made on the first one (in the server's event loop): the pool, the origin, the
request headers. Built once so that the relay pays per request only what any relay must."""


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Relays ``/v1/remote/...`` to ``RELAY_REMOTE``'s ``/v1/local/...`` with ``RELAY_TOKEN`` (GET and HEAD)."""
    if scope["type"] == "lifespan":
        while (message := await receive())["type"] != "lifespan.shutdown":
            await send({"type": message["type"] + ".complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if not _RELAY:
        _RELAY.update(_relay())
    path = scope["raw_path"].replace(b"/v1/remote/", b"/v1/local/", 1)
    got = await _RELAY["pool"].exchange(
        _RELAY["origin"], scope["method"].encode(), path, _RELAY["headers"], b"", _RELAY["timeouts"]
    )
    kept = (b"content-type", b"etag", b"content-length")
    passed = [header for header in got.headers if header[0].lower() in kept]
    await send({"type": "http.response.start", "status": got.status, "headers": passed})
    await send({"type": "http.response.body", "body": got.body})


def _relay() -> dict[str, Any]:
    from irc_proxy.backends.rest.transport import LeanTransport, Timeouts

    remote = urlsplit(os.environ["RELAY_REMOTE"])
    return {
        "pool": LeanTransport(
            tls=ssl.create_default_context(), pool_size=10, keepalive_expiry=30, max_response_bytes=1 << 26
        ),
        "origin": ("http", remote.hostname or "", remote.port or 80),
        "headers": [
            (b"host", f"{remote.hostname}:{remote.port}".encode()),
            (b"accept", b"*/*"),
            (b"authorization", b"Bearer " + os.environ["RELAY_TOKEN"].encode()),
        ],
        "timeouts": Timeouts(5, 30, 5, 60),
    }


def serve(port: int) -> None:
    from hypercorn.config import Config
    from hypercorn.run import run

    if os.environ.get("RELAY_PROXY_SERVER"):
        from irc_proxy.http.read_timeout import install

        install()
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.worker_class = "uvloop"
    config.application_path = "benchmarks.tools.relay_floor:app"
    run(config)


def call(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200, response.text


def main() -> None:
    from pyiceberg.catalog.rest import RestCatalog

    from benchmarks.bench_rest_passthrough import federation
    from tests.support.federation import token

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--proxy-server", action="store_true", help="serve the relay on the proxy's connection class")
    args = parser.parse_args()
    with federation() as (remote, front):
        bearer = token(remote.url)
        seed = RestCatalog("remote", uri=remote.url, warehouse="local", token=bearer)
        seed.create_namespace("bench")
        table = seed.create_table(("bench", "orders"), schema=SCHEMA)
        for i in range(5):
            table.append(rows(100, i * 100))
        port = free_port()
        env = dict(os.environ, RELAY_REMOTE=remote.url, RELAY_TOKEN=bearer)
        if args.proxy_server:
            env["RELAY_PROXY_SERVER"] = "1"
        relay = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.tools.relay_floor", "--serve", str(port)],
            cwd=ROOT,
            env=env,
            stderr=subprocess.DEVNULL,
        )
        tail = "/namespaces/bench/tables/orders"
        try:
            with (
                httpx.Client(base_url=front.url, timeout=30) as via_front,
                httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as via_relay,
                httpx.Client(base_url=remote.url, timeout=30, headers={"Authorization": f"Bearer {bearer}"}) as direct,
            ):
                deadline = time.monotonic() + 20
                while True:
                    try:
                        call(via_relay, "/v1/remote" + tail)
                        break
                    except httpx.TransportError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.1)
                sides: dict[str, Callable[[], object]] = {
                    "proxy front": partial(call, via_front, "/v1/remote" + tail),
                    "bare relay": partial(call, via_relay, "/v1/remote" + tail),
                    "direct": partial(call, direct, "/v1/local" + tail),
                }
                times = alternate(sides, 50, args.samples)
        finally:
            relay.terminate()
            relay.wait(timeout=15)
    direct_p50 = percentile(times["direct"], 0.5)
    for side, samples in times.items():
        p50 = percentile(samples, 0.5)
        print(f"{side:12s} p50 {p50:.3f} ms  added {p50 - direct_p50:+.3f} ms  ratio {p50 / direct_p50:.3f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]))
    else:
        main()
