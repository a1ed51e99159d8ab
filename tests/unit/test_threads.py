"""The one pool for blocking work, and bounds on top of it."""

from __future__ import annotations

import sys
import threading
import time

import anyio
import pytest

from irc_proxy.threads import ThreadRunner, warm_imports


def _peak(runner: ThreadRunner, calls: int) -> int:
    """The most calls of ``runner`` seen running at once."""
    lock, running, peak = threading.Lock(), [0], [0]

    def work() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(calls):
                group.start_soon(runner.run, work)

    anyio.run(main)
    return peak[0]


def test_a_limited_runner_runs_at_most_its_limit_at_once() -> None:
    assert _peak(ThreadRunner(8).limited(2), 8) == 2


def test_a_limited_runner_also_counts_against_the_shared_pool() -> None:
    assert _peak(ThreadRunner(1).limited(4), 6) == 1


def test_the_pool_runs_up_to_its_limit_at_once() -> None:
    assert _peak(ThreadRunner(3), 9) == 3


def test_warm_imports_imports_each_module_once_on_its_own_thread() -> None:
    first = warm_imports("colorsys")
    assert first is not None and first.name == "irc-proxy-imports"
    first.join(timeout=10)
    assert "colorsys" in sys.modules
    assert warm_imports("colorsys") is None  # asked before: no thread (a hot path asks every time)


def test_warm_imports_leaves_a_module_that_fails_to_its_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    escaped: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", escaped.append)
    thread = warm_imports("irc_proxy_no_such_module_for_warm_imports")
    assert thread is not None
    thread.join(timeout=10)
    assert escaped == []  # the ImportError did not end the thread (logged at debug; its importer raises it)
