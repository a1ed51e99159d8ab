"""The operations that answer a LoadTableResult: createTable, registerTable, loadTable.

Each runs the backend and hands out the storage access the request asked for
(``handling.operations.delegation``). The caller was authorized by the operation's rule before
(``handling.operations.policy``, run by the dispatcher, which also authorizes forwarded operations).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.federation.serving import planning_defaults
from irc_proxy.handling.maintenance.policy import check_overrides
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.operations import audit_objects, delegation, trash_ops
from irc_proxy.handling.operations.delegation import Asked, Granted
from irc_proxy.handling.operations.trash import Trash
from irc_proxy.handling.operations.trash_ops import adopted
from irc_proxy.handling.security.access import Access
from irc_proxy.handling.tables.tables import LoadedTable, TableCreate
from irc_proxy.handling.vending.vending import table_locations
from irc_proxy.threads import warm_imports


@dataclass(frozen=True)
class TableResult:
    """A LoadTableResult: the table (delegated keys in its ``config``) and extra top-level fields."""

    table: LoadedTable
    fields: dict[str, Any] = field(default_factory=dict)


def _result(catalog: Catalog, loaded: LoadedTable, granted: Granted) -> TableResult:
    metadata = loaded.metadata
    placed = catalog.serving.table_config(loaded.metadata_location, metadata.location, metadata.properties)
    # The spec's table config says where to plan (and, for a table off file://, which FileIO Java should pick).
    config = planning_defaults(catalog.scan_planning) | placed | granted.config
    if config:
        loaded = replace(loaded, config=loaded.config | config)
    return TableResult(loaded, granted.fields)


async def create_table(
    access: Access, catalog: Catalog, namespace: Namespace, create: TableCreate, asked: Asked
) -> TableResult:
    """Create a table (``create.location``: the requested one, or None for a default)."""
    audit_objects.note(access.context, TableIdent(namespace, create.name))
    check_overrides(create.properties)  # an invalid irc-proxy.maintenance.* property: 400, nothing created
    # Resolved once: the location vended for is the one created (a taken default gets a unique suffix).
    location = await catalog.tables.resolve_location(namespace, create.name, create.location)
    # Checked and vended before anything is written: a refused location or an STS failure creates nothing.
    locations = await delegation.create_locations(catalog, location, create.properties)
    granted = await delegation.table_access(access, catalog, TableIdent(namespace, create.name), locations, asked)
    loaded = await catalog.tables.create(namespace, replace(create, location=location))
    return _result(catalog, loaded, granted)


async def register_table(
    access: Access,
    catalog: Catalog,
    ident: TableIdent,
    metadata_location: str,
    overwrite: bool,
    asked: Asked,
    trash: Trash | None = None,
) -> TableResult:
    """Register a table. A dropped table's metadata file registered again takes it out of the trash (never
    purged then), for callers holding the privileges its restore to ``ident`` needs (``trash_ops``)."""
    audit_objects.note(access.context, ident)
    kept = [] if trash is None else await trash_ops.claimable(access, trash, catalog, "table", metadata_location, ident)
    locations = await delegation.register_locations(catalog, metadata_location)
    granted = await delegation.table_access(access, catalog, ident, locations, asked)
    tables = catalog.tables
    loaded = await tables.register(ident.namespace, ident.name, metadata_location, overwrite, None, adopted(kept))
    if trash is not None:
        await trash.registered(catalog, loaded.metadata_location or metadata_location)
        trash_ops.registered(access, trash, kept, ident)
    return _result(catalog, loaded, granted)


async def load_table(access: Access, catalog: Catalog, ident: TableIdent, location: str, asked: Asked) -> TableResult:
    """Load the table whose current metadata is at ``location`` (read once by the caller, for its ETag)."""
    loaded = await catalog.tables.load(ident, location)
    warm_imports("pyiceberg.io.pyarrow")  # what reading the table's files needs next (see threads.warm_imports)
    # The locations only matter to a catalog that vends (``table_access`` asks nothing else of the others).
    metadata = loaded.metadata
    locations = table_locations(metadata.location, metadata.properties) if catalog.vending is not None else []
    return _result(catalog, loaded, await delegation.table_access(access, catalog, ident, locations, asked))
