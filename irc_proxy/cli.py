"""Command line: ``irc-proxy serve``, ``check-config``, ``db upgrade|status``, ``auth hash-secret``."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import math
import os
import re
import signal
import sys
from collections.abc import Sequence

from irc_proxy import __version__, cli_admin, cli_trash
from irc_proxy.masking import mask_text
from irc_proxy.settings import ENV_CONFIG_FILE, ConfigError, Settings, load_settings

log = logging.getLogger("irc_proxy")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="irc-proxy",
        description="Apache Iceberg REST catalog server and proxy. Configuration: a TOML file "
        "(--config or $IRC_PROXY_CONFIG) plus IRC_PROXY_* environment overrides; see docs/configuration/reference.md.",
    )
    parser.add_argument("--version", action="version", version=f"irc-proxy {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve the REST catalog")
    check = commands.add_parser("check-config", help="validate the configuration and print it (secrets masked)")
    for sub in (serve, check):
        sub.add_argument("--config", metavar="FILE", help="TOML configuration file")
    db = commands.add_parser("db", help="manage the state database schema (views, audit)")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    for action, text in (
        ("upgrade", "create or upgrade the schema to this version"),
        ("status", "print the schema revision"),
    ):
        db_commands.add_parser(action, help=text).add_argument(
            "--config", metavar="FILE", help="TOML configuration file"
        )
    audit = commands.add_parser("audit", help="read the audit trail")
    audit_commands = audit.add_subparsers(dest="audit_command", required=True, metavar="ACTION")
    query = audit_commands.add_parser("query", help="print audit records, newest first")
    query.add_argument("--config", metavar="FILE", help="TOML configuration file")
    query.add_argument("--since", metavar="ISO", help="records at or after this time (ISO 8601; UTC if no offset)")
    query.add_argument("--until", metavar="ISO", help="records before this time")
    query.add_argument("--principal", help="records of this principal")
    query.add_argument("--object", metavar="PREFIX", help="records whose object path starts with PREFIX")
    query.add_argument("--operation", help="records of this operation (e.g. dropTable; a trailing * matches a prefix)")
    query.add_argument("--decision", choices=("allowed", "denied"), help="only allowed or only denied calls")
    query.add_argument("--before-id", type=int, metavar="ID", help="records older than this one (to page)")
    query.add_argument("--limit", type=int, default=100, help="at most N records (default 100)")
    query.add_argument("--json", action="store_true", help="one JSON object per line")
    cli_admin.add_commands(commands)
    cli_trash.add_commands(commands)
    auth = commands.add_parser("auth", help="authentication helpers")
    auth_commands = auth.add_subparsers(dest="auth_command", required=True, metavar="ACTION")
    hash_secret = auth_commands.add_parser(
        "hash-secret", help="read a client secret from stdin and print its hash for auth.clients[].secret_hash"
    )
    hash_secret.add_argument("--generate", action="store_true", help="generate a new secret; print it and its hash")
    serve.add_argument("--host", help="override server.host")
    serve.add_argument("--port", type=int, help="override server.port")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``irc-proxy`` console script; returns the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "auth":
        return hash_client_secret(args.generate)
    try:
        settings = load_settings(args.config)
    except ConfigError as exc:
        print(f"irc-proxy: {exc}", file=sys.stderr)
        return 2
    if args.command != "serve":
        from sqlalchemy.exc import SQLAlchemyError

        from irc_proxy.errors import CatalogError

        try:
            return _run_command(settings, args)
        except (SQLAlchemyError, CatalogError) as exc:
            print(f"irc-proxy: {database_failure(exc)}", file=sys.stderr)
            return 1
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    if overrides:
        settings = settings.model_copy(update={"server": settings.server.model_copy(update=overrides)})
    if args.config:
        os.environ[ENV_CONFIG_FILE] = args.config
    return serve(settings)


def _run_command(settings: Settings, args: argparse.Namespace) -> int:
    """Every command but ``serve`` and ``auth`` (they need no settings or run differently)."""
    if args.command == "check-config":
        # Secret types mask themselves; any other URL with credentials in it (an endpoint_url with
        # user-info, say) is masked here too.
        print(mask_text(settings.model_dump_json(indent=2)))
        return 0
    if args.command == "db":
        return database(settings, args.db_command)
    if args.command == "audit":
        return audit_query(settings, args)
    if args.command == "trash":
        return cli_trash.run(settings, args)
    return cli_admin.run(settings, args)


def hash_client_secret(generate: bool) -> int:
    """``irc-proxy auth hash-secret``: the secret comes from stdin (never the command line)."""
    import getpass
    import secrets

    from irc_proxy.handling.security.authn import hash_secret

    if generate:
        secret = secrets.token_urlsafe(32)
        print(f"secret: {secret}")
        print(f"secret_hash: {hash_secret(secret)}")
        return 0
    secret = getpass.getpass("client secret: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\r\n")
    if not secret:
        print("irc-proxy: empty secret", file=sys.stderr)
        return 2
    print(hash_secret(secret))
    return 0


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def database(settings: Settings, action: str) -> int:
    """``irc-proxy db upgrade|status``."""
    from irc_proxy.stores.db import create_state_engine, current_revision, head_revision, upgrade

    engine = create_state_engine(settings.state.database_url.get_secret_value())
    try:
        if action == "upgrade":
            before, after = upgrade(engine)
            if before == after:
                print(f"state database is up to date: {after}")
            else:
                print(f"state database upgraded: {before or 'empty'} -> {after}")
        else:
            current, head = current_revision(engine), head_revision()
            print(f"state database revision: {current or 'none'} (this irc-proxy needs {head})")
            return 0 if current == head else 1
    finally:
        engine.dispose()
    return local_catalog_tables(settings)


def local_catalog_tables(settings: Settings) -> int:
    """``db upgrade``, second half: create (or upgrade) each local catalog's tables, under the schema lock."""
    from irc_proxy.backends.local import catalog_engine, ensure_catalog_tables
    from irc_proxy.settings import LocalCatalogSettings

    for name, catalog in settings.catalogs.items():
        if not isinstance(catalog, LocalCatalogSettings):
            continue
        engine = catalog_engine(catalog.database_url.get_secret_value())
        try:
            done = ensure_catalog_tables(engine, upgrade=True)
        finally:
            engine.dispose()
        print(f"catalog {name}: tables {done}" if done else f"catalog {name}: tables are up to date")
    return 0


