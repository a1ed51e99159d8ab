"""The short bench lane (``make bench-quick``, under 3 minutes): this tree against another commit, side by side.

Runs the HTTP rows (``bench_http``: throughput, latency, 304, driven by ``wrk``) and the pyiceberg-client latency
row (``bench_local_load``) in quick mode, alternating between the proxy of this working tree and the proxy of
``--against`` (default: ``HEAD`` when the tree has uncommitted changes, else ``HEAD~1``), checked out in a
temporary git worktree. The measuring code is this tree's for both sides; only ``irc_proxy`` differs. Each side's
ratio is the median of its rounds. Exits 1 when a ratio regresses by more than 15% (``--tolerance``) against the
other commit's, measured in the same run. ``--stored`` compares with ``results/baseline.json`` instead (a
baseline measured at another time: noisier).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import baseline as baselines

ROOT = Path(__file__).resolve().parents[1]
BENCHES = ("http", "local_load")
ROUNDS = 2


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def default_against() -> str:
    return "HEAD" if _git("status", "--porcelain", "--untracked-files=no") else "HEAD~1"


def measure(proxy_tree: Path | None, output: Path) -> list[dict[str, Any]]:
    """One quick run of ``BENCHES`` whose proxy processes import ``irc_proxy`` from ``proxy_tree`` (None: here)."""
    env = dict(os.environ)
    if proxy_tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(proxy_tree), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    only = [arg for bench in BENCHES for arg in ("--only", bench)]
    command = [sys.executable, "-m", "benchmarks.run", "--quick", *only, "--output", str(output)]
    subprocess.run([*command, "--baseline", "/nonexistent"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return list(json.loads((output / "latest.json").read_text(encoding="utf-8"))["rows"])


def median_rows(runs: Sequence[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each row with its ratio the median over the runs."""
    merged: dict[str, dict[str, Any]] = {}
    ratios: dict[str, list[float]] = {}
    for rows in runs:
        for row in rows:
            merged.setdefault(baselines.key(row), dict(row))
            if row.get("ratio") is not None:
                ratios.setdefault(baselines.key(row), []).append(float(row["ratio"]))
    for key, values in ratios.items():
        merged[key]["ratio"] = statistics.median(values)
    return list(merged.values())


def shadow(tree: Path, into: Path) -> Path:
    """A directory holding only ``tree``'s ``irc_proxy`` (so ``benchmarks`` and ``tests`` still come from here)."""
    into.mkdir()
    (into / "irc_proxy").symlink_to(tree / "irc_proxy", target_is_directory=True)
    return into


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quick", description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="commit to compare with (default: HEAD if the tree is dirty, else HEAD~1)")
    parser.add_argument("--stored", action="store_true", help="compare with results/baseline.json instead")
    parser.add_argument("--tolerance", type=float, default=baselines.TOLERANCE)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="runs per side, alternating")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="irc-bench-quick-") as tmp:
        work = Path(tmp)
        mine: list[list[dict[str, Any]]] = []
        theirs: list[list[dict[str, Any]]] = []
        if args.stored:
            for i in range(args.rounds):
                mine.append(measure(None, work / f"here-{i}"))
            before = baselines.load(baselines.STORED)
            label = str(baselines.STORED)
        else:
            against = args.against or default_against()
            revision = _git("rev-parse", "--short", against)
            checkout = work / "against"
            _git("worktree", "add", "--detach", "--quiet", str(checkout), revision)
            try:
                their_tree = shadow(checkout, work / "their-path")
                for i in range(args.rounds):  # alternate which side goes first
                    sides = [(mine, None), (theirs, their_tree)]
                    for runs, tree in sides if i % 2 == 0 else reversed(sides):
                        runs.append(measure(tree, work / f"run-{i}-{len(runs)}-{'here' if tree is None else 'it'}"))
            finally:
                _git("worktree", "remove", "--force", str(checkout))
            before = {baselines.key(row): row for row in median_rows(theirs)}
            label = f"{against} ({revision})"
        found = baselines.changes(median_rows(mine), before)
    print(f"ratios of this tree against {label}, median of {args.rounds} quick runs per side:")
    for change in found:
        print(f"  {'REGRESSED' if change.regressed(args.tolerance) else 'ok':9} {change.describe()}")
    failed = baselines.regressions(found, args.tolerance)
    if not found:
        print("no comparable rows")
        return 1
    print(f"{len(failed)} of {len(found)} ratios regressed by more than {args.tolerance:.0%}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
