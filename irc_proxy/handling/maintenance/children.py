"""The ``local`` executor's child processes (``[server.maintenance] isolation = "process"``).

Why: a run's jobs decode manifests and Avro, list storage and rewrite Parquet with pyarrow. In the serving process
that work holds the interpreter lock against the event loop and shares its memory: a compaction that misbehaves could
take the server down. In a child (``python -m irc_proxy.maintenance_local``, at nice +10) it competes for the CPUs at
a lower priority and dies alone.

What stays here, in the serving process: the claim and its lease renewal, the run's outcome (``store.finish``),
metering, audit records and the pointer cache (``Tables.moved_elsewhere`` around a child's commits). The child builds
the catalogs from the settings the way ``app.py`` does, runs the jobs of one stretch of a run
(``Maintenance.run_jobs``: the same code as ``isolation = "thread"``), writes checkpoints through the state database
itself with this process's claim, and answers each job's result as it ends.

One child per concurrent run, reused by the next run (``LocalChildren``): starting one costs ~2.5 s of CPU (it imports
pyiceberg, pyarrow, SQLAlchemy, boto3 and builds the catalogs), more than most runs' work. A child is not reused
after it died, was killed (the run was cancelled, its lease lost) or grew past ``RETIRE_RSS_BYTES``; one idle for
``IDLE_SECONDS`` is stopped. So there are never more children than ``max_concurrent_runs``.

Protocol (one JSON object a line): the child's standard input first receives ``{"settings": <base64 pickle>}``
(settings hold secrets: never on the command line or in the environment, which carries none of the
``IRC_PROXY_*`` variables either), then one ``{"catalog", "run", "holder", "jobs"}`` per stretch of a run. Its
standard output answers ``{"ready": <seconds>}`` once, then per request ``{"job", "result"}`` for each job and
``{"done": true, "error", "rss"}``. Its logs go to standard error (the server's). It exits when its standard input
closes: a server that dies leaves no child working on.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import pickle
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from irc_proxy.settings import Settings

log = logging.getLogger("irc_proxy.maintenance")
MODULE = "irc_proxy.maintenance_local"
PACKAGE_ROOT = Path(__file__).resolve().parents[3]
"""Where the child finds ``irc_proxy`` (this checkout or the installed package)."""
IDLE_SECONDS = 300.0
RETIRE_RSS_BYTES = 2 * 1024**3
"""A child whose peak memory passed this is not reused (Python and Arrow keep what they allocated)."""
LINE_LIMIT = 16 * 1024**2


class ChildFailed(Exception):
    """The child could not start, or died: why, in words for a run's ``error``."""


def _death(code: int | None) -> str:
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        hint = " (out of memory, or killed)" if -code == signal.SIGKILL else ""
        return f"the maintenance child process was killed by {name}{hint}"
    return f"the maintenance child process exited with code {code}"


