"""The access log's lines reach a reader of ``irc-proxy serve``'s output promptly and all of them, in order.

The lines are written in batches at most ``irc_proxy.logs.LINGER_SECONDS`` late, not one by one: a reader of the pipe
must still see each request's line soon after its answer, and every line of every answered request once
the server has stopped (SIGTERM), none twice.
"""

from __future__ import annotations

import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.support.server import free_port, write_config


class Reader:
    """``irc-proxy serve`` with stdout and stderr on one pipe, its lines read as they come."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        config = write_config(workdir, '[catalogs.local]\nkind = "local"\n')
        self.process = subprocess.Popen(
            [sys.executable, "-m", "irc_proxy", "serve", "--config", str(config), "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, text: str, timeout: float) -> float:
        """Seconds until a line holding ``text`` was read (every line read is kept in ``seen``)."""
        started = time.monotonic()
        while any(text in line for line in self.seen) is False:
            line = self.lines.get(timeout=max(0.001, timeout - (time.monotonic() - started)))
            if line is None:
                raise AssertionError(f"output ended before {text!r}:\n" + "\n".join(self.seen))
            self.seen.append(line)
        return time.monotonic() - started

    def rest(self, timeout: float) -> None:
        """Read until the pipe closes."""
        deadline = time.monotonic() + timeout
        while (line := self.lines.get(timeout=max(0.001, deadline - time.monotonic()))) is not None:
            self.seen.append(line)


def _get(client: httpx.Client, url: str, request_id: str) -> int:
    return client.get(url, headers={"X-Request-Id": request_id}).status_code


def test_every_access_line_is_read_promptly_and_all_are_there_after_sigterm(tmp_path: Path) -> None:
    server = Reader(tmp_path)
    try:
        url = f"http://127.0.0.1:{server.port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.process.poll() is None, "\n".join(server.seen)
                time.sleep(0.1)
        with httpx.Client() as client:
            # One request at a time: its line is there about as soon as its answer.
            for _ in range(5):
                request_id = secrets.token_hex(8)
                assert _get(client, f"{url}/v1/config", request_id) == 200
                assert server.wait_for(f"id={request_id}", timeout=10) < 1.0

        # Many at once, then SIGTERM as soon as the last is answered: every line comes out, once.
        ids = [f"burst-{i}-{secrets.token_hex(4)}" for i in range(300)]
        with httpx.Client(limits=httpx.Limits(max_connections=32)) as client, ThreadPoolExecutor(32) as pool:
            statuses = list(pool.map(lambda request_id: _get(client, f"{url}/v1/config", request_id), ids))
        assert statuses == [200] * len(ids)
        server.process.send_signal(signal.SIGTERM)
        server.rest(timeout=30)
        assert server.process.wait(timeout=30) == 0
        access = [line for line in server.seen if " irc_proxy.access " in line]
        for request_id in ids:
            assert sum(line.endswith(f"id={request_id}") for line in access) == 1, request_id
        # Written in the order they were logged: their times never go back.
        times = [line[:23] for line in server.seen if line[:4].isdigit()]
        assert times == sorted(times)
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()
