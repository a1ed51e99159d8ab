"""Each ratio's change against a baseline: the committed ``results/baseline.json`` or a run of another commit.

A row is matched by its name and metric. A ratio *regresses* when it moves away from its goal by more than the
tolerance: down for a ``>=`` goal (throughput), up for a ``<=`` goal (latency, memory). Rows without a ratio or
without a goal are shown but never fail.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STORED = Path(__file__).resolve().parent / "results" / "baseline.json"
TOLERANCE = 0.15


def key(row: dict[str, Any]) -> str:
    return f"{row['name']} | {row['metric']}"


def load(path: Path) -> dict[str, dict[str, Any]]:
    """The rows of a report written by ``benchmarks.run`` (``latest.json`` or ``baseline.json``), by key."""
    report = json.loads(path.read_text(encoding="utf-8"))
    return {key(row): row for row in report["rows"] if not row.get("error")}


@dataclass(frozen=True)
class Change:
    key: str
    before: float
    after: float
    higher_is_better: bool

    @property
    def relative(self) -> float:
        """after / before - 1: +0.10 is a ratio 10% larger."""
        return self.after / self.before - 1

    def regressed(self, tolerance: float) -> bool:
        worse = -self.relative if self.higher_is_better else self.relative
        return worse > tolerance

    def describe(self) -> str:
        direction = "higher is better" if self.higher_is_better else "lower is better"
        return f"{self.key}: ratio {self.before:.3f} -> {self.after:.3f} ({self.relative:+.1%}, {direction})"


def changes(rows: Iterable[dict[str, Any]], baseline: dict[str, dict[str, Any]]) -> list[Change]:
    """The ratio changes of the rows that have a ratio and a goal here and a ratio in the baseline."""
    found = []
    for row in rows:
        before = baseline.get(key(row), {}).get("ratio")
        if row.get("ratio") is None or not before or not row.get("goal"):
            continue
        found.append(Change(key(row), float(before), float(row["ratio"]), str(row["goal"]).startswith(">=")))
    return found


def annotate(rows: Sequence[dict[str, Any]], baseline: dict[str, dict[str, Any]]) -> None:
    """Add each row's ``vs baseline`` cell (the ratio's relative change), in place."""
    by_key = {change.key: change for change in changes(rows, baseline)}
    for row in rows:
        change = by_key.get(key(row))
        row["vs baseline"] = None if change is None else f"{change.relative:+.1%}"


def regressions(found: Iterable[Change], tolerance: float = TOLERANCE) -> list[Change]:
    return [change for change in found if change.regressed(tolerance)]


def save(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` as the baseline, keeping the stored rows this run did not measure (``--only``)."""
    rows = {key(row): row for row in report["rows"] if not row.get("error")}
    kept = [row for k, row in load(path).items() if k not in rows] if path.is_file() else []
    fresh = [{k: v for k, v in row.items() if k not in ("vs baseline", "samples")} for row in rows.values()]
    stored = {**report, "rows": kept + fresh}  # the ratios, not the samples (those are in latest.json)
    path.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
