"""Command line: ``irc-proxy serve``, ``check-config``, ``db upgrade|status``, ``auth hash-secret``; the admin
commands (``principals``, ``roles``, ``grants``, ``trash``, ``maintenance``) are declared in their own modules."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from irc_proxy import __version__, cli_admin, cli_maintenance, cli_trash
from irc_proxy.cli_help import command, config_option, formatter, group

if TYPE_CHECKING:
    from irc_proxy.settings import Settings

# Nothing above may import the server's libraries (pydantic, SQLAlchemy, pyiceberg, Starlette, boto3): `--help`
# and a mistyped command answer in a fraction of a second; each command imports what it needs when it runs.

EXAMPLES = """examples:
  irc-proxy serve                              # http://127.0.0.1:8181, a local catalog under ./irc-proxy-data
  irc-proxy serve --config irc-proxy.toml --port 18403
  irc-proxy check-config --config irc-proxy.toml
  irc-proxy trash list --config irc-proxy.toml
  irc-proxy maintenance run sales.orders --dry-run --wait
  irc-proxy COMMAND --help                     # each command's options and examples"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="irc-proxy",
        description="Apache Iceberg REST catalog server and proxy. Configuration: a TOML file (--config or\n"
        "$IRC_PROXY_CONFIG) plus IRC_PROXY_* environment overrides; see docs/configuration/reference.md.\n"
        "Commands other than serve and db upgrade use an existing state database and never create one.",
        epilog=EXAMPLES,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"irc-proxy {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = command(
        commands,
        "serve",
        "serve the REST catalog (and the web console)",
        "Serve the Iceberg REST catalog on server.host:server.port (default 127.0.0.1:8181) until SIGINT or "
        "SIGTERM. Creates the state database (and each local catalog's) if there is none. The start-up log names "
        "the REST URI to give engines and the console's URL.",
        [
            "irc-proxy serve",
            "irc-proxy serve --config irc-proxy.toml --host 0.0.0.0 --port 18403",
            "IRC_PROXY_SERVER__PORT=18403 irc-proxy serve",
        ],
    )
    config_option(serve)
    serve.add_argument("--host", help="override server.host (an address to listen on)")
    serve.add_argument("--port", type=int, help="override server.port")
    check = command(
        commands,
        "check-config",
        "validate the configuration and print it (secrets masked)",
        "Read the configuration file and the IRC_PROXY_* environment as serve would, and print the effective "
        "settings as JSON with secrets masked; or one line naming each bad key (exit 2). Touches no database.",
        ["irc-proxy check-config --config irc-proxy.toml", "IRC_PROXY_SERVER__PORT=9999 irc-proxy check-config"],
    )
    config_option(check)
    db_actions = group(
        commands,
        "db",
        "manage the state database schema",
        "The state database (state.database_url, default <data_dir>/state.db) holds views, grants, the audit trail "
        "and the trash. serve initialises a new one; upgrade it explicitly after installing a new version.",
        ["irc-proxy db upgrade --config irc-proxy.toml", "irc-proxy db status --config irc-proxy.toml"],
        "db_command",
    )
    config_option(
        command(
            db_actions,
            "upgrade",
            "create or upgrade the schema to this version",
            "Create the state database if there is none, bring its schema to this version's revision, and create "
            "or upgrade each local catalog's tables (under the schema lock: safe beside running replicas).",
            ["irc-proxy db upgrade --config irc-proxy.toml"],
        )
    )
    config_option(
        command(
            db_actions,
            "status",
            "print the schema revision",
            "Print the state database's schema revision and the one this version needs; exit 0 when they match, "
            "1 otherwise (also when there is no state database: none is created).",
            ["irc-proxy db status --config irc-proxy.toml"],
        )
    )
    audit_actions = group(
        commands,
        "audit",
        "read the audit trail",
        "Read the audit trail (audit.sink = database) from the state database, as GET /management/v1/audit does.",
        ["irc-proxy audit query --since 2026-12-01T00:00:00Z --principal svc-spark"],
        "audit_command",
    )
    query = command(
        audit_actions,
        "query",
        "print audit records, newest first",
        "Print audit records, newest first, one per line (or JSON with --json); filters combine. Prints nothing "
        "(and says so on stderr) when no record matches.",
        [
            "irc-proxy audit query --config irc-proxy.toml --limit 20",
            "irc-proxy audit query --since 2026-12-01T00:00:00Z --principal svc-spark --object sales.eu",
            "irc-proxy audit query --operation 'trash.*' --decision allowed --before-id 1200 --json",
        ],
    )
    config_option(query)
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
    cli_maintenance.add_commands(commands)
    auth_actions = group(
        commands,
        "auth",
        "authentication helpers",
        "Helpers for auth.mode = oauth2: the proxy keeps only hashes of its clients' secrets.",
        ["irc-proxy auth hash-secret --generate"],
        "auth_command",
    )
    hash_secret = command(
        auth_actions,
        "hash-secret",
        "hash a client secret for auth.clients[].secret_hash",
        "Read a client secret from stdin (never the command line) and print its hash for auth.clients[].secret_hash; "
        "with --generate, make a new secret and print it and its hash.",
        ["irc-proxy auth hash-secret --generate", 'printf %s "$SECRET" | irc-proxy auth hash-secret'],
    )
    hash_secret.add_argument("--generate", action="store_true", help="generate a new secret; print it and its hash")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``irc-proxy`` console script; returns the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "auth":
        return hash_client_secret(args.generate)
    from irc_proxy.settings import ENV_CONFIG_FILE, ConfigError, load_settings

    try:
        settings = load_settings(args.config)
    except ConfigError as exc:
        print(f"irc-proxy: {exc}", file=sys.stderr)
        return 2
    if args.command == "check-config":
        from irc_proxy.masking import mask_text

        # Secret types mask themselves; any other URL with credentials in it (an endpoint_url with
        # user-info, say) is masked here too.
        print(mask_text(settings.model_dump_json(indent=2)))
        return 0
    if args.command != "serve":
        return _guarded(settings, args, args.config or os.environ.get(ENV_CONFIG_FILE))
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    if overrides:
        settings = settings.model_copy(update={"server": settings.server.model_copy(update=overrides)})
    if args.config:
        os.environ[ENV_CONFIG_FILE] = args.config
    from irc_proxy.cli_serve import serve

    return serve(settings)