def database_failure(exc: Exception) -> str:
    """One line about a failed state database call (no stack trace, no password of a URL)."""
    message = getattr(exc, "message", None) or str(getattr(exc, "orig", None) or exc)
    first = message.strip().splitlines()[0] if message.strip() else type(exc).__name__
    return "state database: " + mask_text(first)


def _utc(text: str | None) -> datetime.datetime | None:
    if text is None:
        return None
    moment = datetime.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC)


def audit_query(settings: Settings, args: argparse.Namespace) -> int:
    """``irc-proxy audit query``: filter the ``audit_record`` table."""
    import json

    from irc_proxy.stores.audit_query import query_audit
    from irc_proxy.stores.db import SchemaOutOfDate, create_state_engine, ensure_schema
    from irc_proxy.text import field

    try:
        since, until = _utc(args.since), _utc(args.until)
    except ValueError as exc:
        print(f"irc-proxy: --since/--until: {exc}", file=sys.stderr)
        return 2
    engine = create_state_engine(settings.state.database_url.get_secret_value())
    try:
        ensure_schema(engine, settings.state.auto_upgrade)
    except SchemaOutOfDate as exc:
        engine.dispose()
        print(f"irc-proxy: {exc}", file=sys.stderr)
        return 2
    try:
        operation = args.operation or ""
        records = query_audit(
            engine,
            since=since,
            until=until,
            principal=args.principal,
            object_prefix=args.object,
            operation=None if not operation or operation.endswith("*") else operation,
            operation_prefix=operation[:-1] if operation.endswith("*") else None,
            decision=args.decision,
            before_id=args.before_id,
            limit=args.limit,
        )
    finally:
        engine.dispose()
    for record in records:
        if args.json:
            print(json.dumps(record))
        else:
            # Principal, object, operation and request id may be a client's text: one column each, never raw.
            where = field(f"{record['catalog'] or '-'}:{record['object'] or '-'}")
            print(
                f"{record['time']} {field(record['principal'])} {field(record['operation'])} {where} "
                f"{record['decision']} {record['status']} {record['latency_ms']:.1f}ms id={field(record['request_id'])}"
            )
    return 0


def serve(settings: Settings) -> int:
    """Run hypercorn until SIGINT/SIGTERM."""
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config
    from hypercorn.utils import LifespanFailureError

    from irc_proxy.app import create_app
    from irc_proxy.logs import configure_logging

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
    log.info("irc-proxy %s listening on http://%s:%d", __version__, settings.server.host, settings.server.port)
    log.info("authentication: %s", settings.auth.mode)
    if settings.auth.mode == "none" and not is_loopback(settings.server.host):
        log.warning(
            "auth.mode is none and the server listens on %s, beyond loopback: anyone who can reach it "
            "may read and change every catalog (set auth.mode = oauth2 or oidc)",
            settings.server.host,
        )
    for name, catalog in settings.catalogs.items():
        log.info("catalog %r: backend %s, warehouse %s", name, catalog.kind, catalog.warehouse)
    if server.workers > 1:  # processes sharing the sockets bound here; each builds the app (irc_proxy.asgi)
        from hypercorn.run import run as run_workers

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
        asyncio.run(run())
    except LifespanFailureError as exc:  # a catalog could not be set up: say why in one line
        log.debug("start-up failed: %s", exc)
        print(f"irc-proxy: refusing to start: {startup_failure(str(exc))}", file=sys.stderr)
        return 2
    return 0


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
    lines = [line for line in traceback_text.splitlines() if re.match(r"^[\w.]+(Error|Exception)\b", line)]
    last = lines[-1] if lines else "see the log (log_level = debug)"
    return mask_text(last)
