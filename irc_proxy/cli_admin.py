"""``irc-proxy principals|roles|grants``: manage authorization directly in the state database.

The same operations as the admin API (``/management/v1``), through the same handler
(``handling.operations.management``: validated alike, each one transaction), printing the API's JSON bodies, and
audited as the API audits them (``management.<operation>`` on its path) by ``cli:<local user>``. For
bootstrapping and scripts; running proxies see changes within ``auth.grants_cache_seconds``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from irc_proxy.cli_help import CONFIG_HELP, command, group
from irc_proxy.handling.security.privileges import ANY_CATALOG, Privilege

if TYPE_CHECKING:  # imported where used: `irc-proxy --help` must not pay for SQLAlchemy and the handlers
    from irc_proxy.audit import Auditor
    from irc_proxy.handling.operations.management import Management
    from irc_proxy.settings import Settings

T = TypeVar("T")


_COMMON = argparse.ArgumentParser(add_help=False)
_COMMON.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
_COMMON.add_argument("--json", action="store_true", help="print JSON (always: the management API's bodies)")
_PRIVILEGES = ", ".join(p.value for p in Privilege)
NAMESPACE_HELP = (
    "the namespace (default: the whole catalog): sales.eu, sales:eu or sales%%1Feu; ':' or '%%1F' split levels "
    "(then %%XX escapes are decoded: new%%2Edb is one level 'new.db'), '.' only when there is no ':' or '%%'"
)


def add_commands(commands: Any) -> None:
    """Add the ``principals``, ``roles`` and ``grants`` sub-commands to the top-level parser."""
    _principal_commands(commands)
    _role_commands(commands)
    _grant_commands(commands)


def _principal_commands(commands: Any) -> None:
    actions = group(
        commands,
        "principals",
        "manage principals (and their oauth2 client secrets)",
        "Principals are who calls the proxy: an oauth2 client (with a secret issued here) or an OIDC subject. "
        "They hold roles; roles hold grants. Each command is the admin API's operation, audited as cli:<user>.",
        ["irc-proxy principals create svc-spark --role analysts", "irc-proxy principals list"],
        "action",
    )
    command(
        actions,
        "list",
        "list principals and their roles",
        "List every principal and its roles (JSON).",
        ["irc-proxy principals list --config irc-proxy.toml"],
        [_COMMON],
    )
    create = command(
        actions,
        "create",
        "create a principal; prints its client secret once",
        "Create a principal. Unless --no-credentials, an oauth2 client secret is issued and printed once (only its "
        "hash is kept): hand it to the client as its client_secret.",
        ["irc-proxy principals create svc-spark --role analysts", "irc-proxy principals create alice --no-credentials"],
        [_COMMON],
    )
    create.add_argument("name", help="the principal's name (an oauth2 client_id, or an OIDC subject)")
    create.add_argument("--role", action="append", default=[], help="assign this role (repeatable)")
    create.add_argument("--no-credentials", action="store_true", help="no client secret (e.g. an OIDC subject)")
    delete = command(
        actions,
        "delete",
        "delete a principal",
        "Delete a principal (its tokens stop working).",
        ["irc-proxy principals delete svc-spark"],
        [_COMMON],
    )
    delete.add_argument("name", help="the principal")
    rotate = command(
        actions,
        "rotate",
        "issue a new client secret; prints it once",
        "Issue a new client secret for an oauth2 principal and print it once; the old secret stops working.",
        ["irc-proxy principals rotate svc-spark"],
        [_COMMON],
    )
    rotate.add_argument("name", help="the principal")
    for action, summary in (("assign", "give a principal a role"), ("unassign", "take a role from a principal")):
        sub = command(
            actions,
            action,
            summary,
            summary[0].upper() + summary[1:] + ".",
            [f"irc-proxy principals {action} svc-spark analysts"],
            [_COMMON],
        )
        sub.add_argument("name", help="the principal")
        sub.add_argument("role", help="the role")


def _role_commands(commands: Any) -> None:
    actions = group(
        commands,
        "roles",
        "manage roles",
        "Roles hold grants; principals hold roles. The role 'admin' holds every privilege and runs the admin API.",
        ["irc-proxy roles create analysts", "irc-proxy roles list"],
        "action",
    )
    command(
        actions, "list", "list roles", "List every role and its grants (JSON).", ["irc-proxy roles list"], [_COMMON]
    )
    create = command(
        actions,
        "create",
        "create a role",
        "Create a role (without grants: add them with grants add).",
        ["irc-proxy roles create analysts"],
        [_COMMON],
    )
    create.add_argument("name", help="the role's name")
    delete = command(
        actions,
        "delete",
        "delete a role and its grants",
        "Delete a role and every grant it holds.",
        ["irc-proxy roles delete analysts"],
        [_COMMON],
    )
    delete.add_argument("name", help="the role")


def _grant_commands(commands: Any) -> None:
    actions = group(
        commands,
        "grants",
        "manage grants of privileges to roles",
        "A grant gives a role one privilege on a catalog, a namespace (and everything beneath it), a table or a "
        "view. Only grants exist (no denials).",
        ["irc-proxy grants add analysts table.read --catalog local --namespace sales.eu", "irc-proxy grants list"],
        "action",
    )
    listing = command(
        actions,
        "list",
        "list grants",
        "List grants (JSON), every role's or one role's.",
        ["irc-proxy grants list", "irc-proxy grants list --role analysts"],
        [_COMMON],
    )
    listing.add_argument("--role", help="only this role's grants")
    add = command(
        actions,
        "add",
        "grant a privilege to a role",
        f"Grant PRIVILEGE to ROLE on a catalog (--catalog; {ANY_CATALOG} for every catalog), a namespace and "
        "everything beneath it (--namespace), or one table or view in it (--table, --view). The privileges: "
        f"{_PRIVILEGES} (all is every privilege; table.write implies table.read, view.replace view.read, "
        "credentials.write credentials.read, namespace.properties namespace.use).",
        [
            "irc-proxy grants add analysts table.read --catalog local --namespace sales.eu",
            "irc-proxy grants add analysts table.write --catalog local --namespace sales:eu --table orders",
            f"irc-proxy grants add auditors namespace.list --catalog '{ANY_CATALOG}'",
        ],
        [_COMMON],
    )
    add.add_argument("role", metavar="ROLE", help="the role that receives the grant (see roles list)")
    add.add_argument("privilege", metavar="PRIVILEGE", help="one of the privileges listed above (e.g. table.read)")
    add.add_argument("--catalog", required=True, help=f"catalog name, or {ANY_CATALOG} for every catalog")
    add.add_argument("--namespace", default="", help=NAMESPACE_HELP)
    target = add.add_mutually_exclusive_group()
    target.add_argument("--table", help="a table in --namespace")
    target.add_argument("--view", help="a view in --namespace")
    revoke = command(
        actions,
        "revoke",
        "revoke a grant by id (see grants list)",
        "Revoke one of ROLE's grants by its id (grants list prints the ids).",
        ["irc-proxy grants revoke analysts 12"],
        [_COMMON],
    )
    revoke.add_argument("role", help="the role holding the grant")
    revoke.add_argument("id", type=int, help="the grant's id")


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Run one ``principals``/``roles``/``grants`` action; 0 on success, 1 when refused."""
    import asyncio
    import json

    from irc_proxy.audit import Auditor
    from irc_proxy.cli_state import open_state
    from irc_proxy.errors import CatalogError
    from irc_proxy.handling.operations.management import Management, audit_object
    from irc_proxy.stores.authz import AuthzStore
    from irc_proxy.text import printable
    from irc_proxy.threads import ThreadRunner

    if getattr(args, "privilege", None) not in (None, *Privilege):  # not argparse's choices: 19 in the usage line
        print(f"irc-proxy: unknown privilege {printable(args.privilege)}; one of: {_PRIVILEGES}", file=sys.stderr)
        return 2
    args.separator = settings.server.namespace_separator  # typed namespaces: ':' as in the REST URLs
    engine = open_state(settings)
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
    import time
    import uuid

    from irc_proxy.audit import AuditRecord, now
    from irc_proxy.cli_trash import cli_principal
    from irc_proxy.errors import CatalogError
    from irc_proxy.http.errors import classify

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
    from irc_proxy.handling.operations import management

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
    from irc_proxy.handling.operations import management

    if args.action == "list":
        return "listRoles", ["roles"], lambda: _body(management.roles_json, handler.roles())
    if args.action == "create":

        async def create() -> dict[str, Any]:
            await handler.create_role(args.name)
            return management.role_json(args.name, [])

        return "createRole", ["roles"], create
    return "deleteRole", ["roles", args.name], lambda: _none(handler.delete_role(args.name))


def _grants(handler: Management, args: argparse.Namespace) -> Planned:
    from irc_proxy.handling.naming import typed_namespace
    from irc_proxy.handling.operations import management
    from irc_proxy.handling.operations.management import GrantSpec

    if args.action == "list":
        segments = ["grants"] if args.role is None else ["roles", args.role, "grants"]
        return "listGrants", segments, lambda: _body(management.grants_json, handler.grants(args.role))
    if args.action == "revoke":
        return "revokeGrant", ["roles", args.role, "grants", args.id], lambda: _none(handler.revoke(args.role, args.id))
    namespace = list(typed_namespace(args.namespace, args.separator)) if args.namespace else []
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
