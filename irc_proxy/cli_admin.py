"""``irc-proxy principals|roles|grants``: manage authorization directly in the state database.

The same operations as the admin API (``/management/v1``), for bootstrapping and scripts. Running
proxies see changes within ``auth.grants_cache_seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from irc_proxy.errors import CatalogError
from irc_proxy.handling.authn import hash_secret
from irc_proxy.handling.authz import ANY_CATALOG, Privilege, grant_target
from irc_proxy.settings import Settings
from irc_proxy.stores.authz import AuthzStore, StoredGrant
from irc_proxy.text import printable
from irc_proxy.threads import ThreadRunner

Action = Callable[[], Coroutine[Any, Any, Any]]


_COMMON = argparse.ArgumentParser(add_help=False)
_COMMON.add_argument("--config", metavar="FILE", help="TOML configuration file")
_COMMON.add_argument("--json", action="store_true", help="print JSON")


def add_commands(commands: Any) -> None:
    """Add the ``principals``, ``roles`` and ``grants`` sub-commands to the top-level parser."""
    principals = commands.add_parser("principals", help="manage principals (and their oauth2 client secrets)")
    actions = principals.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", parents=[_COMMON], help="list principals and their roles")
    create = actions.add_parser("create", parents=[_COMMON], help="create a principal; prints its client secret once")
    create.add_argument("name")
    create.add_argument("--role", action="append", default=[], help="assign this role (repeatable)")
    create.add_argument("--no-credentials", action="store_true", help="no client secret (e.g. an OIDC subject)")
    actions.add_parser("delete", parents=[_COMMON], help="delete a principal").add_argument("name")
    actions.add_parser("rotate", parents=[_COMMON], help="issue a new client secret; prints it once").add_argument(
        "name"
    )
    for action, text in (("assign", "give a principal a role"), ("unassign", "take a role from a principal")):
        sub = actions.add_parser(action, parents=[_COMMON], help=text)
        sub.add_argument("name")
        sub.add_argument("role")

    roles = commands.add_parser("roles", help="manage roles")
    actions = roles.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", parents=[_COMMON], help="list roles")
    actions.add_parser("create", parents=[_COMMON], help="create a role").add_argument("name")
    actions.add_parser("delete", parents=[_COMMON], help="delete a role and its grants").add_argument("name")

    grants = commands.add_parser("grants", help="manage grants of privileges to roles")
    actions = grants.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", parents=[_COMMON], help="list grants")
    listing.add_argument("--role", help="only this role's grants")
    add = actions.add_parser("add", parents=[_COMMON], help="grant a privilege to a role")
    add.add_argument("role")
    add.add_argument("privilege", choices=[p.value for p in Privilege])
    add.add_argument("--catalog", required=True, help=f"catalog name, or {ANY_CATALOG} for every catalog")
    add.add_argument("--namespace", default="", help="namespace levels joined with '.' (e.g. sales.eu)")
    target = add.add_mutually_exclusive_group()
    target.add_argument("--table", help="a table in --namespace")
    target.add_argument("--view", help="a view in --namespace")
    revoke = actions.add_parser("revoke", parents=[_COMMON], help="revoke a grant by id (see grants list)")
    revoke.add_argument("role")
    revoke.add_argument("id", type=int)


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Run one ``principals``/``roles``/``grants`` action; 0 on success, 1 when refused."""
    from irc_proxy.stores.db import create_state_engine, ensure_schema

    engine = create_state_engine(settings.state.database_url.get_secret_value())
    try:
        ensure_schema(engine, settings.state.auto_upgrade)
        store = AuthzStore(engine, ThreadRunner(settings.server.blocking_threads))
        action = _ACTIONS[args.command](store, args, settings)
        result = asyncio.run(action())
    except CatalogError as exc:
        print(f"irc-proxy: {printable(exc.message)}", file=sys.stderr)  # may quote stored names
        return 1
    finally:
        engine.dispose()
    if result is not None:
        # JSON escapes every control character (ensure_ascii); a plain message is escaped here.
        print(
            json.dumps(result, indent=2, default=str) if args.json or not isinstance(result, str) else printable(result)
        )
    return 0


def _principals(store: AuthzStore, args: argparse.Namespace, settings: Settings) -> Action:
    async def act() -> Any:
        if args.action == "list":
            return [
                {"name": p.name, "roles": list(p.roles), "has-credentials": p.has_secret}
                for p in await store.principals()
            ]
        if args.action == "create":
            secret = None if args.no_credentials else secrets.token_urlsafe(32)
            await store.create_principal(args.name, hash_secret(secret) if secret else None)
            for role in args.role:
                await store.assign(args.name, role)
            return {"client-id": args.name, "client-secret": secret} if secret else f"created {args.name}"
        if args.action == "rotate":
            secret = secrets.token_urlsafe(32)
            await store.set_secret(args.name, hash_secret(secret))
            return {"client-id": args.name, "client-secret": secret}
        if args.action == "delete":
            await store.delete_principal(args.name)
        elif args.action == "assign":
            await store.assign(args.name, args.role)
        else:
            await store.unassign(args.name, args.role)
        return None

    return act


def _roles(store: AuthzStore, args: argparse.Namespace, settings: Settings) -> Action:
    async def act() -> Any:
        if args.action == "list":
            return await store.roles()
        if args.action == "create":
            await store.create_role(args.name)
        else:
            await store.delete_role(args.name)
        return None

    return act


def _grant_json(grant: StoredGrant) -> dict[str, Any]:
    return {
        "id": grant.id,
        "role": grant.role,
        "privilege": grant.privilege,
        "type": grant.securable_type,
        "catalog": grant.catalog,
        "namespace": list(grant.namespace),
        "name": grant.name,
    }


def _grants(store: AuthzStore, args: argparse.Namespace, settings: Settings) -> Action:
    async def act() -> Any:
        if args.action == "list":
            return [_grant_json(g) for g in await store.grants(args.role)]
        if args.action == "revoke":
            await store.revoke(args.role, args.id)
            return None
        if args.catalog != ANY_CATALOG and args.catalog not in settings.catalogs:
            raise CatalogError(f"No catalog named {args.catalog!r} is configured")
        namespace = [level for level in args.namespace.split(".") if level] if args.namespace else []
        target, privilege = grant_target(args.privilege, args.catalog, namespace, args.table, args.view)
        grant = await store.add_grant(
            args.role, target.catalog, target.type.value, target.namespace, target.name, privilege.value
        )
        return _grant_json(grant)

    return act


_ACTIONS: dict[str, Callable[[AuthzStore, argparse.Namespace, Settings], Action]] = {
    "principals": _principals,
    "roles": _roles,
    "grants": _grants,
}
