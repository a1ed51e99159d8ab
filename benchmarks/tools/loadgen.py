"""A small closed-loop HTTP/1.1 load generator: C keep-alive connections, each sending GETs back to back.

``python -m benchmarks.tools.loadgen URL --connections 16 --seconds 5`` prints one JSON line:
requests completed (2xx/304), errors, seconds, requests/s and latency percentiles in ms. It speaks
just enough HTTP/1.1 (Content-Length bodies) for the proxy and the bare app, so both are driven by
the very same client code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from urllib.parse import urlsplit


async def connection(host: str, port: int, request: bytes, deadline: float, latencies: list[float]) -> int:
    """Send requests back to back until ``deadline``; a dropped connection counts as an error and is reopened."""
    errors = 0
    while time.perf_counter() < deadline:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head[9:12])
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                if status < 400:
                    latencies.append((time.perf_counter() - started) * 1000)
                else:
                    errors += 1
                if b"connection: close" in head.lower():
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            errors += 1
        finally:
            writer.close()
    return errors


async def main_async(url: str, connections: int, seconds: float) -> dict[str, float]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json\r\n\r\n".encode()
    latencies: list[float] = []
    started = time.perf_counter()
    deadline = started + seconds
    errors = await asyncio.gather(*(connection(host, port, request, deadline, latencies) for _ in range(connections)))
    took = time.perf_counter() - started
    ordered = sorted(latencies) or [0.0]
    return {
        "requests": len(latencies),
        "errors": sum(errors),
        "seconds": took,
        "rps": len(latencies) / took,
        "p50_ms": ordered[len(ordered) // 2],
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args.url, args.connections, args.seconds))))


if __name__ == "__main__":
    main()
