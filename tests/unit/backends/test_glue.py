"""The Glue backend against moto's Glue (a real server over HTTP): namespaces, pointers, listings, errors."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField

from irc_proxy.backends.base import PointerSwap
from irc_proxy.backends.glue import GlueBackend, _glue_page, table_kind
from irc_proxy.errors import (
    AlreadyExists,
    BadRequest,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NotAnIcebergTable,
    ServiceUnavailable,
)
from irc_proxy.settings import GlueCatalogSettings
from irc_proxy.stores import db
from irc_proxy.stores.locks import CommitLocks
from irc_proxy.threads import ThreadRunner
from tests.support.aws import ACCESS_KEY, ACCOUNT, REGION, SECRET_KEY, client, moto_server

METADATA = new_table_metadata(
    Schema(NestedField(1, "id", LongType(), required=False)),
    UNPARTITIONED_PARTITION_SPEC,
    UNSORTED_SORT_ORDER,
    "file:///wh/t",
    {},
)


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def locks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CommitLocks]:
    engine = db.create_state_engine(f"sqlite:///{tmp_path_factory.mktemp('glue') / 'state.db'}")
    yield CommitLocks(engine)
    engine.dispose()


def settings(endpoint: str, **extra: Any) -> GlueCatalogSettings:
    return GlueCatalogSettings(
        kind="glue",
        warehouse="s3://lake/wh",
        region=REGION,
        catalog_id=ACCOUNT,
        endpoint_url=endpoint,
        access_key_id=ACCESS_KEY,  # type: ignore[arg-type]
        secret_access_key=SECRET_KEY,  # type: ignore[arg-type]
        max_attempts=1,
        **extra,
    )


@pytest.fixture(scope="module")
def glue(moto: str, locks: CommitLocks) -> Iterator[GlueBackend]:
    """One backend for the module (a boto3 client takes most of a second to build)."""
    backend = GlueBackend("lake", settings(moto), locks, ThreadRunner(8))
    yield backend
    asyncio.run(backend.close())


@pytest.fixture(scope="module")
def aws(moto: str) -> Any:
    """A plain boto3 Glue client on the same server, to see and make what the backend would not."""
    return client("glue", moto)


@pytest.fixture
def ns(glue: GlueBackend) -> str:
    """A fresh, empty Glue database."""
    name = f"ns_{uuid.uuid4().hex[:10]}"
    asyncio.run(glue.create_namespaces([(name, {})]))
    return name


def create(glue: GlueBackend, ns: str, name: str, pointer: str, metadata: TableMetadata = METADATA) -> bool:
    return asyncio.run(glue.swap_table_pointers([PointerSwap(ns, name, None, pointer, metadata)]))


@pytest.mark.parametrize(
    ("table", "kind"),
    [
        ({"Parameters": {"table_type": "iceberg"}}, "ICEBERG"),
        ({"TableType": "VIRTUAL_VIEW", "Parameters": {"table_type": "ICEBERG"}}, "VIRTUAL_VIEW"),
        ({"Parameters": {"spark.sql.sources.provider": "DELTA"}}, "DELTA"),
        ({"Parameters": {"table_type": "delta"}}, "DELTA"),
        ({"Parameters": {"hoodie.table.name": "x"}}, "HUDI"),
        ({"Parameters": {"spark.sql.sources.provider": "hudi"}}, "HUDI"),
        ({}, "HIVE"),
    ],
)
def test_the_kind_of_a_glue_table_is_read_from_its_type_and_parameters(table: dict[str, Any], kind: str) -> None:
    assert table_kind(table) == kind


def test_glue_pages_resume_exactly_when_the_server_ignores_max_results() -> None:
    everything = [f"t{i:02d}" for i in range(23)]

    def fetch(request: dict[str, Any]) -> tuple[list[Any], str | None]:
        """Ten entries per Glue page whatever MaxResults says (as moto does)."""
        start = int(request.get("NextToken") or 0)
        return everything[start : start + 10], str(start + 10) if start + 10 < len(everything) else None

    seen: list[str] = []
    token: str | None = None
    for _ in range(30):
        page, token = _glue_page(fetch, {}, token, 4)
        assert len(page) <= 4
        seen += page
        if token is None:
            break
    assert seen == everything
    assert json.loads(_glue_page(fetch, {}, None, 4)[1] or "{}") == {"t": None, "o": 4}


def test_namespace_properties_map_to_location_description_and_parameters(glue: GlueBackend, aws: Any) -> None:
    name = f"ns_{uuid.uuid4().hex[:10]}"
    properties = {"location": "s3://lake/wh/x", "comment": "sales data", "owner": "bi"}
    asyncio.run(glue.create_namespaces([(name, properties)]))
    assert asyncio.run(glue.load_namespace(name)) == properties
    database = aws.get_database(Name=name)["Database"]
    assert (database["LocationUri"], database["Description"]) == ("s3://lake/wh/x", "sales data")
    before = asyncio.run(glue.update_namespace(name, ["owner", "absent"], {"team": "a"}))
    assert before == properties
    assert asyncio.run(glue.load_namespace(name)) == {
        "location": "s3://lake/wh/x",
        "comment": "sales data",
        "team": "a",
    }


def test_creating_namespaces_that_run_into_an_existing_one_leaves_no_parent_behind(glue: GlueBackend, ns: str) -> None:
    parent = f"p_{uuid.uuid4().hex[:10]}"
    with pytest.raises(AlreadyExists):
        asyncio.run(glue.create_namespaces([(parent, {}), (ns, {})]))
    assert not asyncio.run(glue.namespace_exists(parent))
    assert asyncio.run(glue.namespace_exists(ns))


def test_missing_and_non_empty_namespaces_are_refused(glue: GlueBackend, ns: str) -> None:
    with pytest.raises(NoSuchNamespace):
        asyncio.run(glue.load_namespace(f"{ns}_missing"))
    with pytest.raises(NoSuchNamespace):
        asyncio.run(glue.update_namespace(f"{ns}_missing", [], {}))
    with pytest.raises(NoSuchNamespace):
        asyncio.run(glue.drop_namespace(f"{ns}_missing"))
    with pytest.raises(NoSuchNamespace):
        asyncio.run(glue.list_tables(f"{ns}_missing", None, 10))
    create(glue, ns, "t", "file:///m/0.json")
    with pytest.raises(NamespaceNotEmpty):
        asyncio.run(glue.drop_namespace(ns))
    asyncio.run(glue.drop_table_pointer(ns, "t"))
    asyncio.run(glue.drop_namespace(ns))
    assert not asyncio.run(glue.namespace_exists(ns))


def test_a_pointer_moves_only_from_the_expected_location(glue: GlueBackend, ns: str) -> None:
    assert create(glue, ns, "t", "file:///m/0.json")
    assert asyncio.run(glue.load_table_pointer(ns, "t")) == "file:///m/0.json"
    stale = PointerSwap(ns, "t", "file:///m/other.json", "file:///m/1.json", METADATA)
    assert not asyncio.run(glue.swap_table_pointers([stale]))
    fresh = PointerSwap(ns, "t", "file:///m/0.json", "file:///m/1.json", METADATA)
    assert asyncio.run(glue.swap_table_pointers([fresh]))
    assert asyncio.run(glue.load_table_pointer(ns, "t")) == "file:///m/1.json"
    assert asyncio.run(glue.load_table_pointer(ns, "absent")) is None
    gone = PointerSwap(ns, "absent", "file:///m/0.json", "file:///m/1.json", METADATA)
    assert not asyncio.run(glue.swap_table_pointers([gone]))


def test_concurrent_swaps_from_one_pointer_let_exactly_one_land(glue: GlueBackend, ns: str) -> None:
    create(glue, ns, "t", "file:///m/0.json")

    async def race() -> list[bool]:
        swaps = [PointerSwap(ns, "t", "file:///m/0.json", f"file:///m/{i}-next.json", METADATA) for i in range(4)]
        return list(await asyncio.gather(*(glue.swap_table_pointers([swap]) for swap in swaps)))

    outcomes = asyncio.run(race())  # moto ignores VersionId: the commit lock is what makes this hold
    assert sorted(outcomes) == [False, False, False, True]
    assert asyncio.run(glue.load_table_pointer(ns, "t")) == f"file:///m/{outcomes.index(True)}-next.json"


def test_creating_a_table_that_exists_is_a_lost_swap_unless_it_is_this_commit(glue: GlueBackend, ns: str) -> None:
    assert create(glue, ns, "t", "file:///m/0.json")
    assert create(glue, ns, "t", "file:///m/0.json")  # a re-sent create that had landed
    assert not create(glue, ns, "t", "file:///m/other.json")
    with pytest.raises(NoSuchNamespace):
        create(glue, f"{ns}_missing", "t", "file:///m/0.json")


def test_a_swap_without_metadata_or_of_two_tables_is_a_bad_request(glue: GlueBackend, ns: str) -> None:
    with pytest.raises(BadRequest, match="needs the new metadata"):
        asyncio.run(glue.swap_table_pointers([PointerSwap(ns, "t", None, "file:///m/0.json")]))
    two = [PointerSwap(ns, n, None, "file:///m/0.json", METADATA) for n in ("a", "b")]
    with pytest.raises(BadRequest, match="one table at a time"):
        asyncio.run(glue.swap_table_pointers(two))


def test_non_iceberg_tables_are_not_listed_or_loaded_and_views_are_not_tables(
    glue: GlueBackend, ns: str, aws: Any
) -> None:
    aws.create_table(DatabaseName=ns, TableInput={"Name": "hive_t", "Parameters": {}})
    aws.create_table(DatabaseName=ns, TableInput={"Name": "v", "TableType": "VIRTUAL_VIEW", "ViewOriginalText": "x"})
    create(glue, ns, "ice", "file:///m/0.json")
    assert asyncio.run(glue.list_tables(ns, None, 10)).names == ["ice"]
    with pytest.raises(NotAnIcebergTable, match="is a HIVE table"):
        asyncio.run(glue.load_table_pointer(ns, "hive_t"))
    assert asyncio.run(glue.load_table_pointer(ns, "v")) is None
    with pytest.raises(NoSuchTable):
        asyncio.run(glue.drop_table_pointer(ns, "v"))


def test_the_table_type_filter_lists_other_kinds(moto: str, locks: CommitLocks, ns: str, aws: Any) -> None:
    aws.create_table(DatabaseName=ns, TableInput={"Name": "hive_t", "Parameters": {}})
    everything = GlueBackend("lake", settings(moto, table_type_filter=["*"]), locks, ThreadRunner(2))
    try:
        assert asyncio.run(everything.list_tables(ns, None, 10)).names == ["hive_t"]
    finally:
        asyncio.run(everything.close())


def test_tables_are_listed_in_pages_that_resume_exactly(glue: GlueBackend, ns: str) -> None:
    for i in range(5):
        create(glue, ns, f"t{i}", f"file:///m/{i}.json")
    seen: list[str] = []
    token: str | None = None
    while True:
        page = asyncio.run(glue.list_tables(ns, token, 2))
        assert len(page.names) <= 2
        seen += page.names
        if (token := page.next_token) is None:
            break
    assert sorted(seen) == [f"t{i}" for i in range(5)] and len(seen) == 5


def test_a_dropped_table_keeps_its_attributes_and_gets_them_back_on_restore(
    glue: GlueBackend, ns: str, aws: Any
) -> None:
    create(glue, ns, "t", "file:///m/0.json")
    table = aws.get_table(DatabaseName=ns, Name="t")["Table"]
    table_input = {k: table[k] for k in ("Name", "StorageDescriptor", "TableType", "Parameters")}
    table_input["Parameters"] = table_input["Parameters"] | {"team": "bi"}
    aws.update_table(DatabaseName=ns, TableInput=table_input | {"Description": "orders", "Owner": "alice"})
    dropped = asyncio.run(glue.drop_table_pointer(ns, "t"))
    assert dropped.metadata_location == "file:///m/0.json"
    assert dropped.entry is not None
    assert (dropped.entry["Description"], dropped.entry["Owner"]) == ("orders", "alice")
    assert asyncio.run(glue.load_table_pointer(ns, "t")) is None
    restore = PointerSwap(ns, "t", None, "file:///m/0.json", METADATA, dropped.entry)
    assert asyncio.run(glue.swap_table_pointers([restore]))
    back = aws.get_table(DatabaseName=ns, Name="t")["Table"]
    assert (back["Description"], back["Owner"], back["Parameters"]["team"]) == ("orders", "alice", "bi")
    with pytest.raises(NoSuchTable):
        asyncio.run(glue.drop_table_pointer(ns, "absent"))


def test_rename_moves_the_pointer_and_refuses_a_taken_name(glue: GlueBackend, ns: str) -> None:
    create(glue, ns, "a", "file:///m/a.json")
    create(glue, ns, "b", "file:///m/b.json")
    with pytest.raises(AlreadyExists):
        asyncio.run(glue.rename_table(ns, "a", ns, "b"))
    assert asyncio.run(glue.load_table_pointer(ns, "a")) == "file:///m/a.json"
    asyncio.run(glue.rename_table(ns, "a", ns, "c"))
    assert asyncio.run(glue.load_table_pointer(ns, "a")) is None
    assert asyncio.run(glue.load_table_pointer(ns, "c")) == "file:///m/a.json"
    with pytest.raises(NoSuchTable):
        asyncio.run(glue.rename_table(ns, "a", ns, "d"))


def test_an_unreachable_glue_is_service_unavailable(locks: CommitLocks) -> None:
    down = GlueBackend("lake", settings("http://127.0.0.1:9", timeout_seconds=2), locks, ThreadRunner(2))
    try:
        with pytest.raises(ServiceUnavailable, match="unreachable for GetDatabases"):
            asyncio.run(down.ping())
        with pytest.raises(ServiceUnavailable):
            asyncio.run(down.namespace_exists("x"))
    finally:
        asyncio.run(down.close())


def test_engine_views_are_listed_apart_from_tables_and_loaded_as_view_metadata(
    glue: GlueBackend, ns: str, aws: Any
) -> None:
    aws.create_table(
        DatabaseName=ns,
        TableInput={
            "Name": "v",
            "TableType": "VIRTUAL_VIEW",
            "ViewOriginalText": "SELECT 1 AS x",
            "ViewExpandedText": "SELECT 1 AS x",
            "StorageDescriptor": {"Columns": [{"Name": "x", "Type": "int"}]},
        },
    )
    create(glue, ns, "t", "file:///m/0.json")
    assert asyncio.run(glue.list_engine_views(ns, None, 10)).names == ["v"]
    view = asyncio.run(glue.load_engine_view(ns, "v"))
    assert view is not None
    assert view.metadata_location.startswith(f"glue://{ACCOUNT}/{ns}/v")
    assert view.metadata.location == f"s3://lake/wh/{ns}/v"
    assert asyncio.run(glue.load_engine_view(ns, "t")) is None
    assert asyncio.run(glue.load_engine_view(ns, "absent")) is None
