"""Commit bodies as changes: updateTable, commitTransaction and replaceView, counted before they are parsed.

The HTTP layer validates a body's shape (``http.bodies``); what is read here is any object of that
shape (``ChangeBody``, ``TransactionBody``). A commit's entries are counted against the server's
limits (``Limits``) before pyiceberg parses them (``commits``, ``view_commits``): parsing 10,000 of
them takes seconds. Large bodies are parsed in the worker pool; the caller says which (``Offload``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from pyiceberg.table.update import SetPropertiesUpdate

from irc_proxy.errors import BadRequest
from irc_proxy.handling.maintenance.policy import check_overrides
from irc_proxy.handling.naming import TableIdent, validate_namespace
from irc_proxy.handling.tables import commits
from irc_proxy.handling.tables.tables import TableChange
from irc_proxy.handling.views import view_commits

R = TypeVar("R")
ViewChange = tuple[list[view_commits.AssertViewUUID], list[view_commits.ViewUpdate]]
"""A view's requirements and updates."""


class IdentifierBody(Protocol):
    """A ``TableIdentifier`` as a body sends it (not yet validated)."""

    @property
    def namespace(self) -> Sequence[str]: ...
    @property
    def name(self) -> str: ...


class ChangeBody(Protocol):
    """A commit to one table or view: an optional identifier, requirements and updates (raw JSON)."""

    @property
    def identifier(self) -> IdentifierBody | None: ...
    @property
    def requirements(self) -> Sequence[Any]: ...
    @property
    def updates(self) -> Sequence[Any]: ...


class TransactionBody(Protocol):
    """commitTransaction: changes to several tables, applied all or none."""

    @property
    def table_changes(self) -> Sequence[ChangeBody]: ...


class Limits(Protocol):
    """The entries one request may carry (``server.max_commit_*``, all tables together)."""

    def check(self, updates: Sequence[Any], requirements: int) -> None:
        """Raises PayloadTooLarge when the commit carries more than the limits allow."""


class Offload(Protocol):
    """Runs ``work`` where the caller wants it: inline for a small body, in the worker pool for a large one."""

    async def __call__(self, work: Callable[[], R], /) -> R: ...


def body_ident(body: IdentifierBody) -> TableIdent:
    """A table or view identifier from a request body. Raises BadRequest for an invalid namespace."""
    namespace = tuple(body.namespace)
    validate_namespace(namespace)
    return TableIdent(namespace, body.name)


def _check_identifier(ident: TableIdent, body: ChangeBody) -> None:
    """A commit's own identifier, when it sends one, must be the one of its path."""
    if body.identifier is not None and body_ident(body.identifier) != ident:
        raise BadRequest(f"Commit identifier {body_ident(body.identifier)} does not match the path ({ident})")


def _change(ident: TableIdent, body: ChangeBody) -> TableChange:
    updates = commits.parse_updates(body.updates)
    for update in updates:
        if isinstance(update, SetPropertiesUpdate):
            check_overrides(update.updates)
    return TableChange(ident, commits.parse_requirements(body.requirements), updates)


def table_change(ident: TableIdent, body: ChangeBody, limits: Limits) -> TableChange:
    """The body of updateTable as one change."""
    _check_identifier(ident, body)
    limits.check(body.updates, len(body.requirements))
    return _change(ident, body)


def table_changes(body: TransactionBody, limits: Limits) -> list[TableChange]:
    """The body of commitTransaction; the limits apply to all its table changes together."""
    changes = body.table_changes
    limits.check([update for c in changes for update in c.updates], sum(len(c.requirements) for c in changes))
    parsed = []
    for change in changes:
        if change.identifier is None:
            raise BadRequest("Invalid table change: identifier is required in a transaction")
        parsed.append(_change(body_ident(change.identifier), change))
    return parsed


def view_change(ident: TableIdent, body: ChangeBody, limits: Limits) -> ViewChange:
    """The body of replaceView: its requirements and updates."""
    _check_identifier(ident, body)
    limits.check(body.updates, len(body.requirements))
    return view_commits.parse_view_requirements(body.requirements), view_commits.parse_view_updates(body.updates)
