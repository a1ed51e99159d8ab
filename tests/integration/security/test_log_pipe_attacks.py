"""With ``server.workers = 2`` both workers write the access log to one stderr pipe, and a slow reader (journald,
``docker logs``) leaves it full: a write over ``PIPE_BUF`` bytes then goes in parts, and the other worker's lines
land between them. An anonymous client chose such lines: an h2c path of 1,100 control characters was a 6 KiB
line (each one ``\\u0001``), and 8 of 60 of them came out split, their tails on lines of their own (where a path
could forge the start of a line). Each column is now at most its limit in bytes as written: every line is whole.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.support.h2c import h2c_request
from tests.support.server import free_port, write_config

F_SETPIPE_SZ = 1031
_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ \[")


def _read_slowly(read: int, out: bytearray, slow: threading.Event) -> None:
    while chunk := os.read(read, 700 if slow.is_set() else 65536):
        out.extend(chunk)
        if slow.is_set():
            time.sleep(0.002)


def test_two_workers_on_one_slow_pipe_write_every_long_line_whole(tmp_path: Path) -> None:
    config = write_config(tmp_path, '[server]\nworkers = 2\n[catalogs.local]\nkind = "local"\n')
    port = free_port()
    read, write = os.pipe()
    fcntl.fcntl(write, F_SETPIPE_SZ, 4096)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")}
    command = [sys.executable, "-m", "irc_proxy", "serve", "--config", str(config), "--port", str(port)]
    server = subprocess.Popen(command, stdout=write, stderr=write, env=env, cwd=tmp_path)
    os.close(write)
    out, slow = bytearray(), threading.Event()
    reader = threading.Thread(target=_read_slowly, args=(read, out, slow), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 90
        while True:
            assert time.monotonic() < deadline and server.poll() is None, out.decode(errors="replace")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        slow.set()
        longs = 40

        def long_lines() -> None:
            for i in range(longs):
                h2c_request(port, b"GET", b"/v1/" + b"\x01" * 1100, [(b"x-request-id", f"long{i}".encode())])

        def short_lines(k: int) -> None:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
                for i in range(4 * longs):
                    client.get("/v1/config", headers={"x-request-id": f"short{k}-{i}"})

        clients = [threading.Thread(target=long_lines)] + [
            threading.Thread(target=short_lines, args=(k,)) for k in range(2)
        ]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join()
        time.sleep(0.5)
        slow.clear()
    finally:
        server.terminate()
        server.wait(timeout=30)
        reader.join(timeout=30)
        os.close(read)
    lines = out.decode("utf-8", errors="replace").splitlines()
    assert [line for line in lines if not _LINE.match(line)] == []  # was: the tails of split lines
    whole = [line for line in lines if re.search(r" id=long\d+$", line) and _LINE.match(line)]
    assert len(whole) == longs
    assert all(len(line.encode()) < 4096 for line in whole)
    for k in range(2):  # one keep-alive connection each, so one worker: its lines once each and in order
        shown = [int(found[1]) for line in lines if (found := re.search(rf" id=short{k}-(\d+)$", line))]
        assert shown == list(range(4 * longs))
