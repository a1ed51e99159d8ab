"""loadTable while table maintenance runs vs idle: maintenance must not slow the serving path.

Workload: one ``irc-proxy serve`` process (local catalog, SQLite), 4 tables of 40 small appends each
(maintenance targets) and one 10-snapshot table that is loaded. The busy side keeps the maintenance worker
(``max_concurrent_runs = 2``) working without pause: a client process requests a run of every job on the 4
tables in turn (dry runs, so every run reads all of a table's manifests and lists its files again, and
nothing changes between rounds), each run requested once the previous one of its table finished. The
loaded side is pyiceberg's ``RestCatalog.load_table`` of the fifth table, in blocks of 40 loads (quick: 30) that
alternate idle / busy, 16 rounds (quick: 6), the order flipping every round, so the machine's drift falls on both
sides alike. A busy block starts once a run is running (the worker's child started before the first round); an idle
block pauses the client process (SIGSTOP) and starts once no run is queued or running. Two earlier versions were
wrong: the first timed the loads before any run finished (it measured nothing), the second timed one long idle phase
and one long busy phase each, so a drift of the machine between phases showed as a ratio. Goal: busy p50 / idle p50
<= 1.1. In the same blocks a bare hypercorn+Starlette app serving the same bytes is loaded in turn with the proxy
(``bare app during maintenance``, no goal): what the machine alone costs a loadTable while the children run. On
2 vCPUs it is ~1.17-1.28, as much as the proxy's ratio: the client, the server and the children share the CPUs, and
every load's socket wake-ups cost more while the other vCPU is busy. So a last row divides the proxy's ratio by the
bare app's (goal <= 1.1 too): what maintenance costs the serving path beyond what the machine costs any server.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import httpx
from pyiceberg.catalog.rest import RestCatalog

from benchmarks.bench_throughput import start_bare
from benchmarks.support import ROOT, SCHEMA, free_port, latency_rows, row, rows, served_proxy, timed
from tests.support.maintenance import runs_url

TARGETS = 4
JOBS = ["expire-snapshots", "remove-orphan-files", "rewrite-manifests", "rewrite-data-files"]
CONFIG = """
[server.maintenance]
max_concurrent_runs = 2
poll_seconds = 0.05
"""


def keep_busy(url: str) -> None:
    """Keep a run of every target table queued or running until killed; prints each finished run's status.

    Runs in its own process (``python -m benchmarks.bench_maintenance_load URL``), so its client work does
    not share the loading client's interpreter.
    """
    waiting: dict[str, str] = {}
    with httpx.Client(base_url=url, timeout=30) as http:
        while True:
            for i in range(TARGETS):
                name = f"t{i}"
                run_id = waiting.get(name)
                if run_id is not None:
                    status = http.get(f"{runs_url()}/{run_id}").json()["status"]
                    if status in ("queued", "running"):
                        continue
                    print(status, flush=True)
                body = {"table": {"namespace": ["bench"], "name": name}, "jobs": JOBS, "dry-run": True}
                answer = http.post(runs_url(), json=body)
                if answer.status_code == 202:
                    waiting[name] = answer.json()["id"]
            time.sleep(0.25)  # polls at most 16 times a second: the keeper must not be the load it measures


class Busy:
    """The maintenance worker kept busy by a client process; ``finished`` grows as its runs end.

    A reader thread collects the client's lines as they come, so a phase can wait for runs to be under way
    (the first run also starts the worker's child process) and to keep finishing while it samples.
    """

    def __init__(self, url: str) -> None:
        self.finished: list[str] = []
        self._process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.bench_maintenance_load", url],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self.finished += line.split()

    def wait_for(self, count: int, timeout: float) -> None:
        """Until ``count`` runs have finished (or ``timeout`` seconds passed: the row then says how many did)."""
        deadline = time.monotonic() + timeout
        while len(self.finished) < count and time.monotonic() < deadline:
            time.sleep(0.05)

    def pause(self, paused: bool) -> None:
        """Stop (or resume) requesting runs; the runs already requested go on."""
        self._process.send_signal(signal.SIGSTOP if paused else signal.SIGCONT)

    def stop(self) -> None:
        self.pause(False)
        self._process.terminate()
        self._process.wait(timeout=30)
        self._reader.join(timeout=5)


@contextlib.contextmanager
def busy(url: str) -> Iterator[Busy]:
    """The maintenance worker kept busy while inside."""
    keeper = Busy(url)
    try:
        yield keeper
    finally:
        keeper.stop()


def in_flight(http: httpx.Client) -> int:
    """How many runs are queued or running now (the newest page of the run history)."""
    page = http.get(runs_url(), params={"pageSize": 100}).json()["runs"]
    return sum(run["status"] in ("queued", "running") for run in page)


def settle(http: httpx.Client, busy: bool, timeout: float = 120) -> None:
    """Until a run is running (``busy``) or none is queued or running (idle)."""
    deadline = time.monotonic() + timeout
    while (in_flight(http) > 0) != busy and time.monotonic() < deadline:
        time.sleep(0.02)
    if not busy:
        time.sleep(0.2)  # the worker's last bookkeeping after a run's status changed


def run(quick: bool = False) -> list[dict[str, object]]:
    rounds, block, appends = (6, 30, 10) if quick else (16, 40, 40)
    times: dict[str, list[float]] = {"busy": [], "idle": [], "bare busy": [], "bare idle": []}
    with (
        served_proxy(CONFIG) as proxy,
        httpx.Client(base_url=proxy.url, timeout=30) as http,
        tempfile.TemporaryDirectory(prefix="irc-bench-") as tmp,
    ):
        rest = RestCatalog("proxy", uri=proxy.url, warehouse="local")
        rest.create_namespace("bench")
        for i in range(TARGETS):
            target = rest.create_table(("bench", f"t{i}"), schema=SCHEMA)
            for j in range(appends):
                target.append(rows(10, j * 10))
        loaded = rest.create_table(("bench", "orders"), schema=SCHEMA)
        for j in range(10):
            loaded.append(rows(100, j * 100))
        body_file = Path(tmp) / "body.json"
        body_file.write_bytes(http.get("/v1/local/namespaces/bench/tables/orders").content)
        port = free_port()
        bare_process = start_bare(body_file, port)
        bare = RestCatalog("bare", uri=f"http://127.0.0.1:{port}", warehouse="local")
        loads = {"": rest, "bare ": bare}
        try:
            for _ in range(20):
                for catalog in loads.values():
                    catalog.load_table(("bench", "orders"))
            with busy(proxy.url) as keeper:
                keeper.wait_for(1, timeout=120)  # runs under way, the worker's child started
                for i in range(rounds):
                    for side in ("busy", "idle") if i % 2 else ("idle", "busy"):
                        keeper.pause(side == "idle")
                        settle(http, side == "busy")
                        for j in range(block):  # the proxy and the bare app in turn, the first flipping each time
                            for prefix in sorted(loads, reverse=j % 2 == 1):
                                times[prefix + side].append(
                                    timed(partial(loads[prefix].load_table, ("bench", "orders")))
                                )
                finished = list(keeper.finished)
        finally:
            bare_process.terminate()
            bare_process.wait(timeout=15)
    workload = (
        f"pyiceberg load_table of a 10-snapshot table while the worker runs every job (dry runs) on {TARGETS} tables "
        f"of {appends} appends, vs idle (the run requester paused, no run queued or running); {rounds} rounds of "
        f"{block} loads per side, alternating; runs finished meanwhile: {len(finished)} "
        f"({', '.join(sorted(set(finished))) or 'none'})"
    )
    floor = (
        "the same blocks, a bare hypercorn+Starlette app serving the same bytes loaded in turn with the proxy: what "
        "the machine alone costs a loadTable while the maintenance children run (information, no goal)"
    )
    proxy_rows = latency_rows("loadTable during maintenance", workload, times, "busy", "idle", 1.1)
    bare_rows = latency_rows("bare app during maintenance", floor, times, "bare busy", "bare idle", None)
    return [*proxy_rows, bare_rows[0], beyond_the_machine(proxy_rows[0], bare_rows[0])]


def beyond_the_machine(proxy: dict[str, object], bare: dict[str, object]) -> dict[str, object]:
    """The proxy's busy/idle p50 ratio over the bare app's in the same blocks: what maintenance costs the serving
    path beyond what the shared CPUs cost any server (the children run in their own processes, so a ratio above the
    bare app's is the proxy's own: its event loop or its locks held up by the runs). Goal <= 1.1, as the raw row's."""
    proxy_ratio, bare_ratio = float(str(proxy["ratio"])), float(str(bare["ratio"]))
    return row(
        "loadTable during maintenance",
        "the proxy's busy/idle p50 ratio over the bare app's, measured in the same blocks",
        "p50 ratio / bare app's ratio",
        proxy_ratio,
        bare_ratio,
        1.1,
    )


if __name__ == "__main__":
    keep_busy(sys.argv[1])
