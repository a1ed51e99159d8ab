"""``irc-proxy trash list|restore|expunge``: the trash of dropped tables and views, from the command line.

The same operations as ``/management/v1/catalogs/{catalog}/trash``, run against the configured
catalogs and the state database directly (for scripts and for when no proxy is running). Restores and
expunges are audited as ``trash.restore``/``trash.expunge`` by ``cli:<local user>``.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
import time
from typing import Any

from irc_proxy.audit import Auditor
from irc_proxy.errors import CatalogError
from irc_proxy.handling.naming import TableIdent, validate_namespace
from irc_proxy.handling.operations.trash import Restore, TrashFilter, original
from irc_proxy.settings import Settings
from irc_proxy.text import printable
from irc_proxy.threads import ThreadRunner


def cli_principal() -> str:
    """Who restores and expunges from the command line, in the audit trail: ``cli:<local user>``."""
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):  # no login name and no passwd entry (a container's arbitrary uid)
        return "cli:unknown"


def add_commands(commands: Any) -> None:
    """``trash list|restore|expunge`` under the main parser's ``commands``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="FILE", help="TOML configuration file")
    common.add_argument("--catalog", default="", help="the catalog (default: the default catalog)")
    trash = commands.add_parser("trash", help="list, restore or expunge dropped tables and views")
    actions = trash.add_subparsers(dest="trash_command", required=True, metavar="ACTION")
    listing = actions.add_parser("list", parents=[common], help="print the kept entries, newest first (JSON)")
    listing.add_argument("--namespace", help="only this namespace (levels joined by '.')")
    listing.add_argument("--dropped-by", help="only drops by this principal")
    listing.add_argument("--kind", choices=("table", "view"), help="only tables or only views")
    listing.add_argument("--limit", type=int, default=100, help="at most N entries (default 100)")
    restore = actions.add_parser("restore", parents=[common], help="restore an entry (optionally under a new name)")
    restore.add_argument("id")
    restore.add_argument("--to", metavar="NS.NAME", help="restore under this name (namespace levels joined by '.')")
    restore.add_argument("--create-namespace", action="store_true", help="create a missing namespace")
    actions.add_parser("expunge", parents=[common], help="forget an entry now (purging if asked)").add_argument("id")


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Run one ``trash`` action; 0 on success, 1 when refused."""
    from irc_proxy.app import build_catalogs, build_trash
    from irc_proxy.stores.db import create_state_engine, ensure_schema

    engine = create_state_engine(settings.state.database_url.get_secret_value())
    threads = ThreadRunner(settings.server.blocking_threads)

    async def act() -> Any:
        catalogs = build_catalogs(settings, threads, engine)
        auditor = Auditor.build(settings.audit, engine, threads)
        auditor.start()
        try:
            catalog = catalogs.get(args.catalog or None)
            trash = build_trash(settings, engine, threads, auditor.submit)
            if args.trash_command == "list":
                namespace = tuple(args.namespace.split(".")) if args.namespace else None
                which = TrashFilter(namespace=namespace, kind=args.kind, dropped_by=args.dropped_by)
                return [entry.to_json() for entry in await trash.entries(catalog, which, 0, args.limit)]
            if args.trash_command == "restore":
                target = None
                if args.to:
                    *levels, name = args.to.split(".")
                    validate_namespace(levels)
                    target = TableIdent(tuple(levels), name)
                entry, started = await trash.entry(catalog, args.id), time.monotonic()
                restored = await trash.restore(catalog, entry, Restore(target, args.create_namespace))
                what = f"command line: restored {entry.kind} {original(entry)} as {restored.ident}"
                trash.audit_restore("trash.restore", entry, restored.ident, cli_principal(), what, started)
                identifier = {"namespace": list(restored.ident.namespace), "name": restored.ident.name}
                return {
                    "identifier": identifier,
                    "kind": restored.kind,
                    "metadata-location": restored.metadata_location,
                }
            entry, started = await trash.entry(catalog, args.id), time.monotonic()
            await trash.expunge(catalog, entry)
            trash.audit("trash.expunge", entry, cli_principal(), "command line", started)
            return {"expunged": args.id}
        finally:
            await auditor.close()
            await catalogs.close()

    try:
        ensure_schema(engine, settings.state.auto_upgrade)
        result = asyncio.run(act())
    except CatalogError as exc:
        print(f"irc-proxy: {printable(exc.message)}", file=sys.stderr)  # may quote stored names
        return 1
    finally:
        engine.dispose()
    print(json.dumps(result, indent=2, default=str))
    return 0
