"""The ``spark`` executor: a run's Spark jobs as Iceberg's own procedures, in a Spark driver run as a child process.

The driver (``irc_proxy/maintenance_spark.py``) is never a JVM inside the proxy: it is a child process started with
this Python's pyspark (``spark_master``, ``local[2]`` by default), with a cluster's ``spark-submit`` (client deploy
mode: the driver is the child, executors run on YARN, Kubernetes, standalone or EMR), or as a Spark Connect client.
Its Spark catalog is this proxy over REST, so every commit it makes passes the proxy's authorization, audit and
confinement, with a run credential (``handling/security/run_tokens.py``) scoped to the run's one table, valid for
``spark_timeout`` plus a minute and handed over on the child's standard input.

Cost is bounded: one child per run (all of the run's Spark jobs in one session, so one table has at most one
Spark driver, and ``max_concurrent_runs`` bounds the drivers of a replica); it is killed with its process group
(the JVM included) at ``spark_timeout`` or when the worker stops; its environment carries none of the proxy's
``IRC_PROXY_*`` settings (they may hold database passwords and client secrets).

Which jobs run here (``spark_jobs``): ``rewrite-data-files`` (``rewrite_data_files`` with
``remove-dangling-deletes``, then ``rewrite_position_delete_files`` on a v2 table with position deletes left) and
``rewrite-manifests`` by default; ``expire-snapshots`` only when listed, because Spark then deletes the expired
files with its own storage access, outside the proxy's confinement (``TableFiles.owns``). ``remove-orphan-files``
never: Spark would list and delete with its own access too, and the local job is bounded by the listing, not by
compute, so Spark would not make it faster.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyiceberg.table.metadata import TableMetadata

from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.security.run_tokens import RunCredentials

log = logging.getLogger("irc_proxy.maintenance")
RESULT_MARKER = "IRC-PROXY-RESULT "
DRIVER = Path(__file__).resolve().parents[2] / "maintenance_spark.py"
CREDENTIAL_SLACK_SECONDS = 60
STDERR_TAIL_CHARS = 2000
KEPT_STDOUT_BYTES = 1024**2
"""How much of the end of the driver's standard output is kept (its result line is the last)."""
KEPT_STDERR_BYTES = 64 * 1024
"""How much of the end of the driver's standard error is kept (a tail of it is logged when there is no result)."""
READ_BYTES = 64 * 1024


@dataclass(frozen=True)
class SparkSettings:
    """One catalog's ``spark`` executor (``[catalogs.<name>.maintenance]``)."""

    uri: str
    """Where Spark reaches this proxy."""
    warehouse: str
    """The warehouse name Spark sends (the catalog's name: its REST prefix)."""
    jobs: tuple[str, ...] = ("rewrite-data-files", "rewrite-manifests")
    master: str = "local[2]"
    submit: str = ""
    connect_url: str = ""
    python: str = ""
    jars: tuple[str, ...] = ()
    conf: Mapping[str, str] = field(default_factory=dict)
    rewrite_options: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: float = 3600.0


@dataclass(frozen=True)
class Shape:
    """What the proxy sees of a table before and after a Spark run (the driver reads no metadata table)."""

    data_files: int
    delete_files: int
    snapshots: int
    format_version: int

    @classmethod
    def of(cls, metadata: TableMetadata) -> Shape:
        snapshot = metadata.current_snapshot()
        summary = snapshot.summary if snapshot is not None else None
        totals = (
            {} if summary is None else {key: summary.get(key) for key in ("total-data-files", "total-delete-files")}
        )
        data, deletes = (int(totals.get(key) or 0) for key in ("total-data-files", "total-delete-files"))
        return cls(data, deletes, len(metadata.snapshots), metadata.format_version)

    def dry_run(self, job: str) -> dict[str, Any]:
        """A dry run's answer: the table as it is, nothing started."""
        counts: dict[str, Any] = {"data-files": self.data_files, "delete-files": self.delete_files}
        if job == "expire-snapshots":
            counts = {"snapshots": self.snapshots}
        elif job == "rewrite-manifests":
            counts = {}
        return {"status": "succeeded", "dry-run": True, "executor": "spark", **counts}

    def change(self, job: str, after: Shape) -> dict[str, Any]:
        """The counts the proxy measured around the run (Spark's own come with the job's result)."""
        if job == "rewrite-data-files":
            return {
                "data-files-before": self.data_files,
                "data-files-after": after.data_files,
                "delete-files-before": self.delete_files,
                "delete-files-after": after.delete_files,
            }
        if job == "expire-snapshots":
            return {"snapshots-expired": max(self.snapshots - after.snapshots, 0)}
        return {}


