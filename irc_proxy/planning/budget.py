"""The CPU and wall-clock time one planning request may spend, checked inside the planner's loops.

A node limit alone does not bound a plan's cost: a filter is evaluated once per manifest, partition and
data file, so thousands of predicates times thousands of files is minutes of CPU. The planner calls
:meth:`Budget.check` once per manifest, per partition and per manifest entry; past either limit it raises
:class:`PlanTooCostly` (400), and the worker thread is free again within one evaluation of the filter.

CPU time is the worker thread's own (``time.thread_time``): other requests on a busy machine do not make
a plan fail, waiting on storage does not count. The wall-clock limit bounds what CPU time does not see.
A request may plan in several worker-thread calls: :meth:`Budget.running` counts each one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from irc_proxy.errors import BadRequest

CPU_READ_INTERVAL = 0.001
"""Seconds of wall time between two reads of the thread's CPU clock in :meth:`Budget.check`."""


class PlanTooCostly(BadRequest):
    """Planning one request took more than ``server.scan_planning.max_plan_cpu_seconds`` (or ``_wall_seconds``)."""


@dataclass
class Budget:
    cpu_seconds: float = 10.0
    wall_seconds: float = 60.0
    _spent: float = 0.0
    _started_cpu: float | None = None
    _deadline: float = field(default=0.0)
    _next_cpu_read: float = 0.0

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.wall_seconds

    @contextmanager
    def running(self) -> Iterator[Budget]:
        """Count the CPU time of the calling thread while the block runs."""
        self._started_cpu = time.thread_time()
        try:
            yield self
        finally:
            self._spent += time.thread_time() - self._started_cpu
            self._started_cpu = None

    def check(self) -> None:
        """Raise PlanTooCostly once either limit is spent.

        Called per manifest entry, so it must cost next to nothing: the thread's CPU clock is a system call
        (~0.5 µs, 10 ms over 20,000 files), the monotonic clock is not. A thread spends no more CPU than wall
        time, so reading its CPU clock once per millisecond of wall time finds an overrun at most 1 ms late."""
        now = time.monotonic()
        if now < self._next_cpu_read:
            return
        self._next_cpu_read = now + CPU_READ_INTERVAL
        spent = self._spent + (0.0 if self._started_cpu is None else time.thread_time() - self._started_cpu)
        if spent > self.cpu_seconds:
            raise PlanTooCostly(
                f"Planning this scan took more than the limit of {self.cpu_seconds:g} s of CPU time "
                "(server.scan_planning.max_plan_cpu_seconds): narrow the filter, or plan on the client"
            )
        if now > self._deadline:
            raise PlanTooCostly(
                f"Planning this scan took more than the limit of {self.wall_seconds:g} s "
                "(server.scan_planning.max_plan_wall_seconds): narrow the filter, or plan on the client"
            )
