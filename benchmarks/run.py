"""Run the benchmarks side by side and report ratios: ``python -m benchmarks.run [--quick] [--only NAME]``.

Every ``benchmarks/bench_<name>.py`` exposes ``run(quick: bool = False) -> list[dict[str, object]]``.
The runner prints one table (PASS/FAIL beside each goal), writes ``results/latest.json`` and a PNG of
the latency distributions (``results/latest.png``). A benchmark that raises is reported as ERROR
and makes the exit code 1; a missed goal does not (the numbers are the result).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import baseline as baselines  # noqa: E402
from benchmarks.support import environment  # noqa: E402

# Cheap ones first; Spark last (it starts a JVM). Modules not named here run after, by name.
ORDER = [
    "cli_start",
    "local_load",
    "glue_load",
    "rest_passthrough",
    "sts_burst",
    "throughput",
    "http",
    "listing",
    "contention",
    "memory",
    "scan_planning",
    "console",
    "maintenance_load",
    "spark_pipeline",
    "compaction_spark",
]
COLUMNS = ("name", "metric", "proxy", "baseline", "ratio", "goal", "result", "vs baseline")


def available() -> list[str]:
    found = {path.stem.removeprefix("bench_") for path in HERE.glob("bench_*.py")}
    return [name for name in ORDER if name in found] + sorted(found - set(ORDER))


def run_one(name: str, quick: bool) -> tuple[list[dict[str, Any]], float]:
    started = time.perf_counter()
    try:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        rows = [dict(r) for r in module.run(quick=quick)]
    except Exception as exc:  # one broken benchmark must not hide the others
        traceback.print_exc()
        rows = [
            {
                "name": name,
                "workload": "",
                "metric": "error",
                "proxy": None,
                "baseline": None,
                "ratio": None,
                "goal": None,
                "passed": False,
                "error": f"{type(exc).__name__}: {exc}",
            }
        ]
    return rows, time.perf_counter() - started


def result_word(row: dict[str, Any]) -> str:
    if row.get("error"):
        return "ERROR"
    return {True: "PASS", False: "FAIL", None: "-"}[row.get("passed")]


def cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def table(rows: Sequence[dict[str, Any]]) -> str:
    """A fixed-width text table of the rows (Markdown-compatible)."""
    lines = [[cell(r.get(c)) if c != "result" else result_word(r) for c in COLUMNS] for r in rows]
    widths = [max(len(c), *(len(line[i]) for line in lines)) if lines else len(c) for i, c in enumerate(COLUMNS)]
    out = ["| " + " | ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)) + " |"]
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    out += ["| " + " | ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)) + " |" for line in lines]
    return "\n".join(out)


def chart(rows: Sequence[dict[str, Any]], path: Path) -> bool:
    """Box plots of every row that carries samples (one panel per row); False if there are none."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with_samples = [r for r in rows if r.get("samples")]
    if not with_samples:
        return False
    columns = min(3, len(with_samples))
    lines = (len(with_samples) + columns - 1) // columns
    figure, axes = plt.subplots(lines, columns, figsize=(5 * columns, 3.6 * lines), squeeze=False)
    for ax, row in zip(axes.flat, with_samples, strict=False):
        samples: dict[str, list[float]] = row["samples"]
        ax.boxplot(list(samples.values()), tick_labels=list(samples), showfliers=False, orientation="horizontal")
        ax.set_title(f"{row['name']} ({row['metric'].split()[0]} ratio {cell(row.get('ratio'))})", fontsize=9)
        ax.set_xlabel(row["metric"].split(" ", 1)[-1] if " " in row["metric"] else "ms")
        ax.tick_params(axis="y", labelsize=8)
    for ax in list(axes.flat)[len(with_samples) :]:
        ax.axis("off")
    figure.suptitle("irc-proxy benchmarks: latency distributions (whiskers 1.5 IQR, outliers hidden)")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sample sizes (a smoke run; ratios are rough)")
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this benchmark (repeatable)")
    parser.add_argument("--output", type=Path, default=HERE / "results", help="directory for latest.json/png")
    parser.add_argument(
        "--baseline",
        type=Path,
        default=baselines.STORED,
        help="report whose ratios each row is compared with (default: the committed results/baseline.json)",
    )
    parser.add_argument(
        "--save-baseline", action="store_true", help="write this run's report as the baseline (after a full run)"
    )
    args = parser.parse_args(argv)
    names = available()
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(names)}")
        names = [n for n in names if n in args.only]
    rows: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    for name in names:
        print(f"== {name} ...", flush=True)
        found, took = run_one(name, args.quick)
        timings[name] = round(took, 1)
        rows += found
        print(f"   done in {took:.1f}s", flush=True)
    if args.baseline.is_file():
        baselines.annotate(rows, baselines.load(args.baseline))
    print()
    print(table(rows))
    print()
    for workload in dict.fromkeys(f"{r['name']}: {r['workload']}" for r in rows if r.get("workload")):
        print(f"- {workload}")
    for r in rows:
        if r.get("error"):
            print(f"- {r['name']}: ERROR {r['error']}")
    args.output.mkdir(parents=True, exist_ok=True)
    report = {
        "quick": args.quick,
        "environment": environment(),
        "seconds": timings,
        "rows": rows,
    }
    (args.output / "latest.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.save_baseline:
        baselines.save(args.baseline, report)
        print(f"wrote {args.baseline}")
    drawn = chart(rows, args.output / "latest.png")
    print(f"\nwrote {args.output / 'latest.json'}" + (f" and {args.output / 'latest.png'}" if drawn else ""))
    return 1 if any(r.get("error") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
