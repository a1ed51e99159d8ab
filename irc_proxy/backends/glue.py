"""The Glue backend: namespaces are Glue databases, Iceberg tables are Glue tables whose parameters
hold ``table_type=ICEBERG`` and ``metadata_location``.

Pointer swaps update the Glue table with its ``VersionId`` (optimistic locking on real Glue) while
holding a commit lock shared by all replicas (moto does not enforce ``VersionId``). Non-Iceberg
tables are kept out of listings unless ``table_type_filter`` asks for them, and are never loaded.
Pointer reads are cached (``backends.shared_pointers``): a warm load asks Glue nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from threading import Lock
from typing import Any, TypeVar
from urllib.parse import quote

from botocore.exceptions import ClientError
from pyiceberg.catalog.glue import _construct_table_input
from pyiceberg.io import FileIO, load_file_io

from irc_proxy.backends import glue_views
from irc_proxy.backends.aws import aws_errors, client_config, error_code, session_for
from irc_proxy.backends.base import Capability, DroppedTable, EngineView, Listing, PointerSwap, Properties
from irc_proxy.backends.glue_events import GlueEvents
from irc_proxy.backends.pointer_cache import Peers
from irc_proxy.backends.shared_pointers import SharedPointers
from irc_proxy.errors import (
    AlreadyExists,
    BadRequest,
    CommitStateUnknown,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NotAnIcebergTable,
    ServiceUnavailable,
)
from irc_proxy.settings import GlueCatalogSettings
from irc_proxy.stores.locks import CommitLocks
from irc_proxy.threads import ThreadRunner

T = TypeVar("T")
GLUE_PAGE = 100  # Glue's MaxResults upper bound for GetDatabases/GetTables
NAMESPACE_LOCATION = "location"
NAMESPACE_COMMENT = "comment"
KEPT_ATTRIBUTES = ("Description", "Owner", "Retention", "PartitionKeys", "Parameters")
"""What a Glue table entry holds beside its Iceberg metadata and keeps across commits, drops and restores."""


def table_kind(table: Mapping[str, Any]) -> str:
    """ICEBERG, VIRTUAL_VIEW, DELTA, HUDI or HIVE, from a Glue table description."""
    parameters = {k.lower(): str(v) for k, v in (table.get("Parameters") or {}).items()}
    if table.get("TableType") == "VIRTUAL_VIEW":  # before ICEBERG: Trino's old Iceberg views set both
        return "VIRTUAL_VIEW"
    if parameters.get("table_type", "").upper() == "ICEBERG":
        return "ICEBERG"
    provider = parameters.get("spark.sql.sources.provider", "").lower()
    if parameters.get("table_type", "").upper() == "DELTA" or provider == "delta":
        return "DELTA"
    if provider == "hudi" or "hoodie" in " ".join(parameters):
        return "HUDI"
    return "HIVE"


class GlueBackend:
    """Backend over the AWS Glue Data Catalog."""

    capabilities = frozenset({Capability.TABLE_COMMITS, Capability.ENGINE_VIEWS})

    def __init__(
        self,
        name: str,
        settings: GlueCatalogSettings,
        locks: CommitLocks,
        threads: ThreadRunner,
        peers: Peers | None = None,
    ) -> None:
        self.warehouse = settings.warehouse
        self._name = name
        self._settings = settings
        self._locks = locks
        self._session = session_for(settings)
        self._glue = self._session.client(
            "glue", endpoint_url=settings.endpoint_url or None, config=client_config(settings)
        )
        self._catalog = {"CatalogId": settings.catalog_id}
        self._threads = threads.limited(settings.max_concurrency)  # the shared pool, bounded per catalog
        self._kinds = {kind.upper() for kind in settings.table_type_filter}
        self._io_lock = Lock()
        self._io: tuple[str, FileIO] | None = None
        self._pointers = SharedPointers(name, settings.pointer_cache_seconds, peers or Peers())
        if settings.events_queue_url:
            endpoint = settings.events_endpoint_url or None
            sqs = self._session.client("sqs", endpoint_url=endpoint, config=client_config(settings))
            self._pointers.listen(GlueEvents(sqs, settings.events_queue_url, settings.catalog_id, self._pointers.heard))

    async def close(self) -> None:
        await self._pointers.close()
        self._glue.close()

    async def ping(self) -> None:
        def one_database() -> None:
            with aws_errors("GetDatabases"):
                self._glue.get_databases(MaxResults=1, **self._catalog)

        await self._run(one_database)

    # FileIO for metadata files ------------------------------------------------------------
    def file_io(self, location: str, properties: Mapping[str, str]) -> FileIO:
        """One FileIO per credential generation (assumed-role credentials rotate)."""
        frozen = self._session.get_credentials()
        creds = frozen.get_frozen_credentials() if frozen is not None else None
        generation = creds.access_key if creds else ""
        with self._io_lock:
            if self._io is None or self._io[0] != generation:
                s = self._settings
                props = {"s3.region": s.s3_region or s.region}
                if s.s3_endpoint_url:
                    props["s3.endpoint"] = s.s3_endpoint_url
                if s.s3_path_style_access:
                    props["s3.force-virtual-addressing"] = "false"
                if creds is not None:
                    props |= {"s3.access-key-id": creds.access_key, "s3.secret-access-key": creds.secret_key}
                    if creds.token:
                        props["s3.session-token"] = creds.token
                self._io = (generation, load_file_io(props, location))
            return self._io[1]

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._threads.run(fn, *args)

    # Glue calls -------------------------------------------------------------------------
    def _get_database(self, name: str) -> dict[str, Any] | None:
        with aws_errors("GetDatabase"):
            try:
                return dict(self._glue.get_database(Name=name, **self._catalog)["Database"])
            except ClientError as exc:
                if error_code(exc) == "EntityNotFoundException":
                    return None
                raise

    def _get_table(self, namespace: str, name: str) -> dict[str, Any] | None:
        with aws_errors("GetTable"):
            try:
                return dict(self._glue.get_table(DatabaseName=namespace, Name=name, **self._catalog)["Table"])
            except ClientError as exc:
                if error_code(exc) == "EntityNotFoundException":
                    return None
                raise

    def _iceberg_table(self, namespace: str, name: str) -> dict[str, Any] | None:
        table = self._get_table(namespace, name)
        if table is None or table_kind(table) == "VIRTUAL_VIEW":
            return None
        if table_kind(table) != "ICEBERG":
            raise NotAnIcebergTable(
                f"Table {namespace}.{name} is a {table_kind(table)} table in Glue, not an Iceberg table"
            )
        return table

    # Namespaces -------------------------------------------------------------------------
    async def list_namespaces(self, prefix: str, token: str | None, limit: int) -> Listing:
        def fetch(kwargs: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
            with aws_errors("GetDatabases"):
                page = self._glue.get_databases(**kwargs, **self._catalog)
            return page.get("DatabaseList", []), page.get("NextToken") or None

        listing = await self._run(_glue_page, fetch, {}, token, limit)
        return Listing([d["Name"] for d in listing[0] if d["Name"].startswith(prefix)], listing[1])

    async def namespace_exists(self, name: str) -> bool:
        return await self._run(self._get_database, name) is not None

    async def create_namespaces(self, namespaces: Sequence[tuple[str, Properties]]) -> None:
        def create() -> None:
            created: list[str] = []
            try:
                for name, properties in namespaces:
                    with aws_errors("CreateDatabase"):
                        try:
                            self._glue.create_database(DatabaseInput=_database_input(name, properties), **self._catalog)
                        except ClientError as exc:
                            if error_code(exc) == "AlreadyExistsException":
                                raise AlreadyExists(name) from exc
                            raise
                    created.append(name)
            except Exception:
                for name in reversed(created):  # leave no parent behind
                    with aws_errors("DeleteDatabase"):
                        self._glue.delete_database(Name=name, **self._catalog)
                raise

        await self._run(create)

    async def load_namespace(self, name: str) -> Properties:
        database = await self._run(self._get_database, name)
        if database is None:
            raise NoSuchNamespace(name)
        return _namespace_properties(database)

    async def update_namespace(self, name: str, removals: Sequence[str], updates: Mapping[str, str]) -> Properties:
        def update() -> Properties:
            database = self._get_database(name)
            if database is None:
                raise NoSuchNamespace(name)
            before = _namespace_properties(database)
            after = {k: v for k, v in before.items() if k not in removals} | dict(updates)
            with aws_errors("UpdateDatabase"):
                self._glue.update_database(Name=name, DatabaseInput=_database_input(name, after), **self._catalog)
            return before

        return await self._run(update)

    async def drop_namespace(self, name: str) -> None:
        def drop() -> None:
            if self._get_database(name) is None:
                raise NoSuchNamespace(name)
            with aws_errors("GetTables"):
                if self._glue.get_tables(DatabaseName=name, MaxResults=1, **self._catalog).get("TableList"):
                    raise NamespaceNotEmpty(name)
            with aws_errors("DeleteDatabase"):
                self._glue.delete_database(Name=name, **self._catalog)

        await self._run(drop)

    # Tables -----------------------------------------------------------------------------
    async def _glue_tables(
        self, namespace: str, token: str | None, limit: int, keep: Callable[[Mapping[str, Any]], bool]
    ) -> Listing:
        """One page of GetTables, keeping the entries ``keep`` accepts."""

        def fetch(kwargs: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
            with aws_errors("GetTables"):
                try:
                    page = self._glue.get_tables(DatabaseName=namespace, **kwargs, **self._catalog)
                except ClientError as exc:
                    if error_code(exc) == "EntityNotFoundException":
                        raise NoSuchNamespace(namespace) from exc
                    raise
            return page.get("TableList", []), page.get("NextToken") or None

        tables, next_token = await self._run(_glue_page, fetch, {}, token, limit)
        return Listing([t["Name"] for t in tables if keep(t)], next_token)

    async def list_tables(self, namespace: str, token: str | None, limit: int) -> Listing:
        return await self._glue_tables(namespace, token, limit, self._listed)

    def _listed(self, table: Mapping[str, Any]) -> bool:
        kind = table_kind(table)
        return kind != "VIRTUAL_VIEW" and ("*" in self._kinds or kind in self._kinds)

    async def load_table_pointer(self, namespace: str, name: str) -> str | None:
        return await self._pointers.read((namespace, name), lambda: self._load_pointer(namespace, name))

    async def _load_pointer(self, namespace: str, name: str) -> str | None:
        table = await self._run(self._iceberg_table, namespace, name)
        if table is None:
            return None
        location = (table.get("Parameters") or {}).get("metadata_location")
        if not location:
            raise NotAnIcebergTable(f"Glue table {namespace}.{name} has no metadata_location")
        return str(location)

    async def swap_table_pointers(self, swaps: Sequence[PointerSwap]) -> bool:
        if len(swaps) != 1:
            raise BadRequest("The Glue backend commits one table at a time")
        async with self._pointers.moving([(swaps[0].namespace, swaps[0].name)]):
            return await self._run(self._swap, swaps[0])

    def _swap(self, swap: PointerSwap) -> bool:
        if swap.metadata is None:
            raise BadRequest("A Glue pointer swap needs the new metadata")
        with self._locks.hold(f"glue/{self._name}/{swap.namespace}/{swap.name}"):
            if swap.expected is None:
                kept = dict(swap.entry or {})  # a restored table gets its parameters, description, owner back
                table_input = _construct_table_input(
                    swap.name, swap.new, swap.metadata.properties, swap.metadata, _with_parameters(kept)
                )
                _keep_attributes(table_input, kept)
                with aws_errors("CreateTable", mutation_sent=True):
                    try:
                        self._glue.create_table(DatabaseName=swap.namespace, TableInput=table_input, **self._catalog)
                    except ClientError as exc:
                        if error_code(exc) == "AlreadyExistsException":
                            return _landed(self._get_table, swap)
                        if error_code(exc) == "EntityNotFoundException":
                            raise NoSuchNamespace(swap.namespace) from exc
                        raise
                return True
            current = self._iceberg_table(swap.namespace, swap.name)
            if current is None or (current.get("Parameters") or {}).get("metadata_location") != swap.expected:
                return False
            table_input = _construct_table_input(
                swap.name, swap.new, swap.metadata.properties, swap.metadata, current, swap.expected
            )
            _keep_attributes(table_input, current)
            with aws_errors("UpdateTable", mutation_sent=True):
                try:
                    self._glue.update_table(
                        DatabaseName=swap.namespace,
                        TableInput=table_input,
                        VersionId=current.get("VersionId", ""),
                        **self._catalog,
                    )
                except ClientError as exc:
                    if error_code(exc) == "ConcurrentModificationException":
                        return _landed(self._get_table, swap)
                    if error_code(exc) == "EntityNotFoundException":
                        return False
                    raise
            return True

    async def drop_table_pointer(self, namespace: str, name: str) -> DroppedTable:
        def drop() -> DroppedTable:
            # Under the commit lock: no commit through any replica lands between the read and the delete
            # (Glue's DeleteTable has no condition), so the pointer returned is the last one.
            with self._locks.hold(f"glue/{self._name}/{namespace}/{name}"):
                table = self._iceberg_table(namespace, name)
                if table is None:
                    raise NoSuchTable(name)
                with aws_errors("DeleteTable"):
                    self._glue.delete_table(DatabaseName=namespace, Name=name, **self._catalog)
            location = str((table.get("Parameters") or {}).get("metadata_location", ""))
            return DroppedTable(location, {key: table[key] for key in KEPT_ATTRIBUTES if key in table})

        async with self._pointers.moving([(namespace, name)]):
            return await self._run(drop)

    def moved_elsewhere(self, namespace: str, name: str) -> AbstractContextManager[None]:
        return self._pointers.moved_elsewhere((namespace, name))

    async def rename_table(self, namespace: str, name: str, to_namespace: str, to_name: str) -> None:
        def rename() -> None:
            table = self._iceberg_table(namespace, name)
            if table is None:
                raise NoSuchTable(name)
            table_input = {
                key: table[key]
                for key in ("Description", "Owner", "Retention", "StorageDescriptor", "PartitionKeys", "TableType")
                if key in table
            } | {"Name": to_name, "Parameters": dict(table.get("Parameters") or {})}
            with aws_errors("CreateTable"):
                try:
                    self._glue.create_table(DatabaseName=to_namespace, TableInput=table_input, **self._catalog)
                except ClientError as exc:
                    if error_code(exc) == "AlreadyExistsException":
                        raise AlreadyExists(to_name) from exc
                    raise
            try:
                with aws_errors("DeleteTable"):
                    self._glue.delete_table(DatabaseName=namespace, Name=name, **self._catalog)
            except Exception:
                with aws_errors("DeleteTable"):  # undo: the old name stays the table
                    self._glue.delete_table(DatabaseName=to_namespace, Name=to_name, **self._catalog)
                raise

        async with self._pointers.moving([(namespace, name), (to_namespace, to_name)]):
            await self._run(rename)

    # Engine views (Capability.ENGINE_VIEWS): VIRTUAL_VIEWs of Trino, Spark, Hive, read-only -------
    async def list_engine_views(self, namespace: str, token: str | None, limit: int) -> Listing:
        return await self._glue_tables(namespace, token, limit, _is_engine_view)

    async def load_engine_view(self, namespace: str, name: str) -> EngineView | None:
        """The Glue view as Iceberg view metadata; ``metadata_location`` is ``glue://<catalog-id>/<db>/<table>?version=<VersionId>``."""

        def load() -> EngineView | None:
            table = self._get_table(namespace, name)
            if table is None or not _is_engine_view(table):
                return None
            try:
                definition = glue_views.parse_view(table, namespace)
            except (ValueError, KeyError, TypeError) as exc:
                raise BadRequest(f"Cannot read Glue view {namespace}.{name}: {exc}") from exc
            location = str((table.get("StorageDescriptor") or {}).get("Location") or "").rstrip("/")
            if not location:
                database = self._get_database(namespace) or {}
                base = str(database.get("LocationUri") or "").rstrip("/") or f"{self.warehouse.rstrip('/')}/{namespace}"
                location = f"{base}/{name}"
            catalog_id = self._settings.catalog_id
            created = glue_views.epoch_ms(table.get("CreateTime"))
            updated = glue_views.epoch_ms(table.get("UpdateTime")) or created
            version = table.get("VersionId")
            metadata = glue_views.view_metadata(
                definition,
                glue_views.stable_uuid("glue:", catalog_id, namespace, name, created),
                location,
                updated,
                {glue_views.ENGINE_VIEW_PROPERTY: "glue"},
            )
            pointer = f"glue://{catalog_id}/{quote(namespace, safe='')}/{quote(name, safe='')}"
            return EngineView(f"{pointer}?version={version}" if version else pointer, metadata, "Glue")

        return await self._run(load)


