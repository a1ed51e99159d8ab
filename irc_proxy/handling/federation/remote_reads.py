"""What the proxy itself reads from a remote catalog (for the console and the scan planner): tables, views and
listings, asked of the upstream as the REST API would forward them (the caller's identity, its filtered
listing, its sealed page tokens: ``forwarding.Forwarder``) and answered as the records of
``handling.loaded``, the same a served catalog answers.

An upstream's LoadTableResult is parsed by the v3-aware model the proxy reads its own metadata files with
(``ServedTableMetadata``), never by pyiceberg's parser, which drops v3 fields. A table opened for scan
planning is read with the storage access the upstream vends to the proxy, bounded like every other read, and
never where the proxy keeps its own files (``KeptLocations``: its data directory, every served catalog's
allowed locations, its view warehouses): the upstream's metadata names the paths, and a remote catalog that
confines its writers less than the proxy could otherwise have the proxy read, with its own file-system
access or ambient storage credentials, another catalog's data for whoever opens the forwarded table.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pyiceberg.io import FileIO, load_file_io
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.view.metadata import ViewMetadata

from irc_proxy.errors import Forbidden, NotFound, ServiceUnavailable, from_error_body
from irc_proxy.handling.federation.forwarding import Forwarder, UpstreamCall
from irc_proxy.handling.loaded import OpenedTable, Owns, Read, TableLoad, ViewLoad
from irc_proxy.handling.naming import Namespace, TableIdent
from irc_proxy.handling.paging import PageBinding
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.handling.storage.locations import is_under, shown
from irc_proxy.handling.storage.storage_reads import (
    BoundedReader,
    ReadLimits,
    TableFiles,
    local_path,
    parse_metadata,
    within,
)
from irc_proxy.handling.tables.format_v3 import ServedTableMetadata
from irc_proxy.threads import ThreadRunner

NS = "/v1/{prefix}/namespaces/{namespace}"
LOAD_TABLE = f"GET {NS}/tables/{{table}}"
LOAD_VIEW = f"GET {NS}/views/{{view}}"
_VENDED = (("x-iceberg-access-delegation", "vended-credentials"), ("accept", "application/json"))


class KeptLocations:
    """Where the proxy keeps its own files: never read for a forwarded table (a local path resolved first)."""

    def __init__(self, locations: Sequence[str] = ()) -> None:
        self._locations = tuple(locations)
        self._real = tuple(os.path.realpath(p) for loc in locations if (p := local_path(loc)) is not None)

    def hold(self, path: str) -> bool:
        if any(is_under(path, root) for root in self._locations):
            return True
        local = local_path(path)
        return local is not None and within(os.path.realpath(local), self._real)

    def guard_owns(self, owns: Owns) -> Owns:
        return lambda path: owns(path) and not self.hold(path)

    def guard_read(self, read: Read) -> Read:
        def guarded(location: str, what: str) -> bytes:
            if self.hold(location):
                raise Forbidden(f"{what} {shown(location)} lies where this proxy keeps its own files")
            return read(location, what)

        return guarded


class RemoteReads:
    """Reads of one catalog's remote catalog, as its caller (``context``) may make them."""

    def __init__(
        self,
        catalog: str,
        forwarder: Forwarder,
        threads: ThreadRunner,
        limits: ReadLimits,
        kept: KeptLocations | None = None,
    ) -> None:
        self._catalog, self._forwarder, self._threads, self._limits = catalog, forwarder, threads, limits
        self._kept = kept or KeptLocations()

    async def _answer(self, context: RequestContext, call: UpstreamCall) -> bytes:
        """The upstream's 200 body; any other answer raised as the domain error it names."""
        reply = await self._forwarder.send(context, call)
        if reply.status != 200:
            raise from_error_body(reply.status, reply.body)
        return reply.body

    async def load_table(self, context: RequestContext, ident: TableIdent, vended: bool = False) -> TableLoad:
        """loadTable upstream (``vended``: asking for storage credentials, for the proxy's own reads)."""
        names = {"table": quote(ident.name, safe="")}
        call = UpstreamCall(LOAD_TABLE, ident.namespace, names, headers=_VENDED if vended else ())
        return await self._threads.run(_table_load, await self._answer(context, call))

    async def load_view(self, context: RequestContext, ident: TableIdent) -> ViewLoad:
        call = UpstreamCall(LOAD_VIEW, ident.namespace, {"view": quote(ident.name, safe="")})
        return await self._threads.run(_view_load, await self._answer(context, call))

    async def listing(
        self, context: RequestContext, endpoint: str, namespace: Namespace | None, query: bytes, pages: PageBinding
    ) -> dict[str, Any]:
        """One page of a listing, cut down to what the caller may see (its token sealed) when it is filtered."""
        call = UpstreamCall(endpoint, namespace, {}, query, pages=pages if context.list_filtered else None)
        body = await self._answer(context, call)
        try:
            listing = await self._threads.run(json.loads, body)
        except ValueError:
            raise ServiceUnavailable("The remote catalog answered a listing that is not JSON") from None
        if not isinstance(listing, dict):
            raise ServiceUnavailable("The remote catalog answered a listing that is not a JSON object")
        return listing

    async def open_table(self, context: RequestContext, ident: TableIdent) -> OpenedTable:
        """The table as the upstream answers it, its files read with the storage access it vends to the proxy."""
        load = await self.load_table(context, ident, vended=True)
        current = load.metadata
        credential = _credential_for(load.storage_credentials or [], current.location)
        io = load_file_io(file_io_properties(load.config | credential), current.location)
        kept = self._kept
        read = kept.guard_read(BoundedReader(_VendedIO(io), self._limits).read)
        owned = kept.guard_owns(TableFiles(current, None).owns)

        async def metadata_at(location: str) -> TableMetadata:
            if not owned(location):
                raise NotFound(f"Not a metadata file of table {ident}: its table was dropped or moved since")
            data = await self._threads.run(read, location, "Table metadata file")
            return parse_metadata(ServedTableMetadata, data, location, "Table metadata file").root

        def files(metadata: TableMetadata, max_bytes: int | None = None) -> tuple[Read, Owns]:
            bounded = read
            if max_bytes is not None:
                limits = ReadLimits(max_bytes, self._limits.timeout)
                bounded = kept.guard_read(BoundedReader(_VendedIO(io), limits).read)
            return bounded, kept.guard_owns(TableFiles(metadata, None).owns)

        # Listing and deleting (table maintenance) only with what the upstream vended for this table: never with
        # the proxy's own ambient storage access (its file system, its default AWS credentials).
        vended = bool(credential) or "s3.access-key-id" in load.config
        storage = file_io_properties(load.config | credential) if vended else None
        return OpenedTable(load, f"{self._catalog}/{current.table_uuid}", metadata_at, files, storage)


