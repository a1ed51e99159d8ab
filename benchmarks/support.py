"""Shared pieces of the benchmarks: timing, percentiles, result rows, a served proxy, seeded tables.

A benchmark module ``bench_<name>.py`` exposes ``run(quick: bool = False) -> list[dict[str, object]]``;
each row has the keys of ``row()``. Rows may carry ``samples`` ({side: [ms, ...]}) for the chart.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import socket
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

from tests.support.server import ProxyProcess

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False),
)
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])


def rows(count: int, start: int = 0) -> pa.Table:
    """``count`` rows of the 3-column benchmark schema."""
    return pa.Table.from_pylist(
        [{"id": i, "region": ("eu", "us", "apac")[i % 3], "amount": i * 1.5} for i in range(start, start + count)],
        schema=ARROW_SCHEMA,
    )


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], object]) -> float:
    """Milliseconds one call of ``fn`` took."""
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def alternate(sides: dict[str, Callable[[], object]], warmup: int, samples: int) -> dict[str, list[float]]:
    """Time each side once per round, the order flipping every round; the first ``warmup`` rounds are dropped.

    The garbage collector runs between rounds, not inside a timed call.
    """
    times: dict[str, list[float]] = {side: [] for side in sides}
    names = list(sides)
    gc.disable()
    try:
        for round_number in range(warmup + samples):
            for side in names if round_number % 2 == 0 else reversed(names):
                took = timed(sides[side])
                if round_number >= warmup:
                    times[side].append(took)
            if round_number % 20 == 0:
                gc.collect()
    finally:
        gc.enable()
    return times


def row(
    name: str,
    workload: str,
    metric: str,
    proxy: float,
    baseline: float | None,
    goal: float | None,
    *,
    ratio: float | None = None,
    higher_is_better: bool = False,
    samples: dict[str, list[float]] | None = None,
) -> dict[str, object]:
    """One result row. ``ratio`` defaults to proxy/baseline; ``passed`` compares it with ``goal``
    (at most the goal, or at least it with ``higher_is_better``); no goal gives ``passed=None``."""
    if ratio is None and baseline:
        ratio = proxy / baseline
    passed = None
    if goal is not None and ratio is not None:
        passed = ratio >= goal if higher_is_better else ratio <= goal
    result: dict[str, object] = {
        "name": name,
        "workload": workload,
        "metric": metric,
        "proxy": round(proxy, 4),
        "baseline": None if baseline is None else round(baseline, 4),
        "ratio": None if ratio is None else round(ratio, 4),
        "goal": None if goal is None else f"{'>=' if higher_is_better else '<='} {goal:g}",
        "passed": passed,
    }
    if samples:
        result["samples"] = {side: [round(v, 4) for v in values] for side, values in samples.items()}
    return result


def latency_rows(
    name: str, workload: str, times: dict[str, list[float]], proxy: str, baseline: str, goal: float | None
) -> list[dict[str, object]]:
    """p50 (with the goal) and p99 (informational) rows from ``alternate()`` output."""
    p50 = row(
        name,
        workload,
        "p50 ms",
        percentile(times[proxy], 0.5),
        percentile(times[baseline], 0.5),
        goal,
        samples={proxy: times[proxy], baseline: times[baseline]},
    )
    p99 = row(name, workload, "p99 ms", percentile(times[proxy], 0.99), percentile(times[baseline], 0.99), None)
    return [p50, p99]


def mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def rss_mb(pid: int) -> float:
    """Resident set size of a process (Linux /proc), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def proxy_pid(proxy: ProxyProcess) -> int:
    process = proxy._process  # the subprocess handle; ProxyProcess does not publish its pid
    if process is None:
        raise RuntimeError("proxy is not running")
    return int(process.pid)


@contextlib.contextmanager
def served_proxy(config: str = "", env: dict[str, str] | None = None) -> Iterator[ProxyProcess]:
    """A real ``irc-proxy serve`` process in a scratch directory (SQLite state, local catalog by default)."""
    with tempfile.TemporaryDirectory(prefix="irc-bench-") as tmp:
        proxy = ProxyProcess(Path(tmp), config, env).start()
        try:
            yield proxy
        except BaseException:
            print(f"--- proxy log (last lines):\n{proxy.log()[-4000:]}", file=sys.stderr)
            raise
        finally:
            proxy.stop()


@contextlib.contextmanager
def quiet_moto() -> Iterator[str]:
    """A moto server (Glue, S3) on loopback, with its per-request log lines silenced."""
    from tests.support.aws import moto_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with moto_server() as endpoint:
        yield endpoint


def seed_local_pointers(proxy: ProxyProcess, namespace: str, names: list[str], metadata_location: str) -> None:
    """Insert table pointers straight into the local catalog's SQLite tables (pyiceberg's SQL schema).

    Seeding 10,000 tables through the API would take minutes; listings only read these rows.
    """
    db = proxy.workdir / "data" / "catalog.db"
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.executemany(
            "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, "
            "previous_metadata_location, iceberg_type) VALUES ('local', ?, ?, ?, NULL, 'TABLE')",
            [(namespace, name, metadata_location) for name in names],
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {"cpus": os.cpu_count(), "load_average": os.getloadavg()}


ROOT = Path(__file__).resolve().parents[1]