GlueFetch = Callable[[dict[str, Any]], tuple[list[dict[str, Any]], str | None]]


def _glue_page(fetch: GlueFetch, kwargs: dict[str, Any], token: str | None, limit: int) -> tuple[list[Any], str | None]:
    """One page of at most ``limit`` entries, resumable exactly.

    Our token is Glue's NextToken plus how many entries of that Glue page were already returned:
    Glue honours MaxResults, but a server that ignores it (moto) must not make us skip entries.
    """
    glue_token, skip = None, 0
    if token:
        state = json.loads(token)
        glue_token, skip = state.get("t"), int(state.get("o", 0))
    request = {"MaxResults": min(limit + skip, GLUE_PAGE)} | kwargs
    if glue_token:
        request["NextToken"] = glue_token
    entries, next_glue = fetch(request)
    rest = entries[skip:]
    if len(rest) > limit:
        return rest[:limit], json.dumps({"t": glue_token, "o": skip + limit})
    return rest, json.dumps({"t": next_glue, "o": 0}) if next_glue else None


def _database_input(name: str, properties: Mapping[str, str]) -> dict[str, Any]:
    database: dict[str, Any] = {"Name": name}
    parameters = {k: v for k, v in properties.items() if k not in (NAMESPACE_LOCATION, NAMESPACE_COMMENT)}
    if parameters:
        database["Parameters"] = parameters
    if NAMESPACE_LOCATION in properties:
        database["LocationUri"] = properties[NAMESPACE_LOCATION]
    if NAMESPACE_COMMENT in properties:
        database["Description"] = properties[NAMESPACE_COMMENT]
    return database


