"""The benchmark runner runs a benchmark and writes its report (numbers are never asserted here)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from benchmarks import run as runner

EXPECTED_KEYS = {"name", "workload", "metric", "proxy", "baseline", "ratio", "goal", "passed"}


def test_quick_run_of_one_benchmark_prints_a_table_and_writes_json_and_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert runner.main(["--quick", "--only", "local_load", "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| name" in out and "local loadTable" in out
    report = json.loads((tmp_path / "latest.json").read_text())
    assert report["quick"] is True
    rows = report["rows"]
    assert rows and all(set(row) >= EXPECTED_KEYS for row in rows)
    assert all(row["passed"] in (True, False, None) for row in rows)
    assert any(row.get("samples") for row in rows)
    assert (tmp_path / "latest.png").read_bytes().startswith(b"\x89PNG")


def test_every_benchmark_module_is_discovered() -> None:
    names = runner.available()
    assert {"local_load", "glue_load", "throughput", "listing", "contention", "memory", "spark_pipeline"} <= set(names)


def test_unknown_benchmark_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        runner.main(["--only", "no_such_benchmark", "--output", str(tmp_path)])
    assert exit_info.value.code == 2


def test_a_failing_benchmark_is_reported_as_error_row(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(importlib, "import_module", broken)
    rows, _ = runner.run_one("local_load", quick=True)
    assert rows[0]["passed"] is False and "boom" in str(rows[0]["error"])
    assert runner.result_word(rows[0]) == "ERROR"
