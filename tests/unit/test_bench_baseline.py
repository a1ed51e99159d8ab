"""The bench lane's comparison: which way a ratio may move, and what a wrk report says."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import baseline
from benchmarks.wrk import parse

WRK_OUTPUT = """Running 2s test @ http://127.0.0.1:8181/v1/local/namespaces/bench/tables/orders
  1 threads and 1 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   372.81us  120.11us   4.12ms   93.10%
    Req/Sec     2.71k   101.23     2.83k    75.00%
  Latency Distribution
     50%  349.00us
     75%  380.00us
     90%  421.00us
     99%    1.01ms
  5412 requests in 2.00s, 27.12MB read
  Non-2xx or 3xx responses: 3
Requests/sec:   2705.87
Transfer/sec:     13.56MB
"""


def _row(name: str, ratio: float, goal: str) -> dict[str, object]:
    return {"name": name, "metric": "m", "ratio": ratio, "goal": goal}


def test_a_throughput_ratio_regresses_when_it_falls_and_a_latency_ratio_when_it_rises() -> None:
    before = {baseline.key(r): r for r in [_row("rps", 0.50, ">= 0.6"), _row("p50", 1.00, "<= 1.2")]}
    worse = baseline.changes([_row("rps", 0.40, ">= 0.6"), _row("p50", 1.20, "<= 1.2")], before)
    better = baseline.changes([_row("rps", 0.60, ">= 0.6"), _row("p50", 0.80, "<= 1.2")], before)
    assert [c.key for c in baseline.regressions(worse)] == ["rps | m", "p50 | m"]
    assert baseline.regressions(better) == []
    assert baseline.regressions(baseline.changes([_row("p50", 1.14, "<= 1.2")], before)) == []


def test_rows_without_a_goal_or_a_ratio_never_fail() -> None:
    before = {baseline.key(r): r for r in [_row("info", 1.0, ""), _row("new", 1.0, "<= 1")]}
    assert baseline.changes([_row("info", 9.0, ""), {"name": "new", "metric": "m", "ratio": None}], before) == []


def test_saving_a_partial_run_keeps_the_rows_it_did_not_measure(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    baseline.save(path, {"rows": [_row("a", 1.0, "<= 1"), _row("b", 2.0, "<= 1")]})
    baseline.save(path, {"rows": [{**_row("b", 3.0, "<= 1"), "vs baseline": "+50%"}]})
    stored = json.loads(path.read_text())["rows"]
    assert sorted((r["name"], r["ratio"]) for r in stored) == [("a", 1.0), ("b", 3.0)]
    assert all("vs baseline" not in r for r in stored)


def test_a_wrk_report_gives_the_rate_the_percentiles_in_ms_and_the_bad_answers() -> None:
    report = parse(WRK_OUTPUT)
    assert report.rps == 2705.87
    assert {p: round(ms, 6) for p, ms in report.percentiles_ms.items()} == {50: 0.349, 75: 0.38, 90: 0.421, 99: 1.01}
    assert report.bad_responses == 3