def _namespace_properties(database: Mapping[str, Any]) -> Properties:
    properties = {str(k): str(v) for k, v in (database.get("Parameters") or {}).items()}
    if database.get("LocationUri"):
        properties[NAMESPACE_LOCATION] = str(database["LocationUri"])
    if database.get("Description"):
        properties[NAMESPACE_COMMENT] = str(database["Description"])
    return properties


def _with_parameters(kept: Mapping[str, Any]) -> Any:
    """A table description carrying only the kept parameters, for ``_construct_table_input`` to start from."""
    return {"Parameters": dict(kept.get("Parameters") or {})} if kept else None


def _keep_attributes(table_input: Any, kept: Mapping[str, Any]) -> None:
    """Copy the description, owner, retention and partition keys a table had (unless the input sets them)."""
    for key in KEPT_ATTRIBUTES:
        if key != "Parameters" and key in kept and key not in table_input:
            table_input[key] = kept[key]


def _is_engine_view(table: Mapping[str, Any]) -> bool:
    """A view another engine wrote (materialized views are not served as views)."""
    return table_kind(table) == "VIRTUAL_VIEW" and not glue_views.is_materialized_view(table)


def _landed(get_table: Callable[[str, str], dict[str, Any] | None], swap: PointerSwap) -> bool:
    """Whether the Glue table already points at ``swap.new``, after a create or update ran into a conflict.

    botocore re-sends a CreateTable/UpdateTable whose reply timed out; when the first one landed, the
    re-send meets it (AlreadyExists, or a stale VersionId on real Glue). Only this commit wrote
    ``swap.new`` (a fresh UUID), so if the table points there the commit happened and is no conflict.
    """
    try:
        table = get_table(swap.namespace, swap.name)
    except ServiceUnavailable as exc:
        raise CommitStateUnknown(f"Cannot tell whether the commit to {swap.name} landed; the state is unknown") from exc
    return table is not None and (table.get("Parameters") or {}).get("metadata_location") == swap.new
