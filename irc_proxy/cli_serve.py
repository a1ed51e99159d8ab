"""``irc-proxy serve``: check the port and the state database, say where everything is, and run hypercorn."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import signal
import sys
from typing import TYPE_CHECKING, Any

from irc_proxy import __version__
from irc_proxy.settings import base_url

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from irc_proxy.settings import Settings

log = logging.getLogger("irc_proxy")
CONSOLE_PATH = "/ui"
"""The console's root (``http.console_cookie.UI_PREFIX``, not imported: that module needs Starlette)."""


def log_addresses(settings: Settings) -> None:
    """The start-up lines a new user needs: where engines connect (the REST URI), and the console's URL."""
    server = settings.server
    url = base_url(server.host, server.port)
    log.info("irc-proxy %s listening on http://%s:%d", __version__, server.host, server.port)
    names = ", ".join(settings.catalogs) or "none configured"
    log.info("REST catalog URI: %s (engines: uri = this, warehouse = a catalog's name: %s)", url, names)
    if server.ui:
        log.info("web console: %s%s", url, CONSOLE_PATH)
    else:
        log.info("web console: off (server.ui = false)")


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(settings: Settings) -> int:
    """Run hypercorn until SIGINT/SIGTERM."""
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config
    from hypercorn.utils import LifespanFailureError

    from irc_proxy import h11_linear
    from irc_proxy.app import create_app
    from irc_proxy.http.read_timeout import install as install_read_loop
    from irc_proxy.logs import configure_logging

    h11_linear.install()  # hypercorn reads every request head with h11: no quadratic regex on a hostile one
    problem = listen_problem(settings.server.host, settings.server.port) or state_database_problem(settings)
    if problem:
        print(f"irc-proxy: refusing to start: {problem}", file=sys.stderr)
        return 2
    server = settings.server
    configure_logging(server.log_level, server.log_format)
    config = Config()
    config.bind = [f"{server.host}:{server.port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # through our handler (text or JSON)
    config.graceful_timeout = server.graceful_timeout_seconds
    config.read_timeout = math.ceil(server.read_timeout_seconds)  # hypercorn wants whole seconds
    config.keep_alive_timeout = server.keep_alive_timeout_seconds
    # the read timeout as one timer per connection, not a task per read; a write timeout and a connection cap
    install_read_loop(server.write_timeout_seconds, server.max_connections)  # (workers: asgi.py)
    log_addresses(settings)
    log.info("authentication: %s", settings.auth.mode)
    if settings.auth.mode == "none" and not is_loopback(settings.server.host):
        log.warning(
            "auth.mode is none and the server listens on %s, beyond loopback: anyone who can reach it "
            "may read and change every catalog (set auth.mode = oauth2 or oidc)",
            settings.server.host,
        )
    for name, catalog in settings.catalogs.items():
        log.info("catalog %r: backend %s, warehouse %s", name, catalog.kind, catalog.warehouse)
    uvloop = use_uvloop(server.event_loop)
    log.info("event loop: %s", "uvloop" if uvloop else "asyncio")
    if server.workers > 1:  # processes sharing the sockets bound here; each builds the app (irc_proxy.asgi)
        from hypercorn.run import run as run_workers

        config.worker_class = "uvloop" if uvloop else "asyncio"
        config.workers = server.workers
        config.application_path = "irc_proxy.asgi:app"
        log.info("serving with %d worker processes", server.workers)
        return int(run_workers(config))

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await hypercorn_serve(create_app(settings), config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

    try:
        _run_loop(run(), uvloop)
    except LifespanFailureError as exc:  # a catalog could not be set up: say why in one line
        log.debug("start-up failed: %s", exc)
        print(f"irc-proxy: refusing to start: {startup_failure(str(exc))}", file=sys.stderr)
        return 2
    return 0


def _run_loop(main: Coroutine[Any, Any, None], uvloop: bool) -> None:
    """Run ``main`` on uvloop or asyncio's loop. However it ends, the log lines still pending (the access log
    writes its lines in batches: ``irc_proxy.logs``) are written then, before anything else is printed."""
    from irc_proxy.logs import flush_logs

    try:
        if uvloop:
            import uvloop as libuv_loop

            libuv_loop.run(main)
        else:
            asyncio.run(main)
    finally:
        flush_logs()


def use_uvloop(choice: str) -> bool:
    """Whether ``server.event_loop`` means uvloop here: ``uvloop`` does (and fails loudly without it), ``auto`` does
    when uvloop can be imported."""
    if choice == "asyncio":
        return False
    if choice == "uvloop":
        return True
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def listen_problem(host: str, port: int) -> str:
    """Why the server could not listen on ``host:port`` ("" when it can), e.g. the port is in use."""
    import socket

    try:
        family, _, _, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as hypercorn binds
            sock.bind(address)
    except OSError as exc:
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return ""


def state_database_problem(settings: Settings) -> str:
    """Why ``serve`` cannot use the state database ("" when it can); a new, empty one is initialised."""
    from sqlalchemy.exc import SQLAlchemyError

    from irc_proxy.cli_state import database_failure
    from irc_proxy.stores.db import SchemaOutOfDate, create_state_engine, ensure_schema

    try:
        engine = create_state_engine(settings.state.database_url.get_secret_value())
    except SQLAlchemyError as exc:
        return database_failure(exc)
    try:
        ensure_schema(engine, settings.state.auto_upgrade)
    except SchemaOutOfDate as exc:
        return str(exc)
    except SQLAlchemyError as exc:
        return database_failure(exc)
    finally:
        engine.dispose()
    return ""


def startup_failure(traceback_text: str) -> str:
    """The exception line of the traceback hypercorn reports for a failed start-up (passwords masked)."""
    from irc_proxy.masking import mask_text

    lines = [line for line in traceback_text.splitlines() if re.match(r"^[\w.]+(Error|Exception)\b", line)]
    last = lines[-1] if lines else "see the log (log_level = debug)"
    return mask_text(last)
