"""The authorization policy: which privilege each catalog operation needs, on which object.

One table (:data:`POLICY`, by the spec's operationId) of rules; an operation without a rule is for
administrators. A rule sees the operation's objects as :class:`Requested` (path parameters and the
facts of the body, parsed once by the front end) and checks them with :class:`Access` before the
operation looks anything up. The one lookup a rule makes is createNamespace's: which ancestors
exist (they are created with it, so creating in each of them is checked too), and only after the
caller was found to may create in the immediate parent.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from irc_proxy.errors import NoSuchNamespace, NoSuchTable
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.security.access import Access
from irc_proxy.handling.security.authz import Privilege as P
from irc_proxy.handling.security.authz import SecurableType


@dataclass(frozen=True)
class Requested:
    """What an operation's rule looks at."""

    namespace: Namespace = ()
    """The path's ``{namespace}``, or a namespace listing's ``parent``."""
    name: str = ""
    """The path's ``{table}``/``{view}``, or the name a registerTable body gives."""
    creates: bool = False
    """updateTable: the commit creates the table (a staged create: ``assert-create``)."""
    overwrite: bool = False
    """registerTable: replace an existing table."""
    new_namespace: Namespace = ()
    """createNamespace: the namespace to create."""
    changes: tuple[tuple[TableIdent, bool], ...] = ()
    """commitTransaction: each table change's identifier and whether it creates the table."""
    source: TableIdent | None = None
    destination: Namespace = ()
    """Renames: the object renamed, and the namespace it moves to."""
    maintenance_overrides: bool = False
    """createNamespace, updateProperties: the body sets or removes ``irc-proxy.maintenance.*`` properties."""

    @property
    def ident(self) -> TableIdent:
        return TableIdent(self.namespace, self.name)


Rule = Callable[[Access, Catalog, Requested], Awaitable[None]]


def on_namespace(privilege: P) -> Rule:
    async def rule(access: Access, catalog: Catalog, requested: Requested) -> None:
        await access.require(privilege, access.namespace(requested.namespace))

    return rule


def on(kind: SecurableType, privilege: P) -> Rule:
    """``privilege`` on the path's table or view."""

    async def rule(access: Access, catalog: Catalog, requested: Requested) -> None:
        await access.require(privilege, access.of_kind(kind, requested.ident))

    return rule


def existence(kind: SecurableType) -> Rule:
    """``HEAD``: any privilege on the object (incl. creating one like it) may learn whether it exists.

    Engines ask before they act: Spark's ``CREATE TABLE`` and ``CREATE NAMESPACE IF NOT EXISTS`` and
    ``DROP TABLE`` check existence first, so a principal that may create or drop must be able to ask.
    """
    privileges = _EXISTENCE[kind]

    async def rule(access: Access, catalog: Catalog, requested: Requested) -> None:
        if kind is SecurableType.NAMESPACE:
            target = access.namespace(requested.namespace)
        else:
            target = access.of_kind(kind, requested.ident)
        await access.require_any(privileges, target)

    return rule


METADATA_TABLES = frozenset(
    {
        "entries", "files", "data_files", "delete_files", "history", "metadata_log_entries", "snapshots", "refs",
        "manifests", "partitions", "all_data_files", "all_delete_files", "all_files", "all_manifests", "all_entries",
        "position_deletes",
    }
)  # fmt: skip
"""Iceberg's metadata tables (``MetadataTableType``), as engines name them after a table: ``db.orders.files``."""
_SELECTOR = re.compile(r"(snapshot_id_\d+|at_timestamp_\d+|branch_.+|tag_.+)")
"""Spark's time-travel selectors after a table name: ``db.orders.branch_audit``."""


