"""What an Idempotency-Key outcome keeps of a table answer, and how a replay gives it again.

A table answer (createTable, registerTable, updateTable, unregisterTable) carries the table's whole metadata,
up to ``server.max_metadata_bytes``: kept whole for the key lifetime, ten keyed no-op commits of a 1 MB table
kept 10 MB of one writer's answers. Kept instead: the answer without ``metadata`` (its ``metadata-location``
names the immutable file the metadata came from), marked by a pseudo header that is never sent; a replay reads
that file again (``handling.operations.replays``) and splices it back. Never kept: ``storage-credentials`` and
credential keys of ``config`` (vended secrets; a replay carries none: the client loads the table or calls
loadCredentials for fresh ones). A staged create (no file yet) or a federated catalog's answer keeps its
metadata, without the secrets.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from irc_proxy.handling.catalog import Catalogs
from irc_proxy.handling.operations.replays import metadata_json, rebuildable
from irc_proxy.threads import ThreadRunner

TABLE_ANSWERS = frozenset({"createTable", "registerTable", "updateTable", "unregisterTable"})
MARK = ("x-irc-proxy-kept", "metadata-reference")
"""Stored with the headers of an answer kept without its metadata; dropped when replayed."""
INLINE_BYTES = 64 << 10
"""Answers larger than this are parsed in a worker thread."""
_SECRET = re.compile(r"secret|token|session|password|access-key|credential", re.IGNORECASE)
Headers = list[tuple[str, str]]


def _public(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` without vended credentials: ``storage-credentials`` and the config keys they repeat or that
    name a secret."""
    vended = {
        key
        for credential in answer.get("storage-credentials") or []
        if isinstance(credential, dict) and isinstance(credential.get("config"), dict)
        for key in credential["config"]
    }
    kept = {key: value for key, value in answer.items() if key != "storage-credentials"}
    if isinstance(config := answer.get("config"), dict):
        kept["config"] = {k: v for k, v in config.items() if k not in vended and not _SECRET.search(k)}
    return kept


def _kept(answer: Any, by_reference: bool) -> tuple[bytes, bool] | None:
    """What to store of a parsed answer, and whether it is a reference; None: keep it as it is."""
    if not isinstance(answer, dict):
        return None
    public = _public(answer)
    if by_reference and isinstance(answer.get("metadata-location"), str) and "metadata" in answer:
        return _dumps({k: v for k, v in public.items() if k != "metadata"}), True
    return _dumps(public), False


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _loads(body: bytes) -> Any:
    """orjson, or the standard library for what orjson refuses (integers beyond 64 bits)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


async def keep(
    catalogs: Catalogs, threads: ThreadRunner, operation: str, catalog: str | None, headers: Headers, body: bytes
) -> tuple[Headers, bytes]:
    """The headers and body to store for a finalized 2xx answer of ``operation``."""
    if operation not in TABLE_ANSWERS:
        return headers, body
    try:
        answer = _loads(body) if len(body) <= INLINE_BYTES else await threads.run(_loads, body)
    except ValueError:  # not JSON: nothing to take out
        return headers, body
    kept = _kept(answer, rebuildable(catalogs.get(catalog)))
    if kept is None:
        return headers, body
    stored, by_reference = kept
    headers = [(name, value) for name, value in headers if name.lower() != "content-length"]
    return ([*headers, MARK] if by_reference else headers), stored


async def give(catalogs: Catalogs, catalog: str | None, headers: Headers, body: bytes) -> tuple[Headers, bytes]:
    """A stored answer as it is sent again (a reference rebuilt from its metadata file).

    Raises:
        CatalogError: the metadata file cannot be read now, or is gone (``handling.operations.replays``).
    """
    if MARK in headers:
        head = json.loads(body)
        metadata = await metadata_json(catalogs.get(catalog), str(head["metadata-location"]))
        body = b"".join((_dumps(head)[:-1], b',"metadata":', metadata, b"}"))
    headers = [(name, value) for name, value in headers if name.lower() != "content-length" and (name, value) != MARK]
    return [*headers, ("content-length", str(len(body)))], body
