"""Start-up time of the command line: ``irc-proxy --help`` beside a bare ``python -c pass``, side by side.

Workload: each side is one new process of this interpreter (``python -m irc_proxy --help`` and
``python -c pass``), alternating, the order flipping every round; 3 warm-up rounds, then 30 samples (quick: 1 and
8). The ratio is the help's p50 over bare Python's; the goal row is the help's own p50 against 1 s (the first-hour
issue measured 2.6-4.2 s before the server's libraries were deferred into the commands that use them).
"""

from __future__ import annotations

import subprocess
import sys

from benchmarks.support import alternate, percentile, row


def _run(*args: str) -> None:
    subprocess.run([sys.executable, *args], check=True, capture_output=True, timeout=60)


def run(quick: bool = False) -> list[dict[str, object]]:
    warmup, samples = (1, 8) if quick else (3, 30)
    times = alternate(
        {"help": lambda: _run("-m", "irc_proxy", "--help"), "python": lambda: _run("-c", "pass")}, warmup, samples
    )
    help_p50, python_p50 = percentile(times["help"], 0.5), percentile(times["python"], 0.5)
    workload = f"irc-proxy --help vs python -c pass, new process each, alternating; {warmup} warm-up, {samples} samples"
    return [
        row("cli_start", workload, "p50 ms (ratio: vs python -c pass)", help_p50, python_p50, None, samples=times),
        row("cli_start", workload, "p50 ms (ratio: vs 1 s)", help_p50, None, 1.0, ratio=help_p50 / 1000),
    ]
