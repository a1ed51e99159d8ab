"""``keep_alive.IdleTimer`` in the orders hypercorn's ``TCPServer`` calls it in, with hypercorn's own task group and
worker context on a real event loop (the close is the callable ``TCPServer`` hands it; here one that notes it)."""

from __future__ import annotations

import asyncio

from hypercorn.asyncio.task_group import TaskGroup
from hypercorn.asyncio.worker_context import WorkerContext

from irc_proxy.http.keep_alive import IdleTimer


async def nothing() -> None:
    """hypercorn's ``_idle_timeout``, which ``IdleTimer.restart`` is handed and does not run."""


def test_a_shutdown_while_a_connection_ends_idle_still_closes_every_other_idle_one() -> None:
    """A connection whose read loop ended while a request ran (the client half-closed) goes idle again with its
    answer, from the app's task, as that task ends: for a loop turn or two its task group is finished (no task
    left, its ``async with`` not yet left) while the timer is registered. A graceful shutdown landing there made
    the worker's shutdown task fail on that group (``TaskGroup ... is finished``) and leave the connections it
    had not reached open, until their keep-alive or the graceful timeout."""

    async def scenario() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        context = WorkerContext(None)
        closed: list[int] = []

        def closer(number: int) -> IdleTimer:
            async def close() -> None:
                closed.append(number)

            return IdleTimer(loop, context, 30.0, close)

        ending = [closer(-n) for n in range(1, 21)]
        for timer in ending:
            async with TaskGroup(loop) as group:
                await timer.restart(group, nothing)  # accepted: idle
                await timer.stop()  # a request
            await timer.restart(group, nothing)  # its answer sent, the group's last task ending
        groups = [TaskGroup(loop) for _ in range(20)]
        idle = [closer(n) for n in range(20)]
        for group, timer in zip(groups, idle, strict=True):
            await group.__aenter__()
            await timer.restart(group, nothing)
        errors: list[dict[str, object]] = []
        loop.set_exception_handler(lambda _loop, error: errors.append(error))
        await context.terminated.set()  # the worker shuts down gracefully
        await asyncio.sleep(0.05)  # as hypercorn's worker does, closing its listening sockets
        for group in groups:
            await group.__aexit__(None, None, None)  # type: ignore[arg-type]  # hypercorn types it type, not None
        for timer in ending + idle:
            await timer.end()
        return sum(1 for number in closed if number >= 0), len(errors)

    closed_idle, errors = asyncio.run(scenario())
    assert closed_idle == 20
    assert errors == 0
