"""Drive an HTTP endpoint with Debian's ``wrk`` (a C load generator) and read its report.

The Python load generator (``tools/loadgen.py``) can cap the figure it measures; ``wrk`` drives a warm
loadTable well past the proxy's rate from one core (NOTES.md), so the HTTP rows use it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
PERCENTILE = re.compile(r"^\s*(50|75|90|99)%\s+([\d.]+)(us|ms|s)\s*$", re.MULTILINE)
RATE = re.compile(r"^Requests/sec:\s+([\d.]+)", re.MULTILINE)
NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)")
ERRORS = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")


@dataclass(frozen=True)
class WrkReport:
    rps: float
    percentiles_ms: dict[int, float]
    bad_responses: int

    @property
    def p50_ms(self) -> float:
        return self.percentiles_ms[50]


def available() -> bool:
    return shutil.which("wrk") is not None


def parse(output: str) -> WrkReport:
    """Requests/s, latency percentiles (ms) and non-2xx/3xx or socket errors from ``wrk --latency``."""
    rate = RATE.search(output)
    if rate is None:
        raise RuntimeError(f"wrk printed no rate:\n{output[-2000:]}")
    percentiles = {int(p): float(v) * UNITS[u] for p, v, u in PERCENTILE.findall(output)}
    bad = sum(int(n) for n in NON_2XX.findall(output))
    if (errors := ERRORS.search(output)) is not None:
        bad += sum(int(n) for n in errors.groups())
    return WrkReport(float(rate.group(1)), percentiles, bad)


def wrk(url: str, seconds: float, connections: int, headers: dict[str, str] | None = None) -> WrkReport:
    """One wrk run: one thread, ``connections`` keep-alive connections, closed loop, latency percentiles."""
    command = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency"]
    for name, value in (headers or {}).items():
        command += ["-H", f"{name}: {value}"]
    out = subprocess.run([*command, url], capture_output=True, text=True, check=True, timeout=seconds + 60)
    return parse(out.stdout)
