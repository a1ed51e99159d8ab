"""``irc-proxy principals|roles|grants``: manage authorization directly in the state database.

The same operations as the admin API (``/management/v1``), through the same handler
(``handling.operations.management``: validated alike, each one transaction), printing the API's JSON bodies, and
audited as the API audits them (``management.<operation>`` on its path) by ``cli:<local user>``. For
bootstrapping and scripts; running proxies see changes within ``auth.grants_cache_seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from irc_proxy.audit import Auditor, AuditRecord, now
from irc_proxy.cli_trash import cli_principal
from irc_proxy.errors import CatalogError
from irc_proxy.handling.operations import management
from irc_proxy.handling.operations.management import GrantSpec, Management, audit_object
from irc_proxy.handling.security.authz import ANY_CATALOG, Privilege
from irc_proxy.http.errors import classify
from irc_proxy.settings import Settings
from irc_proxy.stores.authz import AuthzStore
from irc_proxy.text import printable
from irc_proxy.threads import ThreadRunner

T = TypeVar("T")


_COMMON = argparse.ArgumentParser(add_help=False)
_COMMON.add_argument("--config", metavar="FILE", help="TOML configuration file")
_COMMON.add_argument("--json", action="store_true", help="print JSON (always: the management API's bodies)")


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
    threads = ThreadRunner(settings.server.blocking_threads)

    async def act() -> Any:
        auditor = Auditor.build(settings.audit, engine, threads)
        auditor.start()
        try:
            handler = Management(AuthzStore(engine, threads), threads, list(settings.catalogs))
            operation, segments, call = _ACTIONS[args.command](handler, args)
            return await _audited(auditor, operation, audit_object(*segments), call)
        finally:
            await auditor.close()

    try:
        ensure_schema(engine, settings.state.auto_upgrade)
        result = asyncio.run(act())
    except CatalogError as exc:
        print(f"irc-proxy: {printable(exc.message)}", file=sys.stderr)  # may quote stored names
        return 1
    finally:
        engine.dispose()
    if result is not None:  # the management API's body; JSON escapes every control character (ensure_ascii)
        print(json.dumps(result, indent=2))
    return 0


async def _audited(auditor: Auditor, operation: str, target: str, call: Call) -> dict[str, Any] | None:
    """Run ``call``, recorded in the audit trail as the management API records it, by ``cli:<local user>``
    (a refusal too, with the status the API would answer)."""
    started, status = time.monotonic(), 200
    try:
        result = await call()
        status = 204 if result is None else 201 if operation in _CREATES else 200  # the API's success status
        return result
    except CatalogError as exc:
        status = classify(exc)[0]
        raise
    finally:
        auditor.submit(
            AuditRecord(
                time=now(),
                principal=cli_principal(),
                operation=f"management.{operation}",
                catalog=None,
                object=target,
                status=status,
                request_id=f"cli-{uuid.uuid4().hex}",
                latency_ms=round((time.monotonic() - started) * 1000, 3),
                reason="command line",
            )
        )


def _principals(handler: Management, args: argparse.Namespace) -> Planned:
    name: str = getattr(args, "name", "")
    if args.action == "list":
        return "listPrincipals", ["principals"], lambda: _body(management.principals_json, handler.principals())
    if args.action == "create":
        roles, credentials = args.role, not args.no_credentials
        create = handler.create_principal
        return (
            "createPrincipal",
            ["principals"],
            lambda: _body(management.created_json, create(name, roles, credentials)),
        )
    if args.action == "rotate":

        async def rotate() -> dict[str, Any]:
            return management.credentials_json(name, await handler.rotate_credentials(name))

        return "rotateCredentials", ["principals", name, "rotate-credentials"], rotate
    if args.action == "delete":
        return "deletePrincipal", ["principals", name], lambda: _none(handler.delete_principal(name))
    segments = ["principals", name, "roles", args.role]
    if args.action == "assign":
        return "assignRole", segments, lambda: _none(handler.assign(name, args.role))
    return "unassignRole", segments, lambda: _none(handler.unassign(name, args.role))


def _roles(handler: Management, args: argparse.Namespace) -> Planned:
    if args.action == "list":
        return "listRoles", ["roles"], lambda: _body(management.roles_json, handler.roles())
    if args.action == "create":

        async def create() -> dict[str, Any]:
            await handler.create_role(args.name)
            return management.role_json(args.name, [])

        return "createRole", ["roles"], create
    return "deleteRole", ["roles", args.name], lambda: _none(handler.delete_role(args.name))


def _grants(handler: Management, args: argparse.Namespace) -> Planned:
    if args.action == "list":
        segments = ["grants"] if args.role is None else ["roles", args.role, "grants"]
        return "listGrants", segments, lambda: _body(management.grants_json, handler.grants(args.role))
    if args.action == "revoke":
        return "revokeGrant", ["roles", args.role, "grants", args.id], lambda: _none(handler.revoke(args.role, args.id))
    namespace = [level for level in args.namespace.split(".") if level] if args.namespace else []
    spec = GrantSpec(args.privilege, args.catalog, namespace, args.table, args.view)
    return (
        "addGrant",
        ["roles", args.role, "grants"],
        lambda: _body(management.grant_json, handler.add_grant(args.role, spec)),
    )


async def _body(shape: Callable[[T], dict[str, Any]], result: Awaitable[T]) -> dict[str, Any]:
    return shape(await result)


async def _none(done: Awaitable[None]) -> None:
    await done


_CREATES = frozenset({"createPrincipal", "createRole", "addGrant"})
Call = Callable[[], Awaitable[dict[str, Any] | None]]
Planned = tuple[str, list[str | int], Call]
"""An action as the management API knows it: its operationId, the segments of its path, and the call."""

_ACTIONS: dict[str, Callable[[Management, argparse.Namespace], Planned]] = {
    "principals": _principals,
    "roles": _roles,
    "grants": _grants,
}
