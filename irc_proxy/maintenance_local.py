"""A child process of the ``local`` maintenance executor: ``python -m irc_proxy.maintenance_local``, started by the
serving process (``handling/maintenance/children.py``, which describes the protocol), never by hand.

It lowers its own CPU priority first (``NICENESS``: before the imports, which are most of its start cost), reads the
settings from standard input, builds the catalogs as ``app.py`` does and runs the jobs it is sent with the same code
as a server that runs them in-process (``Maintenance.run_jobs``). It neither audits nor meters: the serving process
does, from the results. Standard output carries only the protocol's lines (anything else printing to it is moved to
standard error); it exits as soon as its standard input closes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import pickle
import resource
import sys
import time
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # the server's modules are imported once the priority is lowered (``main``)
    from irc_proxy.settings import Settings

NICENESS = 10
"""How much lower than the serving process the child's CPU priority is."""
OOM_SCORE_ADJ = 800
"""How much likelier than others the kernel's OOM killer is to pick this child (-1000..1000; 0 is the default)."""
LINE_LIMIT = 16 * 1024**2
log = logging.getLogger("irc_proxy.maintenance")


def main() -> int:
    os.nice(NICENESS)
    _first_to_go()
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a library's print cannot corrupt the protocol
    begun = time.monotonic()
    # The parent sends nothing more before this child says it is ready: this buffered read takes no later line.
    first = json.loads(sys.stdin.readline() or "{}")
    if "settings" not in first:
        return 2
    settings = pickle.loads(base64.b64decode(first["settings"]))  # noqa: S301 - the parent's, over a pipe

    from irc_proxy.logs import configure_logging

    configure_logging(settings.server.log_level, settings.server.log_format)
    asyncio.run(_serve(settings, out, begun))
    return 0


def _first_to_go() -> None:
    """Make this child the OOM killer's first pick. Why: a writer's table can make a job use much memory (wide rows,
    large manifests); when the host runs out, the kernel kills the process with the most memory, which may be the
    serving process (it holds the pointer cache, connections, every other request). Raising one's own score needs no
    privilege; the run then fails with "killed by SIGKILL (out of memory, or killed)" and the server goes on."""
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w", encoding="ascii") as adj:
        adj.write(str(OOM_SCORE_ADJ))  # OSError: not Linux, or /proc not mounted


async def _serve(settings: Settings, out: IO[str], begun: float) -> None:
    from irc_proxy.app import build_catalogs, build_maintenance
    from irc_proxy.errors import CatalogError
    from irc_proxy.stores.db import create_state_engine
    from irc_proxy.threads import ThreadRunner

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    threads = ThreadRunner(settings.server.blocking_threads)
    state = create_state_engine(settings.state.database_url.get_secret_value())  # its server checked the schema
    catalogs = build_catalogs(settings, threads, state)
    maintenance = build_maintenance(settings, state, threads, isolation="thread")
    every = {catalog.name: catalog for catalog in catalogs.all()}
    maintenance.know(every)
    requests: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    listening = asyncio.create_task(_listen(requests))
    send({"ready": round(time.monotonic() - begun, 3)})
    try:
        while True:
            request = await requests.get()
            error: str | None = None
            try:
                maintenance.holder = str(request["holder"])  # its checkpoints are saved under the parent's claim
                run = await maintenance.store.get(str(request["catalog"]), str(request["run"]))
                if run is None:
                    raise CatalogError(f"no maintenance run {request['run']}")
                results: dict[str, Any] = {}
                await maintenance.run_jobs(
                    every[run.catalog],
                    run,
                    list(request["jobs"]),
                    results,
                    lambda job, result: send({"job": job, "result": result}),
                )
            except CatalogError as exc:
                error = exc.message
            except Exception as exc:  # a bug: said, the next request is served
                log.exception("maintenance run %s failed", request.get("run"))
                error = f"{type(exc).__name__}: internal error"
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
            send({"done": True, "error": error, "rss": rss})
    finally:
        listening.cancel()
        await catalogs.close()
        state.dispose()


async def _listen(requests: asyncio.Queue[dict[str, Any]]) -> None:
    """Queue each request line; exit the process when standard input closes (the serving process is gone)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        requests.put_nowait(json.loads(line))
    os._exit(0)  # mid-job too: every job is safe to stop anywhere, as when the server itself is killed


if __name__ == "__main__":
    sys.exit(main())
