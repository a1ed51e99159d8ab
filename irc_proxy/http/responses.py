"""Response rendering: JSON bodies, LoadTableResult bytes and ETags."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

import orjson
from pyiceberg.table.metadata import TableMetadata
from starlette.requests import Request
from starlette.responses import Response

from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.tables.tables import LoadedTable
from irc_proxy.http.app_state import app_state


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON body, encoded with orjson (about 15x faster than ``json`` on listing pages)."""
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)


def no_content() -> Response:
    return Response(status_code=204)


class NotModified(Response):
    """304 with the ``ETag`` (all a 304 carries here: no body, no length, no type).

    Built directly: ``Response.__init__`` renders an empty body and works out headers that a 304 then drops."""

    def __init__(self, tag: str) -> None:
        self.status_code = 304
        self.background = None
        self.body = b""
        self.raw_headers = [(b"etag", tag.encode("latin-1"))]


def not_modified(tag: str) -> Response:
    """304 with the ``ETag``."""
    return NotModified(tag)


def identifier(ident: TableIdent) -> dict[str, Any]:
    return {"namespace": list(ident.namespace), "name": ident.name}


@lru_cache(maxsize=4096)  # a hash per load otherwise; the same tables are loaded over and over
def etag(metadata_location: str, snapshots: str) -> str:
    """Derived from the metadata location (immutable files) and the snapshots mode."""
    digest = hashlib.sha256(f"{metadata_location}\n{snapshots}".encode()).hexdigest()[:32]
    return f'"{digest}"'


def etag_matches(if_none_match: str | None, tag: str) -> bool:
    if not if_none_match:
        return False
    if if_none_match == tag:  # what a client that kept the ETag sends back: one of the candidates below, exactly
        return True
    candidates = {c.strip().removeprefix("W/") for c in if_none_match.split(",")}
    return "*" in candidates or tag in candidates or tag.strip('"') in candidates


def only_referenced_snapshots(metadata: TableMetadata) -> TableMetadata:
    """``snapshots=refs``: keep the snapshots reachable from a branch or tag."""
    keep: set[int] = set()
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    for ref in metadata.refs.values():
        snapshot_id: int | None = ref.snapshot_id
        while snapshot_id is not None and snapshot_id not in keep and snapshot_id in by_id:
            keep.add(snapshot_id)
            snapshot_id = by_id[snapshot_id].parent_snapshot_id
    return metadata.model_copy(update={"snapshots": [s for s in metadata.snapshots if s.snapshot_id in keep]})


def load_table_body(table: LoadedTable, metadata: TableMetadata | None = None, with_config: bool = True) -> bytes:
    """LoadTableResult (or, without config, CommitTableResponse); the metadata JSON is spliced in
    as pyiceberg serialises it (the cached serialisation when the table came from the metadata cache)."""
    head = {"metadata-location": table.metadata_location} | ({"config": table.config} if with_config else {})
    if metadata is None and table.metadata_json is not None:
        metadata_json = table.metadata_json
    else:
        metadata_json = (metadata or table.metadata).model_dump_json().encode()
    return b"".join((orjson.dumps(head)[:-1], b',"metadata":', metadata_json, b"}"))


INLINE_ENTRIES = 5_000
"""Metadata with more entries than this (properties, snapshots, log entries, ...) is serialised in a worker
thread: about 1 ms per 10k properties inline, but a table with 100k snapshots takes far longer."""


def entries(metadata: TableMetadata) -> int:
    """How much there is to serialise in ``metadata``, roughly (its longest collections)."""
    return (
        len(metadata.properties)
        + len(metadata.snapshots)
        + len(metadata.snapshot_log)
        + len(metadata.metadata_log)
        + len(metadata.schemas)
        + len(metadata.partition_specs)
        + len(metadata.sort_orders)
        + len(metadata.statistics)
        + len(metadata.refs)
    )


async def commit_table_body(request: Request, table: LoadedTable) -> bytes:
    """CommitTableResponse bytes, serialised off the event loop when the metadata is large."""
    if table.metadata_json is not None or entries(table.metadata) <= INLINE_ENTRIES:
        return load_table_body(table, with_config=False)
    threads = app_state(request).threads
    return await threads.run(load_table_body, table, None, False)


class EncodedJSON(Response):
    """A JSON body already encoded, and its ``ETag`` if any: the headers ``Response(body, status,
    media_type="application/json", headers={"ETag": tag})`` would have, in the same order, built directly
    (``Response.__init__`` renders the body and lower-cases and encodes a headers dict on every load)."""

    media_type = "application/json"

    def __init__(self, body: bytes, status_code: int = 200, tag: str | None = None) -> None:
        self.status_code = status_code
        self.background = None
        self.body = body
        headers = [] if tag is None else [(b"etag", tag.encode("latin-1"))]
        if not (status_code < 200 or status_code in (204, 304)):
            headers.append((b"content-length", str(len(body)).encode("latin-1")))
        headers.append((b"content-type", b"application/json"))
        self.raw_headers = headers


def load_table_response(table: LoadedTable, snapshots: str = "all", status: int = 200) -> Response:
    metadata = only_referenced_snapshots(table.metadata) if snapshots == "refs" else None
    tag = None if table.metadata_location is None else etag(table.metadata_location, snapshots)
    return EncodedJSON(load_table_body(table, metadata), status, tag)
