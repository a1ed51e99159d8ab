"""An in-memory ``Backend`` (names and pointers in dicts; metadata files in a local warehouse), for
unit tests of the handling layer without a database, Glue or a server.

It is a real implementation of the seam in ``irc_proxy/backends/base.py``, with the same contract
the local and Glue backends keep: all-or-nothing creates and swaps, keyset listings, the same errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext

from pyiceberg.io import FileIO, load_file_io

from irc_proxy.backends.base import Capability, DroppedTable, Listing, PointerSwap, Properties
from irc_proxy.errors import AlreadyExists, NamespaceNotEmpty, NoSuchNamespace, NoSuchTable


class MemoryBackend:
    """Namespaces and table pointers in memory; ``multi_table`` offers atomic multi-table commits."""

    def __init__(self, warehouse: str, multi_table: bool = True) -> None:
        self.warehouse = warehouse.rstrip("/")
        self.capabilities = frozenset(
            {Capability.TABLE_COMMITS} | ({Capability.MULTI_TABLE_COMMIT} if multi_table else set())
        )
        self.namespaces: dict[str, Properties] = {}
        self.pointers: dict[tuple[str, str], str] = {}
        self._io = load_file_io({}, self.warehouse)

    async def close(self) -> None:
        return None

    async def ping(self) -> None:
        return None

    def file_io(self, location: str, properties: Mapping[str, str]) -> FileIO:
        return self._io

    # Namespaces --------------------------------------------------------------------------
    async def list_namespaces(self, prefix: str, token: str | None, limit: int) -> Listing:
        names = sorted(n for n in self.namespaces if n.startswith(prefix) and (token is None or n > token))
        return _page(names, limit)

    async def namespace_exists(self, name: str) -> bool:
        return name in self.namespaces

    async def create_namespaces(self, namespaces: Sequence[tuple[str, Properties]]) -> None:
        for name, _ in namespaces:
            if name in self.namespaces:
                raise AlreadyExists(name)
        self.namespaces.update((name, dict(properties)) for name, properties in namespaces)

    async def load_namespace(self, name: str) -> Properties:
        if name not in self.namespaces:
            raise NoSuchNamespace(name)
        return dict(self.namespaces[name])

    async def update_namespace(self, name: str, removals: Sequence[str], updates: Mapping[str, str]) -> Properties:
        before = await self.load_namespace(name)
        after = {k: v for k, v in before.items() if k not in removals} | dict(updates)
        self.namespaces[name] = after
        return before

    async def drop_namespace(self, name: str) -> None:
        if name not in self.namespaces:
            raise NoSuchNamespace(name)
        if any(namespace == name for namespace, _ in self.pointers):
            raise NamespaceNotEmpty(name)
        del self.namespaces[name]

    # Tables ------------------------------------------------------------------------------
    async def list_tables(self, namespace: str, token: str | None, limit: int) -> Listing:
        if namespace not in self.namespaces:
            raise NoSuchNamespace(namespace)
        names = sorted(t for ns, t in self.pointers if ns == namespace and (token is None or t > token))
        return _page(names, limit)

    async def load_table_pointer(self, namespace: str, name: str) -> str | None:
        return self.pointers.get((namespace, name))

    async def swap_table_pointers(self, swaps: Sequence[PointerSwap]) -> bool:
        if len(swaps) > 1 and Capability.MULTI_TABLE_COMMIT not in self.capabilities:
            raise AssertionError("a backend without MULTI_TABLE_COMMIT is given one swap at a time")
        if any(self.pointers.get((s.namespace, s.name)) != s.expected for s in swaps):
            return False
        self.pointers.update(((s.namespace, s.name), s.new) for s in swaps)
        return True

    async def drop_table_pointer(self, namespace: str, name: str) -> DroppedTable:
        if (namespace, name) not in self.pointers:
            raise NoSuchTable(name)
        return DroppedTable(self.pointers.pop((namespace, name)))

    def moved_elsewhere(self, namespace: str, name: str) -> AbstractContextManager[None]:
        return nullcontext()  # no cache

    async def rename_table(self, namespace: str, name: str, to_namespace: str, to_name: str) -> None:
        if (namespace, name) not in self.pointers:
            raise NoSuchTable(name)
        if (to_namespace, to_name) in self.pointers:
            raise AlreadyExists(to_name)
        self.pointers[(to_namespace, to_name)] = self.pointers.pop((namespace, name))


def _page(names: list[str], limit: int) -> Listing:
    return Listing(names[:limit], names[limit - 1] if len(names) > limit else None)
