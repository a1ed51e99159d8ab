"""The REST backend's namespaces and table existence, over a small REST catalog behind ``httpx.MockTransport``:
flat names to upstream levels and back, upstream errors as the domain's, HEAD only where it is advertised."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from irc_proxy.backends.rest import RestBackend
from irc_proxy.backends.rest.upstream import RestUpstream
from irc_proxy.errors import AlreadyExists, NamespaceNotEmpty, NoSuchNamespace, ServiceUnavailable
from irc_proxy.settings import RestCatalogSettings
from irc_proxy.threads import ThreadRunner


class Catalog:
    """An in-memory REST catalog with nested namespaces, paged listings and ``endpoints`` to advertise."""

    def __init__(self, endpoints: list[str] | None = None) -> None:
        self.namespaces: dict[tuple[str, ...], dict[str, str]] = {}
        self.tables: dict[tuple[str, ...], list[str]] = {}
        self.endpoints = endpoints
        self.methods: list[str] = []

    def error(self, status: int, kind: str, message: str) -> httpx.Response:
        return httpx.Response(status, json={"error": {"type": kind, "message": message, "code": status}})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.methods.append(f"{request.method} {request.url.path}")
        parts = request.url.raw_path.decode().split("?")[0].split("/")[3:]  # after /v1/<prefix>
        if request.url.path == "/v1/config":
            return httpx.Response(200, json={"defaults": {"prefix": "p"}, "endpoints": self.endpoints})
        if parts == ["namespaces"] and request.method == "POST":
            body = json.loads(request.content)
            level = tuple(body["namespace"])
            if level in self.namespaces:
                return self.error(409, "AlreadyExistsException", f"Namespace already exists: {level}")
            self.namespaces[level] = body["properties"]
            return httpx.Response(200, json=body)
        if parts == ["namespaces"]:
            parent = tuple(request.url.params["parent"].split("\x1f")) if "parent" in request.url.params else ()
            names = sorted(n for n in self.namespaces if n[: len(parent)] == parent and len(n) == len(parent) + 1)
            start, size = int(request.url.params.get("pageToken", 0)), int(request.url.params["pageSize"])
            token = str(start + size) if start + size < len(names) else None
            return httpx.Response(200, json={"namespaces": [list(n) for n in names[start : start + size]]} | (
                {"next-page-token": token} if token else {}
            ))  # fmt: skip
        level = tuple(unquote(p) for p in parts[1].split("%1F"))
        if level not in self.namespaces:
            return self.error(404, "NoSuchNamespaceException", f"Namespace does not exist: {level}")
        rest = parts[2:]
        if rest == [] and request.method in ("GET", "HEAD"):
            return httpx.Response(200, json={"namespace": list(level), "properties": self.namespaces[level]})
        if rest == [] and request.method == "DELETE":
            if self.tables.get(level):
                return self.error(409, "NamespaceNotEmptyException", "Namespace is not empty")
            del self.namespaces[level]
            return httpx.Response(204)
        if rest == ["properties"]:
            body = json.loads(request.content)
            props = self.namespaces[level]
            for key in body["removals"]:
                props.pop(key, None)
            props.update(body["updates"])
            return httpx.Response(200, json={"updated": list(body["updates"]), "removed": body["removals"]})
        if rest == ["tables"]:
            return httpx.Response(
                200, json={"identifiers": [{"namespace": list(level), "name": n} for n in self.tables.get(level, [])]}
            )
        if rest[0] == "tables" and unquote(rest[1]) in self.tables.get(level, []):
            return httpx.Response(200 if request.method == "GET" else 204, json={} if request.method == "GET" else None)
        return self.error(404, "NoSuchTableException", "Table does not exist")


def backend(catalog: Catalog, **settings: Any) -> RestBackend:
    config = RestCatalogSettings.model_validate(
        {"kind": "rest", "uri": "http://user:secret@upstream.test", "view_warehouse": "file:///tmp/views"} | settings
    )
    made = RestBackend("remote", config, ThreadRunner(2))
    asyncio.run(made.upstream.close())  # the pooled client it built: replaced by one on the in-memory catalog
    made.upstream = RestUpstream("remote", config, ThreadRunner(2), transport=httpx.MockTransport(catalog))
    return made


def run(made: RestBackend, steps: Callable[[], Awaitable[Any]]) -> Any:
    async def scenario() -> Any:
        try:
            return await steps()
        finally:
            await made.close()

    return asyncio.run(scenario())


def test_flat_names_split_at_the_separator_into_upstream_levels_and_back() -> None:
    catalog = Catalog()
    rest = backend(catalog)

    async def steps() -> tuple[Any, ...]:
        await rest.create_namespaces([("a", {}), ("a:b%3Ac", {"k": "v"}), ("a:d", {})])
        return (
            await rest.list_namespaces("", None, 10),
            await rest.list_namespaces("a:", None, 10),
            await rest.load_namespace("a:b%3Ac"),
        )

    top, children, properties = run(rest, steps)
    assert catalog.namespaces.keys() == {("a",), ("a", "b:c"), ("a", "d")}
    assert top.names == ["a"]
    assert children.names == ["a:b%3Ac", "a:d"]  # a level holding the separator comes back escaped
    assert properties == {"k": "v"}


def test_namespace_listings_resume_at_the_upstreams_token() -> None:
    catalog = Catalog()
    catalog.namespaces = {(f"n{i}",): {} for i in range(5)}
    rest = backend(catalog)

    async def steps() -> list[list[str]]:
        pages, token = [], None
        while True:
            page = await rest.list_namespaces("", token, 2)
            pages.append(page.names)
            if (token := page.next_token) is None:
                return pages

    assert run(rest, steps) == [["n0", "n1"], ["n2", "n3"], ["n4"]]


def test_mapped_namespaces_keep_a_flat_name_as_one_upstream_level() -> None:
    catalog = Catalog()
    rest = backend(catalog, nested_namespaces="mapped")

    async def steps() -> list[str]:
        await rest.create_namespaces([("a:b", {})])
        return (await rest.list_namespaces("a:", None, 10)).names

    assert run(rest, steps) == ["a:b"]
    assert catalog.namespaces.keys() == {("a:b",)}


def test_upstream_errors_are_the_domains() -> None:
    catalog = Catalog()
    catalog.namespaces = {("a",): {}}
    catalog.tables = {("a",): ["t"]}
    rest = backend(catalog)

    async def steps() -> None:
        with pytest.raises(AlreadyExists, match="Namespace already exists"):
            await rest.create_namespaces([("a", {})])
        with pytest.raises(NoSuchNamespace):
            await rest.load_namespace("missing")
        with pytest.raises(NamespaceNotEmpty):
            await rest.drop_namespace("a")

    run(rest, steps)


def test_update_returns_the_properties_before_it() -> None:
    catalog = Catalog()
    catalog.namespaces = {("a",): {"x": "1", "y": "2"}}
    rest = backend(catalog)
    before = run(rest, lambda: rest.update_namespace("a", ["x"], {"z": "3"}))
    assert before == {"x": "1", "y": "2"}
    assert catalog.namespaces[("a",)] == {"y": "2", "z": "3"}


@pytest.mark.parametrize(
    ("endpoints", "method"),
    [
        (None, "GET"),  # legacy endpoints: no HEAD
        (["HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}"], "HEAD"),
    ],
)
def test_table_existence_uses_head_only_where_advertised(endpoints: list[str] | None, method: str) -> None:
    catalog = Catalog(endpoints)
    catalog.namespaces = {("a",): {}}
    catalog.tables = {("a",): ["t"]}
    rest = backend(catalog)

    async def steps() -> tuple[str | None, str | None]:
        return await rest.load_table_pointer("a", "t"), await rest.load_table_pointer("a", "u")

    found, missing = run(rest, steps)
    assert found == "rest+http://user:***@upstream.test#a/t"  # a marker, the upstream's password masked
    assert missing is None
    assert f"{method} /v1/p/namespaces/a/tables/t" in catalog.methods


def test_an_upstream_without_a_config_is_service_unavailable() -> None:
    rest = backend(lambda request: httpx.Response(503, text="down"))  # type: ignore[arg-type]
    with pytest.raises(ServiceUnavailable, match="answered /v1/config with 503"):
        run(rest, lambda: rest.namespace_exists("a"))