def probed_base(requested: Requested) -> TableIdent | None:
    """The table an engine means when it loads ``<table>.<metadata table or selector>``.

    Spark (``SparkCatalog.loadTable``) first asks the catalog for ``db.orders.files`` as a table and reads the
    metadata table of ``db.orders`` only when the answer is "no such table" (404); a 403 fails the query.
    """
    name = requested.name.lower()
    if len(requested.namespace) < 2 or not (name in METADATA_TABLES or _SELECTOR.fullmatch(name)):
        return None
    return TableIdent(requested.namespace[:-1], requested.namespace[-1])


async def _refuse_probe_as_missing(access: Access, requested: Requested, privileges: tuple[P, ...]) -> None:
    """A caller who may read ``db.orders`` but holds nothing on ``db.orders.files`` gets the 404 an engine needs
    to fall back to the metadata table, not a 403. It learns nothing: it may read ``db.orders`` and its metadata
    anyway, and a 404 says no more than a 403 about a table of that name that it may not see."""
    target = access.table(requested.ident)
    base = probed_base(requested)
    if base is None or any([await access.holds(p, target) for p in privileges]):
        return
    if await access.holds(P.TABLE_READ, access.table(base)):
        access.note("denied", f"no grant on {target}; {requested.name} is a metadata table of {base}: missing")
        raise NoSuchTable(f"Table does not exist: {requested.ident} (read {requested.name} through table {base})")


async def load_table(access: Access, catalog: Catalog, requested: Requested) -> None:
    """``table.read`` on the table (see :func:`_refuse_probe_as_missing` for an engine's metadata-table probe)."""
    await _refuse_probe_as_missing(access, requested, (P.TABLE_READ,))
    await access.require(P.TABLE_READ, access.table(requested.ident))


async def table_exists(access: Access, catalog: Catalog, requested: Requested) -> None:
    """As ``existence(TABLE)``, with an engine's metadata-table probe answered as missing."""
    await _refuse_probe_as_missing(access, requested, _EXISTENCE[SecurableType.TABLE])
    await access.require_any(_EXISTENCE[SecurableType.TABLE], access.table(requested.ident))


_EXISTENCE = {
    SecurableType.NAMESPACE: (P.NAMESPACE_USE, P.NAMESPACE_CREATE, P.NAMESPACE_DROP, P.NAMESPACE_LIST),
    SecurableType.TABLE: (P.TABLE_READ, P.TABLE_CREATE, P.TABLE_DROP, P.CREDENTIALS_READ),
    SecurableType.VIEW: (P.VIEW_READ, P.VIEW_CREATE, P.VIEW_DROP),
}


def listing(privilege: P) -> Rule:
    async def rule(access: Access, catalog: Catalog, requested: Requested) -> None:
        await access.listing(privilege, requested.namespace)

    return rule


async def _maintenance_overrides(access: Access, namespace: Namespace, requested: Requested) -> None:
    """Maintenance overrides on a namespace (``irc-proxy.maintenance.*``) decide what runs do to every table
    below it, others' too (how many snapshots expire, and their files with them; how young an orphan may be
    deleted): who sets them holds ``table.write`` on the whole namespace (a grant on it or above), not only
    ``namespace.properties`` or ``namespace.create``."""
    if requested.maintenance_overrides:
        await access.require(P.TABLE_WRITE, access.namespace(namespace))


async def update_properties(access: Access, catalog: Catalog, requested: Requested) -> None:
    """``namespace.properties`` on the namespace; ``table.write`` on it too for maintenance overrides."""
    await access.require(P.NAMESPACE_PROPERTIES, access.namespace(requested.namespace))
    await _maintenance_overrides(access, requested.namespace, requested)


async def create_namespace(access: Access, catalog: Catalog, requested: Requested) -> None:
    """``namespace.create`` on the parent, and on the parent of every missing ancestor created with it
    (``table.write`` on the new namespace too when it is created with maintenance overrides)."""
    namespace = requested.new_namespace
    await access.require(P.NAMESPACE_CREATE, access.namespace(namespace[:-1]))
    await _maintenance_overrides(access, namespace, requested)
    for depth in range(len(namespace) - 1, 0, -1):
        try:
            await catalog.namespaces.exists(namespace[:depth])
            break
        except NoSuchNamespace:
            await access.require(P.NAMESPACE_CREATE, access.namespace(namespace[: depth - 1]))


