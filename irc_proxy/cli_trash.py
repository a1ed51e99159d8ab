"""``irc-proxy trash list|restore|expunge``: the trash of dropped tables and views, from the command line.

The same operations as ``/management/v1/catalogs/{catalog}/trash``, run against the configured
catalogs and the state database directly (for scripts and for when no proxy is running). Restores and
expunges are audited as ``trash.restore``/``trash.expunge`` by ``cli:<local user>``.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TYPE_CHECKING, Any

from irc_proxy.cli_help import CONFIG_HELP, command, group

if TYPE_CHECKING:  # imported where used: `irc-proxy --help` must not pay for pyiceberg and the handlers
    from irc_proxy.handling.catalog import Catalog, Catalogs
    from irc_proxy.handling.operations.trash import Trash
    from irc_proxy.settings import Settings

NAMESPACE_HELP = (
    "only this namespace: sales.eu, sales:eu or sales%%1Feu (':' or '%%1F' split levels, then %%XX escapes are "
    "decoded; '.' only when there is no ':' or '%%')"
)


def cli_principal() -> str:
    """Who restores and expunges from the command line, in the audit trail: ``cli:<local user>``."""
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):  # no login name and no passwd entry (a container's arbitrary uid)
        return "cli:unknown"


def add_commands(commands: Any) -> None:
    """``trash list|restore|expunge`` under the main parser's ``commands``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    actions = group(
        commands,
        "trash",
        "list, restore or expunge dropped tables and views",
        "A dropped table or view is kept in the trash for its catalog's drop_retention (server.drop_retention by "
        "default), with its files, and can be restored until then. Entry ids are unique across catalogs.",
        ["irc-proxy trash list --config irc-proxy.toml", "irc-proxy trash restore 3f1c0e... --to sales.eu.orders_v2"],
        "trash_command",
    )
    listing = command(
        actions,
        "list",
        "print the kept entries, newest first (JSON)",
        "Print one catalog's kept entries, newest first, as the admin API's JSON (each with its id).",
        ["irc-proxy trash list --config irc-proxy.toml", "irc-proxy trash list --catalog lake --namespace sales.eu"],
        [common],
    )
    listing.add_argument("--catalog", default="", help="the catalog (default: the default catalog)")
    listing.add_argument("--namespace", help=NAMESPACE_HELP)
    listing.add_argument("--dropped-by", help="only drops by this principal")
    listing.add_argument("--kind", choices=("table", "view"), help="only tables or only views")
    listing.add_argument("--limit", type=int, default=100, help="at most N entries (default 100)")
    restore = command(
        actions,
        "restore",
        "restore an entry (optionally under a new name)",
        "Restore a kept entry under its old name or --to another one. The id alone finds it (ids are unique across "
        "catalogs); --catalog, if given, must be the catalog that holds it.",
        [
            "irc-proxy trash restore 3f1c0e9a2b7d4c55a1e0f6b9c8d7e6f5",
            "irc-proxy trash restore 3f1c0e9a2b7d4c55a1e0f6b9c8d7e6f5 --to sales.eu.orders_v2 --create-namespace",
        ],
        [common],
    )
    restore.add_argument("id", help="the entry's id (trash list)")
    restore.add_argument("--catalog", default="", help="the catalog that holds the entry (checked; not needed)")
    restore.add_argument(
        "--to",
        metavar="NAMESPACE.NAME",
        help="restore under this name: the namespace as for --namespace of trash list, then the name (sales.eu.t, "
        "sales:eu:t)",
    )
    restore.add_argument("--create-namespace", action="store_true", help="create a missing namespace")
    expunge = command(
        actions,
        "expunge",
        "forget an entry now (purging if asked)",
        "Forget a kept entry now; its files are deleted if its drop asked for a purge. The id alone finds it.",
        ["irc-proxy trash expunge 3f1c0e9a2b7d4c55a1e0f6b9c8d7e6f5"],
        [common],
    )
    expunge.add_argument("id", help="the entry's id (trash list)")
    expunge.add_argument("--catalog", default="", help="the catalog that holds the entry (checked; not needed)")


async def _entry(catalogs: Catalogs, trash: Trash, args: argparse.Namespace) -> tuple[Catalog, Any]:
    """The entry ``args.id`` and its catalog: by the id alone, or in ``--catalog`` when it is given."""
    if args.catalog:
        catalog = catalogs.get(args.catalog)
        return catalog, await trash.entry(catalog, args.id)
    entry = await trash.find(args.id)
    return catalogs.get(entry.catalog), entry


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Run one ``trash`` action; 0 on success, 1 when refused."""
    import asyncio
    import json
    import time

    from irc_proxy.app import build_catalogs, build_trash
    from irc_proxy.audit import Auditor
    from irc_proxy.cli_state import open_state
    from irc_proxy.errors import CatalogError
    from irc_proxy.handling.naming import typed_identifier, typed_namespace
    from irc_proxy.handling.operations.trash import Restore, TrashFilter, original
    from irc_proxy.text import printable
    from irc_proxy.threads import ThreadRunner

    separator = settings.server.namespace_separator
    engine = open_state(settings)  # before any catalog is built: a local one would make its database
    threads = ThreadRunner(settings.server.blocking_threads)

    async def act() -> Any:
        catalogs = build_catalogs(settings, threads, engine)
        auditor = Auditor.build(settings.audit, engine, threads)
        auditor.start()
        try:
            trash = build_trash(settings, engine, threads, auditor.submit)
            if args.trash_command == "list":
                catalog = catalogs.get(args.catalog or None)
                namespace = typed_namespace(args.namespace, separator) if args.namespace else None
                which = TrashFilter(namespace=namespace, kind=args.kind, dropped_by=args.dropped_by)
                return [entry.to_json() for entry in await trash.entries(catalog, which, 0, args.limit)]
            if args.trash_command == "restore":
                target = typed_identifier(args.to, separator) if args.to else None
                catalog, entry = await _entry(catalogs, trash, args)
                started = time.monotonic()
                restored = await trash.restore(catalog, entry, Restore(target, args.create_namespace))
                what = f"command line: restored {entry.kind} {original(entry)} as {restored.ident}"
                trash.audit_restore("trash.restore", entry, restored.ident, cli_principal(), what, started)
                identifier = {"namespace": list(restored.ident.namespace), "name": restored.ident.name}
                return {
                    "catalog": catalog.name,
                    "identifier": identifier,
                    "kind": restored.kind,
                    "metadata-location": restored.metadata_location,
                }
            catalog, entry = await _entry(catalogs, trash, args)
            started = time.monotonic()
            await trash.expunge(catalog, entry)
            trash.audit("trash.expunge", entry, cli_principal(), "command line", started)
            return {"expunged": args.id}
        finally:
            await auditor.close()
            await catalogs.close()

    try:
        result = asyncio.run(act())
    except CatalogError as exc:
        print(f"irc-proxy: {printable(exc.message)}", file=sys.stderr)  # may quote stored names
        return 1
    finally:
        engine.dispose()
    print(json.dumps(result, indent=2, default=str))
    return 0