def _guarded(settings: Settings, args: argparse.Namespace, config: str | None) -> int:
    """Run a command on the state database: each failure one line on stderr (no traceback), exit 1 or 2."""
    from sqlalchemy.exc import SQLAlchemyError

    from irc_proxy.cli_state import database_failure
    from irc_proxy.errors import CatalogError, StartupError
    from irc_proxy.stores.db import NoStateDatabase

    try:
        return _run_command(settings, args)
    except NoStateDatabase as exc:
        print(f"irc-proxy: {no_state_database(exc, config)}", file=sys.stderr)
        return 1 if args.command == "db" else 2  # `db status`: 1 is "not at this version's revision"
    except StartupError as exc:  # an out-of-date schema
        print(f"irc-proxy: {exc}", file=sys.stderr)
        return 2
    except (SQLAlchemyError, CatalogError) as exc:
        print(f"irc-proxy: {database_failure(exc)}", file=sys.stderr)
        return 1


def no_state_database(exc: Exception, config: str | None) -> str:
    """Why a command refused: where it looked (and from which configuration), and the two ways on."""
    source = f"configured by {config}" if config else "no configuration file: the defaults and IRC_PROXY_* variables"
    return (
        f"{exc} ({source}); nothing was created. Name the proxy's configuration with --config FILE "
        "(or $IRC_PROXY_CONFIG), or create the database with `irc-proxy db upgrade` or `irc-proxy serve`"
    )


def _run_command(settings: Settings, args: argparse.Namespace) -> int:
    """The commands on the state database (``serve``, ``check-config`` and ``auth`` run differently)."""
    if args.command == "db":
        return database(settings, args.db_command)
    if args.command == "audit":
        return audit_query(settings, args)
    if args.command == "trash":
        return cli_trash.run(settings, args)
    if args.command == "maintenance":
        return cli_maintenance.run(settings, args)
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


def database(settings: Settings, action: str) -> int:
    """``irc-proxy db upgrade|status``."""
    from irc_proxy.stores.db import create_state_engine, current_revision, head_revision, upgrade

    # status only reads: it must not leave a new, empty database behind (NoStateDatabase: exit 1, not at head)
    engine = create_state_engine(settings.state.database_url.get_secret_value(), create=action == "upgrade")
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

    from irc_proxy.cli_state import open_state
    from irc_proxy.stores.audit_query import query_audit
    from irc_proxy.text import field

    try:
        since, until = _utc(args.since), _utc(args.until)
    except ValueError as exc:
        print(f"irc-proxy: --since/--until: {exc}", file=sys.stderr)
        return 2
    engine = open_state(settings)
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
    if not records and not args.json:  # stdout stays empty for scripts; a person learns it was looked at
        print("irc-proxy: no audit records match", file=sys.stderr)
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