async def register_table(access: Access, catalog: Catalog, requested: Requested) -> None:
    await access.require(P.TABLE_CREATE, access.namespace(requested.namespace))
    if requested.overwrite:
        await access.require(P.TABLE_WRITE, access.table(requested.ident))


async def _table_change(access: Access, ident: TableIdent, creates: bool) -> None:
    if creates:
        await access.require(P.TABLE_CREATE, access.namespace(ident.namespace))
    else:
        await access.require(P.TABLE_WRITE, access.table(ident))


async def commit_table(access: Access, catalog: Catalog, requested: Requested) -> None:
    """``table.write`` on the table; ``table.create`` on its namespace for a staged create."""
    await _table_change(access, requested.ident, requested.creates)


async def commit_transaction(access: Access, catalog: Catalog, requested: Requested) -> None:
    for ident, creates in requested.changes:
        await _table_change(access, ident, creates)


def renaming(kind: SecurableType, drop: P, create: P) -> Rule:
    """Rename: ``drop`` on the source, ``create`` on the destination's namespace."""

    async def rule(access: Access, catalog: Catalog, requested: Requested) -> None:
        assert requested.source is not None, "a rename names its source"
        await access.require(drop, access.of_kind(kind, requested.source))
        await access.require(create, access.namespace(requested.destination))

    return rule


async def admin_only(access: Access, catalog: Catalog, requested: Requested) -> None:
    await access.admin_only()


T, V = SecurableType.TABLE, SecurableType.VIEW
POLICY: dict[str, Rule] = {
    "listNamespaces": listing(P.NAMESPACE_LIST),
    "createNamespace": create_namespace,
    "loadNamespaceMetadata": on_namespace(P.NAMESPACE_USE),
    "namespaceExists": existence(SecurableType.NAMESPACE),
    "dropNamespace": on_namespace(P.NAMESPACE_DROP),
    "updateProperties": update_properties,
    "listTables": listing(P.TABLE_LIST),
    "createTable": on_namespace(P.TABLE_CREATE),
    "registerTable": register_table,
    "loadTable": load_table,
    "tableExists": table_exists,
    "updateTable": commit_table,
    "dropTable": on(T, P.TABLE_DROP),
    "unregisterTable": on(T, P.TABLE_DROP),
    "reportMetrics": on(T, P.TABLE_READ),
    "loadCredentials": on(T, P.TABLE_READ),
    "planTableScan": on(T, P.TABLE_READ),
    "fetchPlanningResult": on(T, P.TABLE_READ),
    "cancelPlanning": on(T, P.TABLE_READ),
    "fetchScanTasks": on(T, P.TABLE_READ),
    "signRequest": on(T, P.TABLE_READ),
    "renameTable": renaming(T, P.TABLE_DROP, P.TABLE_CREATE),
    "commitTransaction": commit_transaction,
    "listViews": listing(P.VIEW_LIST),
    "createView": on_namespace(P.VIEW_CREATE),
    "loadView": on(V, P.VIEW_READ),
    "viewExists": existence(V),
    "replaceView": on(V, P.VIEW_REPLACE),
    "dropView": on(V, P.VIEW_DROP),
    "renameView": renaming(V, P.VIEW_DROP, P.VIEW_CREATE),
    "registerView": on_namespace(P.VIEW_CREATE),
}
"""Each catalog operation's rule, by operationId; any other operation is for administrators."""


async def authorize(access: Access, catalog: Catalog, operation: str, requested: Requested) -> None:
    """Raises: Forbidden when the caller may not run ``operation`` on ``requested``."""
    await POLICY.get(operation, admin_only)(access, catalog, requested)
