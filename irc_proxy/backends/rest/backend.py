"""The Backend protocol over a remote REST catalog, for what the proxy serves itself on such a prefix.

Tables are committed by the upstream (requests are forwarded), so this backend does not offer
``Capability.TABLE_COMMITS`` (pointer swaps, drops, renames). What is offered: namespaces (for the ``:``
mapping of nested levels onto an upstream without nested namespaces) and table existence (for
views kept in the proxy's view store when the upstream has none).

Flat names are the catalog's: with ``mapped_namespaces`` a flat name is one upstream level;
otherwise it is split at ``separator`` into upstream levels (each percent-decoded).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote

import httpx
from pyiceberg.io import FileIO, load_file_io

from irc_proxy import errors
from irc_proxy.backends.base import Capability, Listing, Properties, UpstreamAnswer
from irc_proxy.backends.rest.upstream import RestUpstream
from irc_proxy.masking import mask_url
from irc_proxy.settings import RestCatalogSettings
from irc_proxy.threads import ThreadRunner

NS = "namespaces/{namespace}"


def upstream_error(response: UpstreamAnswer) -> errors.CatalogError:
    """The domain error for an upstream error answer (``errors.from_error_body``)."""
    return errors.from_error_body(response.status_code, response.content)


class RestBackend:
    """Namespaces and table existence over the upstream (see the module docstring)."""

    capabilities: frozenset[Capability] = frozenset({Capability.FORWARDING})

    def __init__(self, name: str, settings: RestCatalogSettings, threads: ThreadRunner) -> None:
        self.upstream = RestUpstream(name, settings, threads)
        self.warehouse = settings.view_warehouse
        self.separator = ":"
        self._io = load_file_io({}, self.warehouse)

    def use_separator(self, separator: str) -> None:
        """The catalog's namespace separator (told by the catalog that owns this backend)."""
        self.separator = separator

    async def close(self) -> None:
        await self.upstream.close()

    async def ping(self) -> None:
        """Readiness: the upstream answers ``/v1/config``."""
        await self.upstream.ping()

    def file_io(self, location: str, properties: Mapping[str, str]) -> FileIO:
        return self._io

    # Names --------------------------------------------------------------------------------
    def _levels(self, flat: str) -> list[str]:
        if self.upstream.mapped_namespaces:
            return [flat]
        return [unquote(level) for level in flat.split(self.separator)]

    def _flat(self, levels: Sequence[str]) -> str:
        if self.upstream.mapped_namespaces:
            return self.separator.join(levels)
        reserved = {"%", ".", "/", self.separator}
        return self.separator.join(
            "".join(f"%{ord(c):02X}" if c in reserved or ord(c) < 0x20 or ord(c) == 0x7F else c for c in level)
            for level in levels
        )

    def _segment(self, flat: str) -> str:
        return "%1F".join(quote(level, safe="") for level in self._levels(flat))

    async def _call(self, method: str, tail: str, *, body: Any = None, query: dict[str, str] | None = None) -> Any:
        """Send, raise the domain error for an error answer, return the JSON body (None if empty)."""
        await self.upstream.config()
        encoded = httpx.QueryParams(query or {})
        content = json.dumps(body).encode() if body is not None else b""
        headers = [("Content-Type", "application/json")] if body is not None else []
        response = await self.upstream.send(
            method, self.upstream.path(tail), query=str(encoded).encode(), headers=headers, content=content
        )
        if response.status_code >= 400:
            raise upstream_error(response)
        return response.json() if response.content else None

    async def _exists(self, endpoint: str, tail: str) -> bool:
        method = "HEAD" if f"HEAD /v1/{{prefix}}/{endpoint}" in (await self.upstream.config()).endpoints else "GET"
        try:
            await self._call(method, tail)
        except errors.NotFound:
            return False
        return True

    # Namespaces --------------------------------------------------------------------------
    async def list_namespaces(self, prefix: str, token: str | None, limit: int) -> Listing:
        query = {"pageSize": str(limit)} | ({"pageToken": token} if token else {})
        if prefix and not self.upstream.mapped_namespaces:
            query["parent"] = "\x1f".join(self._levels(prefix[: -len(self.separator)]))
        body = await self._call("GET", "namespaces", query=query)
        names = [self._flat(levels) for levels in body.get("namespaces", [])]
        return Listing([n for n in names if n.startswith(prefix)], body.get("next-page-token") or None)

    async def namespace_exists(self, name: str) -> bool:
        return await self._exists(NS, f"namespaces/{self._segment(name)}")

    async def create_namespaces(self, namespaces: Sequence[tuple[str, Properties]]) -> None:
        for name, properties in namespaces:
            await self._call("POST", "namespaces", body={"namespace": self._levels(name), "properties": properties})

    async def load_namespace(self, name: str) -> Properties:
        body = await self._call("GET", f"namespaces/{self._segment(name)}")
        return dict(body.get("properties") or {})

    async def update_namespace(self, name: str, removals: Sequence[str], updates: Mapping[str, str]) -> Properties:
        before = await self.load_namespace(name)
        body = {"removals": list(removals), "updates": dict(updates)}
        await self._call("POST", f"namespaces/{self._segment(name)}/properties", body=body)
        return before

    async def drop_namespace(self, name: str) -> None:
        await self._call("DELETE", f"namespaces/{self._segment(name)}")

    # Tables ------------------------------------------------------------------------------
    async def list_tables(self, namespace: str, token: str | None, limit: int) -> Listing:
        query = {"pageSize": str(limit)} | ({"pageToken": token} if token else {})
        body = await self._call("GET", f"namespaces/{self._segment(namespace)}/tables", query=query)
        return Listing([i["name"] for i in body.get("identifiers", [])], body.get("next-page-token") or None)

    async def load_table_pointer(self, namespace: str, name: str) -> str | None:
        """Existence only: a ``rest+<uri>`` marker, not the metadata location (tables are the upstream's)."""
        tail = f"namespaces/{self._segment(namespace)}/tables/{quote(name, safe='')}"
        exists = await self._exists(NS + "/tables/{table}", tail)
        return f"rest+{mask_url(self.upstream.uri)}#{namespace}/{name}" if exists else None