def file_io_properties(answered: Mapping[str, str]) -> dict[str, str]:
    """What a remote catalog answered (a table's ``config`` and storage credentials) as FileIO properties, without
    the keys that name a class to import and call (``py-io-impl``, ``s3.retry-strategy-impl``, any ``*-impl``):
    pyiceberg calls ``py-io-impl``'s class with the properties, and ``subprocess.Popen`` runs their keys as a
    command. Storage settings (endpoints, regions, keys, tokens) stay: they are what the remote vends."""
    return {key: value for key, value in answered.items() if not key.lower().rstrip().endswith("impl")}


def _unreadable(what: str, exc: Exception) -> ServiceUnavailable:
    return ServiceUnavailable(f"The remote catalog answered an unreadable {what} ({type(exc).__name__})")


def _table_load(body: bytes) -> TableLoad:
    """A LoadTableResult, its metadata read by the v3-aware model (blocking: a large table's metadata)."""
    try:
        answer = json.loads(body)
        metadata = ServedTableMetadata.model_validate(answer["metadata"]).root
        config = {str(k): str(v) for k, v in (answer.get("config") or {}).items()}
        credentials = list(answer.get("storage-credentials") or [])  # a list: the upstream vends, not the proxy
        return TableLoad(str(answer.get("metadata-location") or ""), metadata, config, credentials)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _unreadable("table", exc) from None


def _view_load(body: bytes) -> ViewLoad:
    try:
        answer = json.loads(body)
        metadata = ViewMetadata.model_validate(answer["metadata"])
        return ViewLoad(str(answer.get("metadata-location") or ""), metadata, stored_here=False)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _unreadable("view", exc) from None


def _credential_for(credentials: list[dict[str, Any]], location: str) -> dict[str, str]:
    """The config of the longest ``storage-credentials`` prefix that covers ``location``."""
    best: tuple[int, dict[str, str]] = (-1, {})
    for credential in credentials:
        prefix, config = credential.get("prefix"), credential.get("config")
        if (
            isinstance(prefix, str)
            and isinstance(config, dict)
            and location.startswith(prefix)
            and len(prefix) > best[0]
        ):
            best = (len(prefix), {str(k): str(v) for k, v in config.items()})
    return best[1]


@dataclass(frozen=True)
class _VendedIO:
    """The FileIO built from what a remote catalog vended for one table, as a bounded reader's source."""

    io: FileIO

    def file_io(self, location: str, properties: Mapping[str, str]) -> FileIO:
        return self.io
