"""loadTable while table maintenance runs vs idle: maintenance must not slow the serving path.

Workload: one ``irc-proxy serve`` process (local catalog, SQLite), 4 tables of 40 small appends each
(maintenance targets) and one 10-snapshot table that is loaded. The busy side keeps the maintenance worker
(``max_concurrent_runs = 2``) working without pause: a client process requests a run of every job on the 4
tables in turn (dry runs, so every run reads all of a table's manifests and lists its files again, and
nothing changes between rounds), each run requested once the previous one of its table finished. The
loaded side is pyiceberg's ``RestCatalog.load_table`` of the fifth table. Phases alternate idle / busy,
2 phases each (quick: 1), 150 loads per phase (quick: 40) after 20 warm-up loads; a busy phase starts sampling once
a first run has finished (the worker's child has started) and goes on until 4 more have (an earlier version timed
the loads before any run finished, which measured nothing). Goal: busy p50 / idle p50 <= 1.1.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
from pyiceberg.catalog.rest import RestCatalog

from benchmarks.support import ROOT, SCHEMA, latency_rows, rows, served_proxy, timed
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

    def stop(self) -> None:
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


def run(quick: bool = False) -> list[dict[str, object]]:
    phases, samples, appends = (1, 40, 10) if quick else (2, 150, 40)
    times: dict[str, list[float]] = {"busy": [], "idle": []}
    finished: list[str] = []
    with served_proxy(CONFIG) as proxy:
        rest = RestCatalog("proxy", uri=proxy.url, warehouse="local")
        rest.create_namespace("bench")
        for i in range(TARGETS):
            target = rest.create_table(("bench", f"t{i}"), schema=SCHEMA)
            for j in range(appends):
                target.append(rows(10, j * 10))
        loaded = rest.create_table(("bench", "orders"), schema=SCHEMA)
        for j in range(10):
            loaded.append(rows(100, j * 100))

        def load() -> None:
            rest.load_table(("bench", "orders"))

        for _ in range(20):
            load()
        for _ in range(phases):
            times["idle"] += [timed(load) for _ in range(samples)]
            with busy(proxy.url) as keeper:
                keeper.wait_for(1, timeout=120)  # runs under way, the worker's child started
                before = len(keeper.finished)
                phase: list[float] = []
                # Sample while at least TARGETS more runs finish, so every load overlaps real work.
                while len(phase) < samples or (len(keeper.finished) < before + TARGETS and len(phase) < 20 * samples):
                    phase.append(timed(load))
                times["busy"] += phase
                finished += keeper.finished
    workload = (
        f"pyiceberg load_table of a 10-snapshot table while the worker runs every job (dry runs) on {TARGETS} tables "
        f"of {appends} appends, vs idle; {phases} phase(s) each of at least {samples} loads, a busy one until "
        f"{TARGETS} more runs finished; "
        f"runs finished meanwhile: {len(finished)} ({', '.join(sorted(set(finished))) or 'none'})"
    )
    return latency_rows("loadTable during maintenance", workload, times, "busy", "idle", 1.1)


if __name__ == "__main__":
    keep_busy(sys.argv[1])