class SparkExecutor:
    """Runs a run's Spark jobs in one child Spark driver and returns each job's result."""

    def __init__(self, settings: SparkSettings, credentials: RunCredentials) -> None:
        self.settings, self._credentials = settings, credentials

    def runs(self, job: str) -> bool:
        return job in self.settings.jobs

    def command(self) -> list[str]:
        """The child's command line: no secret on it (the request, credential included, goes to stdin)."""
        own = self.settings
        if own.submit:
            jars = ["--jars", ",".join(own.jars)] if own.jars else []
            return [own.submit, "--master", own.master, "--deploy-mode", "client", *jars, str(DRIVER)]
        return [own.python or sys.executable, str(DRIVER)]

    def request(self, token: str, ident: TableIdent, jobs: Sequence[str], format_version: int) -> dict[str, Any]:
        own = self.settings
        return {
            "uri": own.uri,
            "warehouse": own.warehouse,
            "token": token,
            "namespace": list(ident.namespace),
            "name": ident.name,
            "format_version": format_version,
            "jobs": list(jobs),
            "master": "" if own.submit or own.connect_url else own.master,
            "connect_url": own.connect_url,
            "jars": [] if own.submit else list(own.jars),
            "conf": dict(own.conf),
            "rewrite_options": dict(own.rewrite_options),
        }

    async def run(
        self, run_id: str, catalog: str, ident: TableIdent, jobs: Sequence[str], format_version: int
    ) -> dict[str, dict[str, Any]]:
        """Each of ``jobs``' result (``failed`` with the reason when the driver failed, timed out or said nothing)."""
        timeout = self.settings.timeout_seconds
        token = self._credentials.mint(run_id, catalog, ident, timeout + CREDENTIAL_SLACK_SECONDS)
        body = json.dumps(self.request(token, ident, jobs, format_version)).encode()
        env = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")}
        env.setdefault("PYSPARK_PYTHON", self.settings.python or sys.executable)
        process = await asyncio.create_subprocess_exec(
            *self.command(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own process group: the JVM dies with it
        )
        try:
            out, err = await asyncio.wait_for(_communicate(process, body), timeout)
        except TimeoutError:
            _kill(process)
            await process.wait()
            return _all_failed(jobs, f"the Spark run took longer than spark_timeout ({timeout:g} s) and was killed")
        finally:
            _kill(process)
        found = _result(out.decode(errors="replace"))
        if found is None:
            tail = err.decode(errors="replace")[-STDERR_TAIL_CHARS:].replace(token, "***")
            log.warning("maintenance run %s: the Spark driver exited with %s: %s", run_id, process.returncode, tail)
            return _all_failed(jobs, f"the Spark driver exited with code {process.returncode} and no result")
        results: dict[str, dict[str, Any]] = found.get("jobs", {})
        error = found.get("error")
        for job in jobs:
            if job not in results:
                results[job] = {"status": "failed", "error": str(error or "the Spark driver did not run it")}
        return results


async def _communicate(process: asyncio.subprocess.Process, body: bytes) -> tuple[bytes, bytes]:
    """``process.communicate(body)`` keeping only the end of each output (``KEPT_*_BYTES``). Why: the driver may
    print for up to ``spark_timeout`` (Spark's logs of a table whose every task fails, a cluster's ``spark-submit``),
    and ``communicate`` would hold all of it in the serving process, twice while it joins the pieces."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None

    async def feed(stdin: asyncio.StreamWriter) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it exited without reading: it says why
            stdin.write(body)
            await stdin.drain()
            stdin.close()

    out, err, _ = await asyncio.gather(
        _tail(process.stdout, KEPT_STDOUT_BYTES), _tail(process.stderr, KEPT_STDERR_BYTES), feed(process.stdin)
    )
    await process.wait()
    return out, err


async def _tail(stream: asyncio.StreamReader, keep: int) -> bytes:
    """Everything ``stream`` says until it closes, of which the last ``keep`` bytes are kept."""
    kept = bytearray()
    while chunk := await stream.read(READ_BYTES):
        kept += chunk
        if len(kept) > 2 * keep:  # trimmed now and then, not at every chunk
            del kept[:-keep]
    return bytes(kept[-keep:])


def _result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            with contextlib.suppress(ValueError):
                found = json.loads(line[len(RESULT_MARKER) :])
                return found if isinstance(found, dict) else None
    return None


def _all_failed(jobs: Sequence[str], reason: str) -> dict[str, dict[str, Any]]:
    return {job: {"status": "failed", "error": reason} for job in jobs}


def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill the child's whole process group (the driver's JVM too) if anything of it is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
