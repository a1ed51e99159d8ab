"""Namespace operations: nested levels over a backend's flat names."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from irc_proxy.backends.base import Backend, Properties
from irc_proxy.errors import AlreadyExists, NamespaceNotEmpty, NoSuchNamespace, Unprocessable
from irc_proxy.handling.maintenance.policy import check_overrides
from irc_proxy.handling.naming import Namespace, NamespaceCodec, display, validate_new_namespace
from irc_proxy.handling.paging import Fetch, Page, PageRequest, collect
from irc_proxy.handling.views_index import ViewIndex
from irc_proxy.text import UNSAFE

Confine = Callable[[str, str], str]
"""(location, what) -> the location normalised; raises BadRequest or Forbidden."""


@dataclass(frozen=True)
class PropertiesUpdate:
    updated: list[str]
    removed: list[str]
    missing: list[str]


def no_such_namespace(namespace: Sequence[str], separator: str = ":") -> NoSuchNamespace:
    """``Namespace does not exist: team.sales``, and when a level holds a ``.``, how nested levels are written.

    Names are printed with ``.`` between levels (as Iceberg Java does), so a client that writes
    ``team.sales`` in a URL asked for one level named so; ``separator`` is the catalog's (``:`` by default).
    """
    message = f"Namespace does not exist: {display(namespace)}"
    levels = [quote(part, safe="") for level in namespace for part in level.split(".")]
    if len(levels) > len(namespace) and all(levels) and not UNSAFE.search(message) and len(message) <= 200:
        written = "%1F".join(levels)
        if not any(separator in level for level in levels):
            written += f" or {separator.join(levels)}"
        message += f" (a namespace of {len(levels)} levels is written {written} in a URL; `.` is part of a level name)"
    return NoSuchNamespace(message)


COUNT_CAP = 100
"""A refused drop counts each kind of content up to this many (``more than 100 tables``), never a whole listing."""
_CAPPED = PageRequest(limit=COUNT_CAP + 1)


def _counted(count: int, kind: str) -> str:
    if count > COUNT_CAP:
        return f"more than {COUNT_CAP} {kind}s"
    return f"{count} {kind}" + ("" if count == 1 else "s")


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
            raise no_such_namespace(namespace, self._codec.separator)
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
        """Properties with a ``location`` normalised, refused outside the allowed locations; maintenance overrides
        (``irc-proxy.maintenance.*``) refused when invalid."""
        check_overrides(properties)
        confined = dict(properties)
        if self._confine is not None and "location" in confined:
            confined["location"] = self._confine(confined["location"], "Namespace location")
        return confined

    async def load(self, namespace: Namespace) -> Properties:
        try:
            return await self._backend.load_namespace(self._codec.to_flat(namespace))
        except NoSuchNamespace:
            raise no_such_namespace(namespace, self._codec.separator) from None

    async def exists(self, namespace: Namespace) -> None:
        """Raise NoSuchNamespace unless it exists."""
        await self.flat_existing(namespace)

    async def drop(self, namespace: Namespace) -> None:
        """Drop an empty namespace; there is no cascade.

        A namespace that is not empty is refused with what it holds (``contents``); the empty case
        costs what it always did: one look-up each for children and views, then the backend's drop.
        """
        flat = await self.flat_existing(namespace)
        if not (await self._has_descendants(namespace) or await self._views.namespace_has_views(flat)):
            try:
                await self._backend.drop_namespace(flat)
                return
            except NamespaceNotEmpty:  # tables (or, in Glue, other objects): counted below
                pass
            except NoSuchNamespace:
                raise no_such_namespace(namespace, self._codec.separator) from None
        raise NamespaceNotEmpty(f"Namespace {display(namespace)} is not empty. {await self.contents(namespace)}")

    async def contents(self, namespace: Namespace) -> str:
        """``It contains 2 namespaces, 1 table and more than 100 views``: each kind counted up to ``COUNT_CAP``.

        Namespaces are every one below it (any depth), tables those the catalog lists. When none is
        found the backend still refused: it holds something the catalog does not list (a Glue table of
        another format).
        """
        flat = self._codec.to_flat(namespace)

        async def tables(token: str | None, limit: int) -> tuple[list[str], str | None]:
            listing = await self._backend.list_tables(flat, token, limit)
            return listing.names, listing.next_token

        try:
            counts = {
                "namespace": len((await collect(self._fetcher(self._codec.children_prefix(namespace)), _CAPPED)).items),
                "table": len((await collect(tables, _CAPPED)).items),
                "view": await self._views.count_views(flat, COUNT_CAP + 1),
            }
        except NoSuchNamespace:
            raise no_such_namespace(namespace, self._codec.separator) from None
        found = [_counted(count, kind) for kind, count in counts.items() if count]
        if not found:
            return "It contains objects this catalog does not list (such as tables of other formats)."
        listed = found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]
        return f"It contains {listed}."

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
            raise no_such_namespace(namespace, self._codec.separator) from None
        return PropertiesUpdate(
            updated=sorted(updates),
            removed=sorted(k for k in set(removals) if k in before),
            missing=sorted(k for k in set(removals) if k not in before),
        )
