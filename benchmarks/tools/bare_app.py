"""The ceiling for this stack: hypercorn + Starlette answering every GET with fixed bytes.

``python -m benchmarks.tools.bare_app BODY_FILE PORT [WORKERS]``: the same server, the same worker
count and the same response bytes as the proxy's loadTable, with none of the proxy's work. The body
file reaches the worker processes through ``BARE_APP_BODY``. With ``BARE_APP_SERVER=proxy`` in the environment
it serves on the proxy's own connection class (``irc_proxy.http.read_timeout.install``: its read loop and its
keep-alive timer) instead of stock hypercorn's: the ceiling of the proxy's server layer rather than the stack's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypercorn.config import Config
from hypercorn.run import run
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from irc_proxy.cli_serve import use_uvloop

BODY = Path(os.environ["BARE_APP_BODY"]).read_bytes() if os.environ.get("BARE_APP_BODY") else b""


async def load(_request: Request) -> Response:
    return Response(BODY, media_type="application/json")


async def healthz(_request: Request) -> Response:
    return Response(b"{}", media_type="application/json")


async def config(_request: Request) -> Response:
    """What a catalog client asks first (pyiceberg's RestCatalog does on start), answered as plainly."""
    return Response(b'{"defaults": {}, "overrides": {}}', media_type="application/json")


app = Starlette(routes=[Route("/healthz", healthz), Route("/v1/config", config), Route("/{path:path}", load)])


def main() -> None:
    os.environ["BARE_APP_BODY"] = sys.argv[1]
    config = Config()
    config.bind = [f"127.0.0.1:{int(sys.argv[2])}"]
    config.accesslog = None
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    config.workers = workers if workers > 1 else 0  # 0: serve in this process, as the proxy does with 1
    config.application_path = "benchmarks.tools.bare_app:app"
    # The loop the proxy's default (``server.event_loop = "auto"``) runs on, decided by the proxy's own code.
    config.worker_class = "uvloop" if use_uvloop("auto") else "asyncio"
    if os.environ.get("BARE_APP_SERVER") == "proxy":
        from irc_proxy.http.read_timeout import install

        install()
    run(config)


if __name__ == "__main__":
    main()
