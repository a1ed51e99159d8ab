"""Hostile review of the ``spark`` executor's driver process (``handling/maintenance/spark.py``), with a stand-in for
the driver's Python (a real child process, as ``test_run_credentials`` does):

* a driver that prints without end for up to ``spark_timeout`` (an hour by default: Spark's own logs of a table
  whose every task fails, a cluster's ``spark-submit`` chatter): the serving process keeps a bounded tail of what
  it printed, never all of it.
"""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path

import pytest

from irc_proxy.handling.maintenance.spark import SparkExecutor, SparkSettings
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.paging import new_key
from irc_proxy.handling.security.run_tokens import RunCredentials

CHATTER_BYTES = 64 * 1024**2
HELD_BOUND_BYTES = 16 * 1024**2
CHATTY_DRIVER = f"""#!/bin/sh
cat > /dev/null
head -c {CHATTER_BYTES} /dev/zero | tr '\\0' 'e' >&2
head -c {CHATTER_BYTES} /dev/zero | tr '\\0' 'o'
echo
echo 'IRC-PROXY-RESULT {{"jobs": {{"rewrite-data-files": {{"status": "succeeded", "data-files-added": 1}}}}}}'
"""


def chatty_executor(tmp_path: Path) -> SparkExecutor:
    driver = tmp_path / "python"
    driver.write_text(CHATTY_DRIVER)
    driver.chmod(0o755)
    settings = SparkSettings(uri="http://127.0.0.1:1", warehouse="local", python=str(driver), timeout_seconds=120)
    return SparkExecutor(settings, RunCredentials([new_key()]))


def test_a_driver_printing_without_end_costs_the_server_a_bounded_tail(tmp_path: Path) -> None:
    executor = chatty_executor(tmp_path)
    tracemalloc.start()
    try:
        found = asyncio.run(executor.run("run-6", "local", TableIdent(("mine",), "t"), ["rewrite-data-files"], 2))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found == {"rewrite-data-files": {"status": "succeeded", "data-files-added": 1}}
    assert peak < HELD_BOUND_BYTES, peak


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_driver_that_prints_nothing_useful_fails_its_jobs(tmp_path: Path, stream: str) -> None:
    driver = tmp_path / "python"
    redirect = ">&2" if stream == "stderr" else ""
    driver.write_text(f"#!/bin/sh\ncat > /dev/null\necho 'IRC-PROXY-RESULT not json' {redirect}\nexit 3\n")
    driver.chmod(0o755)
    settings = SparkSettings(uri="http://127.0.0.1:1", warehouse="local", python=str(driver), timeout_seconds=30)
    found = asyncio.run(
        SparkExecutor(settings, RunCredentials([new_key()])).run(
            "run-7", "local", TableIdent(("mine",), "t"), ["rewrite-data-files"], 2
        )
    )
    assert found["rewrite-data-files"]["status"] == "failed"
    assert "exited with code 3" in found["rewrite-data-files"]["error"]
