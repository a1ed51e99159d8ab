"""One catalog API whichever side serves the catalog: ``Catalog.load_table``, ``current_location``, ``load_view``,
the listings, ``open_table`` and ``pass_through``, over a catalog served here (the in-memory backend) and over
one forwarded to a remote catalog (a backend offering ``FORWARDING`` whose upstream answers through httpx's
transport seam)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.types import LongType, NestedField

from irc_proxy.app import read_limits
from irc_proxy.backends.base import Backend, Capability
from irc_proxy.backends.rest.upstream import RestUpstream
from irc_proxy.errors import NoSuchTable, NotFound, ServiceUnavailable
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.federation.forwarding import UpstreamCall
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.paging import PageBinding, PageTokens, listing_scope, new_key
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.handling.tables.format_v3 import TableMetadataV3
from irc_proxy.handling.tables.tables import TableCreate
from irc_proxy.settings import RestCatalogSettings, ServerSettings
from irc_proxy.threads import ThreadRunner
from tests.support.memory_backend import MemoryBackend

T = TypeVar("T")
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))
NS = "/v1/{prefix}/namespaces/{namespace}"
TABLE = NS + "/tables/{table}"
SPARK_V3 = Path(__file__).parent / "tables" / "data" / "spark_v3" / "mor.metadata.json"
KEY = {"key-id": "k1", "encrypted-key-metadata": "AAEC", "properties": {"kms": "test"}}


def _run(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(work())


def _pages(catalog: str, operation: str, parent: tuple[str, ...]) -> PageBinding:
    return PageBinding(PageTokens([new_key()]), listing_scope("alice", catalog, operation, parent))


def _build(name: str, backend: Backend) -> Catalog:
    limits = read_limits(ServerSettings())
    return Catalog.build(name, backend, ":", ThreadRunner(2), allowed_locations=[backend.warehouse], read_limits=limits)


def _never() -> Any:
    raise AssertionError("the call is built only when it is sent")


# Served here -----------------------------------------------------------------------------------------------
def test_a_served_catalog_answers_loads_listings_and_opens_from_its_own_tables(tmp_path: Path) -> None:
    catalog = _build("mem", MemoryBackend((tmp_path / "warehouse").as_uri()))
    context, ident = RequestContext(request_id="r1"), TableIdent(("db",), "a")

    async def work() -> None:
        await catalog.namespaces.create(("db",), {})
        created = await catalog.tables.create(("db",), TableCreate("a", SCHEMA))
        await catalog.tables.create(("db",), TableCreate("b", SCHEMA))
        assert await catalog.current_location(context, ident) == created.metadata_location
        load = await catalog.load_table(context, ident)
        assert (load.location, load.metadata.table_uuid) == (created.metadata_location, created.metadata.table_uuid)
        assert load.storage_credentials is None  # the proxy vends its own
        with pytest.raises(NoSuchTable):
            await catalog.current_location(context, TableIdent(("db",), "nope"))

        pages = _pages("mem", "listTables", ("db",))
        first = await catalog.list_tables(context, ("db",), None, 1, pages)
        assert first.items == [ident] and first.next_token is not None
        second = await catalog.list_tables(context, ("db",), first.next_token, 1, pages)
        assert second.items == [TableIdent(("db",), "b")]
        listed = await catalog.list_namespaces(context, (), None, 10, _pages("mem", "listNamespaces", ()))
        assert listed.items == [("db",)]

        assert await catalog.pass_through(context, f"GET {TABLE}", _never) is None
        opened = await catalog.open_table(context, ident)
        assert opened.cache_key == "mem" and opened.load.location == created.metadata_location
        read, owns = opened.files(opened.load.metadata)
        assert owns(created.metadata_location or "") and not owns((tmp_path / "elsewhere.avro").as_uri())
        assert read(created.metadata_location or "", "Table metadata file").startswith(b"{")
        again = await opened.metadata_at(created.metadata_location or "")
        assert again.table_uuid == created.metadata.table_uuid

    _run(work)


# Forwarded to a remote catalog -----------------------------------------------------------------------------
class ForwardingBackend(MemoryBackend):
    """The in-memory backend offering ``FORWARDING``: its tables live in ``upstream``."""

    def __init__(self, warehouse: str, upstream: RestUpstream) -> None:
        super().__init__(warehouse)
        self.capabilities = frozenset({Capability.FORWARDING})
        self.upstream = upstream
        self.separator = ":"

    def use_separator(self, separator: str) -> None:
        self.separator = separator


def _v3_metadata(location: str) -> dict[str, Any]:
    """Spark's v3 table metadata, moved to ``location``, with an encryption key and a snapshot's key id."""
    metadata: dict[str, Any] = json.loads(SPARK_V3.read_text())
    metadata["location"] = location
    metadata["encryption-keys"] = [KEY]
    metadata["snapshots"][-1]["key-id"] = "k1"
    return metadata


class Upstream:
    """What the remote catalog answers, and the requests it saw."""

    def __init__(self, location: str) -> None:
        self.seen: list[httpx.Request] = []
        self.config_asks = 0
        self.config_failures = 0
        """How many ``/v1/config`` asks are answered 503 before the config is."""
        self.metadata = _v3_metadata(location)
        self.table = {
            "metadata-location": f"{location}/metadata/00001.metadata.json",
            "metadata": self.metadata,
            "config": {"client.region": "eu-west-1"},
        }

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/config":
            self.config_asks += 1
            if self.config_asks <= self.config_failures:
                return httpx.Response(503, json={"error": {"type": "Down", "message": "not yet", "code": 503}})
            endpoints = [f"GET {TABLE}", f"GET {NS}/tables", "GET /v1/{prefix}/namespaces", f"GET {NS}/views/{{view}}"]
            return httpx.Response(200, json={"overrides": {"prefix": "up"}, "endpoints": endpoints})
        self.seen.append(request)
        if path == "/v1/up/namespaces/a/tables/t":
            return httpx.Response(200, json=self.table, headers={"ETag": '"e1"'})
        if path == "/v1/up/namespaces/a/tables":
            identifiers = [{"namespace": ["a"], "name": "t"}]
            return httpx.Response(200, json={"identifiers": identifiers, "next-page-token": "upstream-own"})
        if path == "/v1/up/namespaces":
            return httpx.Response(200, json={"namespaces": [["a"]]})
        if path == "/v1/up/namespaces/a/views/v":
            return httpx.Response(200, json={"metadata-location": "file:///v.json", "metadata": VIEW})
        error = {"error": {"message": f"Table does not exist: {path}", "type": "NoSuchTableException", "code": 404}}
        return httpx.Response(404, json=error)


VIEW = {
    "view-uuid": "fa6506c3-7681-40c8-86dc-e36561f83385",
    "format-version": 1,
    "location": "file:///views/v",
    "current-version-id": 1,
    "versions": [
        {
            "version-id": 1,
            "timestamp-ms": 1,
            "schema-id": 0,
            "summary": {},
            "representations": [{"type": "sql", "sql": "select 7 as id", "dialect": "spark"}],
            "default-namespace": ["a"],
        }
    ],
    "version-log": [{"version-id": 1, "timestamp-ms": 1}],
    "schemas": [
        {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "int", "required": False}]}
    ],
}


def _forwarded(tmp_path: Path) -> tuple[Catalog, Upstream]:
    answers = Upstream((tmp_path / "remote" / "t").as_uri())
    settings = RestCatalogSettings(kind="rest", uri="http://upstream.test")  # type: ignore[arg-type]
    upstream = RestUpstream("fed", settings, ThreadRunner(1), httpx.MockTransport(answers))
    backend = ForwardingBackend((tmp_path / "warehouse").as_uri(), upstream)
    return _build("fed", backend), answers


def test_a_forwarded_catalog_answers_loads_with_the_v3_fields_pyicebergs_parser_drops(tmp_path: Path) -> None:
    catalog, upstream = _forwarded(tmp_path)
    context, ident = RequestContext(request_id="r1"), TableIdent(("a",), "t")

    async def work() -> None:
        assert await catalog.current_location(context, ident) is None  # not known without asking the remote
        load = await catalog.load_table(context, ident)
        assert load.location == upstream.table["metadata-location"]
        assert load.config == {"client.region": "eu-west-1"} and load.storage_credentials == []
        assert isinstance(load.metadata, TableMetadataV3)
        assert [key.key_id for key in load.metadata.encryption_keys] == ["k1"]
        assert getattr(load.metadata.snapshots[-1], "key_id", None) == "k1"
        assert "x-iceberg-access-delegation" not in upstream.seen[-1].headers  # the console asks no credentials
        with pytest.raises(NoSuchTable):
            await catalog.load_table(context, TableIdent(("a",), "nope"))
        view = await catalog.load_view(context, TableIdent(("a",), "v"))
        assert view.location == "file:///v.json" and not view.stored_here and view.metadata.current_version_id == 1

    _run(work)
    dropped = TableMetadataUtil.parse_raw(json.dumps(upstream.metadata))  # what the console parsed before
    assert not hasattr(dropped, "encryption_keys") and getattr(dropped.snapshots[-1], "key_id", None) is None


def test_a_forwarded_catalogs_listings_are_the_remote_catalogs(tmp_path: Path) -> None:
    catalog, upstream = _forwarded(tmp_path)
    context = RequestContext(request_id="r1")

    async def work() -> None:
        tables = await catalog.list_tables(context, ("a",), "resume-here", 5, _pages("fed", "listTables", ("a",)))
        assert tables.items == [TableIdent(("a",), "t")] and tables.next_token == "upstream-own"  # unfiltered
        assert upstream.seen[-1].url.query == b"pageSize=5&pageToken=resume-here"
        namespaces = await catalog.list_namespaces(context, (), None, 5, _pages("fed", "listNamespaces", ()))
        assert namespaces.items == [("a",)] and namespaces.next_token is None

    _run(work)


def test_a_forwarded_catalog_passes_through_what_its_remote_serves_and_nothing_else(tmp_path: Path) -> None:
    catalog, upstream = _forwarded(tmp_path)
    context = RequestContext(request_id="r1")

    async def call() -> UpstreamCall:
        return UpstreamCall(f"GET {TABLE}", ("a",), {"table": "t"})

    async def work() -> None:
        await catalog.discover(context)
        assert catalog.serves(f"GET {TABLE}") and catalog.serves(f"POST {TABLE}/plan")  # planned here
        assert not catalog.serves(f"POST {TABLE}")  # the remote does not take commits
        reply = await catalog.pass_through(context, f"GET {TABLE}", call)
        assert reply is not None and reply.status == 200 and reply.headers["etag"] == '"e1"'
        assert json.loads(reply.body) == upstream.table  # the upstream's bytes, unparsed
        assert await catalog.pass_through(context, f"POST {TABLE}/plan", _never) is None

    _run(work)


def test_a_forwarded_catalog_asks_for_its_remotes_config_until_it_answers_and_places_nothing_before(
    tmp_path: Path,
) -> None:
    catalog, upstream = _forwarded(tmp_path)
    upstream.config_failures = 1
    context = RequestContext(request_id="r1")

    async def work() -> None:
        with pytest.raises(ServiceUnavailable, match="answered /v1/config with 503"):
            await catalog.discover(context)
        with pytest.raises(ServiceUnavailable, match="has not answered /v1/config yet"):
            catalog.serves(f"GET {TABLE}")  # nothing placed (nor kept) without the config
        await catalog.discover(context)  # asked again
        assert catalog.serves(f"GET {TABLE}") and not catalog.serves(f"POST {TABLE}")
        await catalog.discover(context)  # known: not asked again
        assert catalog.serves(f"GET {TABLE}") and not catalog.serves(f"POST {TABLE}")
        assert upstream.config_asks == 2

    _run(work)


def test_a_forwarded_table_opens_for_planning_with_vended_access_confined_to_it(tmp_path: Path) -> None:
    catalog, upstream = _forwarded(tmp_path)
    context, ident = RequestContext(request_id="r1"), TableIdent(("a",), "t")
    earlier = tmp_path / "remote" / "t" / "metadata" / "00000.metadata.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(json.dumps(copy.deepcopy(upstream.metadata) | {"last-updated-ms": 1}))

    async def work() -> None:
        opened = await catalog.open_table(context, ident)
        assert upstream.seen[-1].headers["x-iceberg-access-delegation"] == "vended-credentials"
        assert opened.cache_key == f"fed/{opened.load.metadata.table_uuid}" and opened.load.storage_credentials == []
        before = await opened.metadata_at(earlier.as_uri())
        assert before.last_updated_ms == 1 and isinstance(before, TableMetadataV3) and before.encryption_keys
        with pytest.raises(NotFound):
            await opened.metadata_at((tmp_path / "other" / "x.metadata.json").as_uri())
        read, owns = opened.files(before)
        assert owns(earlier.as_uri()) and not owns((tmp_path / "other" / "m.avro").as_uri())
        assert read(earlier.as_uri(), "Table metadata file").startswith(b"{")

    _run(work)
