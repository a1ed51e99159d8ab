"""A planning request's budget: CPU time of the planning thread and wall time, each a 400 once spent."""

from __future__ import annotations

import time

import pytest

from irc_proxy.planning.budget import CPU_READ_INTERVAL, Budget, PlanTooCostly


def spin(seconds: float) -> None:
    """Spend ``seconds`` of this thread's CPU time."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_cpu_spent_while_running_past_the_limit_is_plan_too_costly() -> None:
    budget = Budget(cpu_seconds=0.02, wall_seconds=60)
    with budget.running():
        budget.check()  # nothing spent yet
        spin(0.03)
        time.sleep(CPU_READ_INTERVAL * 2)  # the CPU clock is read at most once per interval
        with pytest.raises(PlanTooCostly, match="max_plan_cpu_seconds"):
            budget.check()


def test_cpu_time_adds_up_over_several_running_blocks() -> None:
    budget = Budget(cpu_seconds=0.05, wall_seconds=60)
    for _ in range(2):
        with budget.running():
            spin(0.03)
    time.sleep(CPU_READ_INTERVAL * 2)
    with pytest.raises(PlanTooCostly):
        budget.check()


def test_time_spent_waiting_is_not_cpu_but_counts_against_the_wall_clock() -> None:
    waits = Budget(cpu_seconds=0.01, wall_seconds=60)
    with waits.running():
        time.sleep(0.05)
        waits.check()
    late = Budget(cpu_seconds=10, wall_seconds=0.01)
    time.sleep(0.02)
    with pytest.raises(PlanTooCostly, match="max_plan_wall_seconds"):
        late.check()
