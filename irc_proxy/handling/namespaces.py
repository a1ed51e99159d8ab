"""Namespace operations: nested levels over a backend's flat names."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from irc_proxy.backends.base import Backend, Properties
from irc_proxy.errors import AlreadyExists, NamespaceNotEmpty, NoSuchNamespace, Unprocessable
from irc_proxy.handling.naming import Namespace, NamespaceCodec, display, validate_new_namespace
from irc_proxy.handling.paging import Fetch, Page, PageRequest, collect
from irc_proxy.handling.views_index import ViewIndex

Confine = Callable[[str, str], str]
"""(location, what) -> the location normalised; raises BadRequest or Forbidden."""


@dataclass(frozen=True)
class PropertiesUpdate:
    updated: list[str]
    removed: list[str]
    missing: list[str]


def no_such_namespace(namespace: Sequence[str]) -> NoSuchNamespace:
    return NoSuchNamespace(f"Namespace does not exist: {display(namespace)}")


class Namespaces:
    """Create, list, load, update and drop nested namespaces."""

    def __init__(
        self, backend: Backend, codec: NamespaceCodec, views: ViewIndex, confine: Confine | None = None
    ) -> None:
        """``confine`` checks a ``location`` property against the catalog's allowed locations (400/403)."""
        self._confine = confine
        self._backend = backend
        self._codec = codec
        self._views = views

    async def flat_existing(self, namespace: Namespace) -> str:
        """The flat name of an existing namespace; raises NoSuchNamespace."""
        flat = self._codec.to_flat(namespace)
        if not await self._backend.namespace_exists(flat):
            raise no_such_namespace(namespace)
        return flat

    async def list(self, parent: Namespace, page: PageRequest) -> Page[Namespace]:
        """Direct children of ``parent`` (the top level when empty), each as its full level tuple."""
        if parent:
            await self.flat_existing(parent)
        prefix = self._codec.children_prefix(parent)
        page_names = await collect(
            self._fetcher(prefix), page, keep=lambda name: self._codec.separator not in name[len(prefix) :]
        )
        return Page([self._codec.from_flat(name) for name in page_names.items], page_names.next_token)

    def _fetcher(self, prefix: str) -> Fetch:
        async def fetch(token: str | None, limit: int) -> tuple[list[str], str | None]:
            listing = await self._backend.list_namespaces(prefix, token, limit)
            return listing.names, listing.next_token

        return fetch

    async def _has_descendants(self, namespace: Namespace) -> bool:
        found = await collect(self._fetcher(self._codec.children_prefix(namespace)), PageRequest(limit=1))
        return bool(found.items)

    async def create(self, namespace: Namespace, properties: Mapping[str, str]) -> Properties:
        """Create the namespace and any missing parents in one step."""
        flat = self._codec.to_flat(namespace)
        properties = self._confined(properties)
        if await self._backend.namespace_exists(flat):
            raise AlreadyExists(f"Namespace already exists: {display(namespace)}")
        validate_new_namespace(namespace)  # every level fits its default directory (an existing one is a 409)
        missing: list[tuple[str, Properties]] = [
            (parent_flat, {})
            for depth in range(1, len(namespace))
            if not await self._backend.namespace_exists(parent_flat := self._codec.to_flat(namespace[:depth]))
        ]
        try:
            await self._backend.create_namespaces([*missing, (flat, dict(properties))])
        except AlreadyExists:
            raise AlreadyExists(f"Namespace already exists: {display(namespace)}") from None
        return dict(properties)

    def _confined(self, properties: Mapping[str, str]) -> dict[str, str]:
        """Properties with a ``location`` normalised, refused outside the allowed locations."""
        confined = dict(properties)
        if self._confine is not None and "location" in confined:
            confined["location"] = self._confine(confined["location"], "Namespace location")
        return confined

    async def load(self, namespace: Namespace) -> Properties:
        try:
            return await self._backend.load_namespace(self._codec.to_flat(namespace))
        except NoSuchNamespace:
            raise no_such_namespace(namespace) from None

    async def exists(self, namespace: Namespace) -> None:
        """Raise NoSuchNamespace unless it exists."""
        await self.flat_existing(namespace)

    async def drop(self, namespace: Namespace) -> None:
        """Drop an empty namespace; there is no cascade."""
        flat = await self.flat_existing(namespace)
        if await self._has_descendants(namespace):
            raise NamespaceNotEmpty(f"Namespace {display(namespace)} is not empty. It contains namespaces.")
        if await self._views.namespace_has_views(flat):
            raise NamespaceNotEmpty(f"Namespace {display(namespace)} is not empty. It contains views.")
        try:
            await self._backend.drop_namespace(flat)
        except NamespaceNotEmpty:
            raise NamespaceNotEmpty(f"Namespace {display(namespace)} is not empty. It contains tables.") from None
        except NoSuchNamespace:
            raise no_such_namespace(namespace) from None

    async def update_properties(
        self, namespace: Namespace, removals: Sequence[str], updates: Mapping[str, str]
    ) -> PropertiesUpdate:
        overlap = sorted(set(removals) & set(updates))
        if overlap:
            raise Unprocessable(f"Updates and removals conflict for these keys: {overlap}")
        updates = self._confined(updates)
        try:
            before = await self._backend.update_namespace(self._codec.to_flat(namespace), removals, updates)
        except NoSuchNamespace:
            raise no_such_namespace(namespace) from None
        return PropertiesUpdate(
            updated=sorted(updates),
            removed=sorted(k for k in set(removals) if k in before),
            missing=sorted(k for k in set(removals) if k not in before),
        )
