"""Start the proxy as a real ``irc-proxy serve`` process (hypercorn) on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Protocol

import httpx

from irc_proxy.logs import LINGER_SECONDS


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_config(workdir: Path, config: str = "") -> Path:
    """``workdir/irc-proxy.toml``: ``config`` with ``data_dir`` set to ``workdir/data``."""
    path = workdir / "irc-proxy.toml"
    path.write_text(f'data_dir = "{workdir / "data"}"\n{config}', encoding="utf-8")
    return path


class ProxyProcess:
    """One ``irc-proxy serve`` subprocess with its own config file and data directory."""

    def __init__(self, workdir: Path, config: str = "", env: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config_path = write_config(workdir, config)
        self.log_path = workdir / "proxy.log"
        self._env = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")} | (env or {})
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 90.0) -> ProxyProcess:
        log = self.log_path.open("ab")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "irc_proxy", "serve", "--config", str(self.config_path), "--port", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self._env,
            cwd=self.workdir,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"proxy exited with {self._process.returncode}:\n{self.log_path.read_text()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"proxy did not start within {timeout}s:\n{self.log_path.read_text()}")

    @property
    def pid(self) -> int:
        """The running server's process id (``/proc/<pid>`` tells its memory)."""
        assert self._process is not None, "not started"
        return self._process.pid

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def peak_rss_kib(self) -> int:
        """The server process's peak resident set so far (``VmHWM`` in /proc, KiB)."""
        assert self._process is not None, "not started"
        status = Path(f"/proc/{self._process.pid}/status").read_text(encoding="utf-8")
        return int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])

    def send_signal(self, sig: int) -> None:
        """Deliver ``sig`` to the server process (SIGSTOP/SIGCONT freeze and thaw it, SIGKILL kills it)."""
        assert self._process is not None, "not started"
        self._process.send_signal(sig)
        if sig == 9:
            self._process.wait()
            self._process = None

    def log(self) -> str:
        """The server's output so far, with the access log lines of requests already answered: those wait up to
        ``LINGER_SECONDS`` to be written together (``irc_proxy.logs``)."""
        time.sleep(2 * LINGER_SECONDS)
        return self.log_path.read_text(errors="replace")


class Serve(Protocol):
    """The ``serve`` fixture (tests/integration/conftest.py): a started ``ProxyProcess`` for ``config``."""

    def __call__(self, config: str = "", label: str = "proxy") -> ProxyProcess: ...