class LocalChild:
    """One child process and its pipes."""

    def __init__(self, process: asyncio.subprocess.Process, start_seconds: float) -> None:
        self.process, self.start_seconds = process, start_seconds
        self.peak_rss = 0
        self.healthy = True

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    async def start(cls, settings: bytes) -> LocalChild:
        """Start a child and wait until it is ready (its catalogs built). Raises ChildFailed."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
        begun = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            MODULE,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            limit=LINE_LIMIT,
            start_new_session=True,  # a terminal's Ctrl-C reaches the server, which stops its children
        )
        child = cls(process, 0.0)
        try:
            await child._send({"settings": base64.b64encode(settings).decode()})
            answer = await child._receive()
        except BaseException:
            child.kill()
            raise
        if answer is None or "ready" not in answer:
            child.kill()
            raise ChildFailed(f"the maintenance child process did not start: {_death(await process.wait())}")
        child.start_seconds = time.monotonic() - begun
        log.info("maintenance child %s started in %.2f s", process.pid, child.start_seconds)
        return child

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()

    async def _receive(self) -> dict[str, Any] | None:
        """The child's next message; None once its output closed (it died)."""
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        if not line:
            return None
        found = json.loads(line)
        if not isinstance(found, dict):
            raise ChildFailed("the maintenance child process answered something unexpected")
        return found

    async def run(
        self,
        catalog: str,
        run_id: str,
        holder: str,
        jobs: Sequence[str],
        results: dict[str, Any],
        lease: asyncio.Future[Any],
    ) -> str | None:
        """Run ``jobs`` of run ``run_id`` in the child, each result into ``results`` as it ends; the error that
        stopped the run, if any. When ``lease`` ends first (the claim was lost), the child is killed."""
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it died meanwhile: reading says how
            await self._send({"catalog": catalog, "run": run_id, "holder": holder, "jobs": list(jobs)})
        reading = asyncio.ensure_future(self._answers(results))
        try:
            await asyncio.wait({reading, lease}, return_when=asyncio.FIRST_COMPLETED)
            error: str | None
            if not reading.done():
                self.kill()
                error = "the run's claim was lost (another replica may hold it now): its child process was stopped"
            else:
                error = reading.result()
        except BaseException:
            self.kill()  # cancelled (the server stops): the child stops too
            raise
        finally:
            reading.cancel()
        for job in jobs:
            results.setdefault(job, {"status": "failed", "error": error or "the maintenance child did not run it"})
        return error

    async def _answers(self, results: dict[str, Any]) -> str | None:
        try:
            while (message := await self._receive()) is not None:
                if "job" in message:
                    results[str(message["job"])] = dict(message["result"])
                elif message.get("done"):
                    self.peak_rss = int(message.get("rss") or 0)
                    self.healthy = self.peak_rss < RETIRE_RSS_BYTES
                    return None if message.get("error") is None else str(message["error"])
        except (ValueError, ChildFailed) as exc:
            self.kill()
            return f"the maintenance child process answered something unexpected: {exc}"
        self.healthy = False
        return _death(await self.process.wait())

    def kill(self) -> None:
        """Kill the child now (its jobs stop wherever they are: each job is safe to stop anywhere)."""
        self.healthy = False
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()

    async def stop(self) -> None:
        self.kill()
        with contextlib.suppress(ProcessLookupError):
            await self.process.wait()


class LocalChildren:
    """The children of one serving process: one per concurrent run, reused while healthy."""

    def __init__(self, settings: Settings) -> None:
        self._settings = pickle.dumps(settings)
        self._idle: list[LocalChild] = []
        self._busy: set[LocalChild] = set()
        self._expiry: dict[LocalChild, asyncio.TimerHandle] = {}

    @contextlib.asynccontextmanager
    async def child(self) -> AsyncIterator[LocalChild]:
        """An idle healthy child, or a new one (raises ChildFailed); back to idle after, if still healthy."""
        child = None
        while self._idle and child is None:
            candidate = self._idle.pop()
            self._expiry.pop(candidate).cancel()
            if candidate.process.returncode is None:
                child = candidate
        if child is None:
            child = await LocalChild.start(self._settings)
        self._busy.add(child)
        try:
            yield child
        finally:
            self._busy.discard(child)
            if child.healthy and child.process.returncode is None:
                self._idle.append(child)
                loop = asyncio.get_running_loop()
                self._expiry[child] = loop.call_later(IDLE_SECONDS, self._expire, child)
            else:
                await child.stop()

    def _expire(self, child: LocalChild) -> None:
        if child in self._idle:
            self._idle.remove(child)
            self._expiry.pop(child, None)
            child.kill()
            log.info("maintenance child %s stopped: idle for %.0f s", child.pid, IDLE_SECONDS)

    @property
    def pids(self) -> list[int]:
        """The children alive now (tests, diagnostics)."""
        return [c.pid for c in [*self._idle, *self._busy] if c.process.returncode is None]

    async def close(self) -> None:
        """Stop every child (the server stops)."""
        for handle in self._expiry.values():
            handle.cancel()
        children, self._idle = [*self._idle, *self._busy], []
        self._expiry.clear()
        for child in children:
            await child.stop()
