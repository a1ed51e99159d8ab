"""The HTTP side of authorization: a request's path and body as the policy's ``Requested``.

The rules themselves are ``irc_proxy.handling.policy``; the checks ``irc_proxy.handling.access``.
Bodies are parsed with ``parsing.body_model``, which keeps the model, so the handler that runs
next reads the same parsed body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

from irc_proxy.handling import policy
from irc_proxy.handling.access import Access
from irc_proxy.handling.authz import Authorizer
from irc_proxy.handling.naming import TableIdent
from irc_proxy.http import parsing
from irc_proxy.http.bodies import (
    CommitTableRequest,
    CommitTransactionRequest,
    CreateNamespaceRequest,
    RegisterTableRequest,
    RenameTableRequest,
)


def authorizer(request: Request) -> Authorizer:
    found: Authorizer = request.state.authorizer
    return found


def of(request: Request, catalog: str | None = None) -> Access:
    """The checks of this request, in its catalog (or ``catalog``)."""
    name = catalog if catalog is not None else parsing.catalog(request).name
    return Access(parsing.context(request), authorizer(request), name)


async def authorize(request: Request, operation: str) -> None:
    """Run the policy's rule for ``operation`` (an operationId) on this request."""
    requested = await _requested(request, operation)
    await policy.authorize(of(request), parsing.catalog(request), operation, requested)


async def require_admin(request: Request) -> None:
    await of(request, catalog="").require_admin()


async def _requested(request: Request, operation: str) -> policy.Requested:
    params = request.path_params
    if "namespace" in params:
        namespace = parsing.namespace_param(request)
    else:
        namespace = parsing.parent_param(request) if operation == "listNamespaces" else ()
    name = next((parsing.name_param(request, key) for key in ("table", "view") if key in params), "")
    facts = _BODY_FACTS.get(operation)
    extra = await facts(request) if facts is not None else {}
    return policy.Requested(**({"namespace": namespace, "name": name} | extra))


async def _create_namespace(request: Request) -> dict[str, Any]:
    body = await parsing.body_model(request, CreateNamespaceRequest)
    return {"new_namespace": tuple(body.namespace)}


async def _register_table(request: Request) -> dict[str, Any]:
    body = await parsing.body_model(request, RegisterTableRequest)
    return {"name": body.name, "overwrite": body.overwrite}


def _creates(change: CommitTableRequest) -> bool:
    return any(isinstance(r, dict) and r.get("type") == "assert-create" for r in change.requirements)


async def _commit_table(request: Request) -> dict[str, Any]:
    return {"creates": _creates(await parsing.body_model(request, CommitTableRequest))}


async def _commit_transaction(request: Request) -> dict[str, Any]:
    body = await parsing.body_model(request, CommitTransactionRequest)
    changes = tuple(
        (TableIdent(tuple(change.identifier.namespace), change.identifier.name), _creates(change))
        for change in body.table_changes
        if change.identifier is not None  # the handler refuses it with a 400
    )
    return {"changes": changes}


async def _rename(request: Request) -> dict[str, Any]:
    body = await parsing.body_model(request, RenameTableRequest)
    source = TableIdent(tuple(body.source.namespace), body.source.name)
    return {"source": source, "destination": tuple(body.destination.namespace)}


_BODY_FACTS: dict[str, Callable[[Request], Awaitable[dict[str, Any]]]] = {
    "createNamespace": _create_namespace,
    "registerTable": _register_table,
    "updateTable": _commit_table,
    "commitTransaction": _commit_transaction,
    "renameTable": _rename,
    "renameView": _rename,
}
"""The operations whose rule looks at the body, and the facts it reads there."""
