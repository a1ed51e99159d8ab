"""The local backend on pyiceberg's SQL catalog tables, on a SQLite file and on PostgreSQL: namespaces,
compare-and-swap pointers (several at once, atomically), drops and renames that lose no commit."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from irc_proxy.backends.base import Listing, PointerSwap
from irc_proxy.backends.local import (
    TABLES,
    LocalBackend,
    _with_connect_timeout,
    catalog_engine,
    ensure_catalog_tables,
)
from irc_proxy.errors import AlreadyExists, NamespaceNotEmpty, NoSuchNamespace, NoSuchTable, StartupError
from irc_proxy.threads import ThreadRunner
from tests.support.postgres import scratch_database


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('local') / 'catalog.db'}"
        return
    with scratch_database() as url:
        yield url


@pytest.fixture
def local(database_url: str, tmp_path: Path) -> Iterator[LocalBackend]:
    """A catalog of its own name: rows of other tests' catalogs in the shared database are not its."""
    backend = LocalBackend(f"c_{uuid.uuid4().hex[:8]}", (tmp_path / "wh").as_uri(), database_url, ThreadRunner(8))
    yield backend
    asyncio.run(backend.close())


def swap(local: LocalBackend, *swaps: PointerSwap) -> bool:
    return asyncio.run(local.swap_table_pointers(swaps))


def create(local: LocalBackend, namespace: str, name: str, pointer: str = "file:///m/0.json") -> bool:
    return swap(local, PointerSwap(namespace, name, None, pointer))


def test_namespaces_keep_their_properties_without_the_exists_marker(local: LocalBackend) -> None:
    asyncio.run(local.create_namespaces([("a", {}), ("b", {"owner": "bi"})]))
    assert asyncio.run(local.load_namespace("a")) == {}
    assert asyncio.run(local.load_namespace("b")) == {"owner": "bi"}
    assert asyncio.run(local.update_namespace("b", ["owner"], {"team": "x"})) == {"owner": "bi"}
    assert asyncio.run(local.load_namespace("b")) == {"team": "x"}
    assert asyncio.run(local.update_namespace("b", ["team"], {})) == {"team": "x"}
    assert asyncio.run(local.namespace_exists("b"))  # with no property left, it still exists


def test_creating_namespaces_is_all_or_nothing(local: LocalBackend) -> None:
    asyncio.run(local.create_namespaces([("b", {})]))
    with pytest.raises(AlreadyExists):
        asyncio.run(local.create_namespaces([("a", {}), ("b", {})]))
    assert not asyncio.run(local.namespace_exists("a"))


def test_concurrent_creates_of_one_namespace_make_it_once(local: LocalBackend) -> None:
    async def race() -> list[object]:
        creates = (local.create_namespaces([("a", {"n": str(i)})]) for i in range(4))
        return list(await asyncio.gather(*creates, return_exceptions=True))

    outcomes = asyncio.run(race())
    assert outcomes.count(None) == 1
    assert all(isinstance(o, AlreadyExists) for o in outcomes if o is not None)


def test_missing_namespaces_are_refused_and_a_namespace_with_tables_is_not_dropped(local: LocalBackend) -> None:
    for call in (local.load_namespace("x"), local.update_namespace("x", [], {}), local.drop_namespace("x")):
        with pytest.raises(NoSuchNamespace):
            asyncio.run(call)
    with pytest.raises(NoSuchNamespace):
        asyncio.run(local.list_tables("x", None, 10))
    asyncio.run(local.create_namespaces([("a", {})]))
    assert asyncio.run(local.list_tables("a", None, 10)).names == []
    create(local, "a", "t")
    with pytest.raises(NamespaceNotEmpty):
        asyncio.run(local.drop_namespace("a"))
    asyncio.run(local.drop_table_pointer("a", "t"))
    asyncio.run(local.drop_namespace("a"))
    assert not asyncio.run(local.namespace_exists("a"))


def test_a_namespace_holding_only_tables_exists_as_jdbc_catalogs_write_it(local: LocalBackend) -> None:
    create(local, "implied", "t")
    assert asyncio.run(local.namespace_exists("implied"))
    assert asyncio.run(local.load_namespace("implied")) == {}
    assert asyncio.run(local.list_namespaces("", None, 10)).names == ["implied"]


def test_namespaces_are_listed_by_literal_prefix_in_keyset_pages(local: LocalBackend) -> None:
    asyncio.run(local.create_namespaces([(n, {}) for n in ("a_b", "a_b:c", "axb", "a_b:d", "z")]))
    assert asyncio.run(local.list_namespaces("a_b:", None, 10)).names == ["a_b:c", "a_b:d"]
    assert asyncio.run(local.list_namespaces("a_", None, 10)).names == ["a_b", "a_b:c", "a_b:d"]  # not axb
    first = asyncio.run(local.list_namespaces("", None, 2))
    assert first.names == ["a_b", "a_b:c"] and first.next_token == "a_b:c"
    rest = asyncio.run(local.list_namespaces("", first.next_token, 10))
    assert (rest.names, rest.next_token) == (["a_b:d", "axb", "z"], None)


def test_tables_are_listed_in_keyset_pages(local: LocalBackend) -> None:
    for name in ("c", "a", "b"):
        create(local, "ns", name)
    first = asyncio.run(local.list_tables("ns", None, 2))
    assert (first.names, first.next_token) == (["a", "b"], "b")
    assert asyncio.run(local.list_tables("ns", "b", 2)).names == ["c"]
    exact = asyncio.run(local.list_tables("ns", None, 3))
    assert (exact.names, exact.next_token) == (["a", "b", "c"], None)


ODD_NAMES = [
    "plain",
    'quo"te',
    "back\\slash",
    "[1,2]",
    "null",
    "caf\u00e9",
    "cafe\u0301",
    "\U0001f600x",
    "Zed",
    "a b",
    "\u00ff",
    "~",
]


def test_pages_of_odd_names_are_whole_unique_and_in_the_databases_order(local: LocalBackend, database_url: str) -> None:
    """On SQLite a page is read as one JSON array (``LocalBackend._names``): every name must come back as stored,
    in SQLite's order (code points), and the keyset pages must join up without a gap or a repeat."""
    for name in ODD_NAMES:
        create(local, "odd", name)
        asyncio.run(local.create_namespaces([(f"odd:{name}", {})]))
    for listing in (lambda t: local.list_tables("odd", t, 3), lambda t: local.list_namespaces("odd:", t, 3)):
        names: list[str] = []
        token = None
        while True:
            page = asyncio.run(listing(token))
            names += page.names
            if page.next_token is None:
                break
            token = page.next_token
        stripped = [n.removeprefix("odd:") for n in names]
        assert sorted(stripped) == sorted(ODD_NAMES) and len(set(stripped)) == len(ODD_NAMES)
        if database_url.startswith("sqlite"):
            assert stripped == sorted(ODD_NAMES)


def _foreign_catalog_db(path: Path, name_collation: str = "", encoding: str = "UTF-8") -> str:
    """A ``catalog.db`` whose tables another tool made (pyiceberg's columns, its own collation and encoding)."""
    with sqlite3.connect(path) as con:
        con.execute(f"PRAGMA encoding = '{encoding}'")
        con.execute(
            "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT NULL,"
            f" table_name VARCHAR(255) {name_collation} NOT NULL, metadata_location VARCHAR(1000),"
            " previous_metadata_location VARCHAR(1000), iceberg_type VARCHAR(5),"
            " PRIMARY KEY (catalog_name, table_namespace, table_name))"
        )
        con.execute(
            "CREATE TABLE iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL,"
            f" namespace VARCHAR(255) {name_collation} NOT NULL, property_key VARCHAR(255) NOT NULL,"
            " property_value VARCHAR(1000), PRIMARY KEY (catalog_name, namespace, property_key))"
        )
    con.close()
    return f"sqlite:///{path}"


def _all_pages(listing: Callable[[str | None], Listing]) -> list[str]:
    names: list[str] = []
    token = None
    for _ in range(100):
        page = listing(token)
        names += page.names
        if page.next_token is None:
            return names
        token = page.next_token
    raise AssertionError(f"no last page: {names}")


def test_pages_join_up_in_a_foreign_catalog_db_whose_names_sort_without_case(tmp_path: Path) -> None:
    """A page read as one JSON array is sorted again in Python (code points): the page and its token must be cut in
    that order too, not the column's declared one. With ``COLLATE NOCASE`` read in SQLite's order, ``B a c D e``
    paged by 2 came back ``[B, a]``, ``[B, D]``, ``[e]``: ``B`` twice and never ``c``."""
    url = _foreign_catalog_db(tmp_path / "catalog.db", "COLLATE NOCASE")
    names = ["B", "a", "c", "D", "e", "Ab", "aC"]
    with sqlite3.connect(tmp_path / "catalog.db") as con:
        for name in names:
            con.execute("INSERT INTO iceberg_tables VALUES ('c', 'ns', ?, 'file:///m', NULL, 'TABLE')", (name,))
            con.execute("INSERT INTO iceberg_namespace_properties VALUES ('c', ?, 'exists', 'true')", (f"p:{name}",))
    con.close()
    backend = LocalBackend("c", (tmp_path / "wh").as_uri(), url, ThreadRunner(2))
    try:
        for size in (1, 2, 3):
            tables = _all_pages(lambda t: asyncio.run(backend.list_tables("ns", t, size)))
            spaces = _all_pages(lambda t: asyncio.run(backend.list_namespaces("p:", t, size)))
            assert tables == sorted(names), size
            assert [n.removeprefix("p:") for n in spaces] == sorted(names), size
    finally:
        asyncio.run(backend.close())


def test_pages_join_up_in_a_foreign_catalog_db_in_utf_16(tmp_path: Path) -> None:
    """SQLite's BINARY collation compares the database's own bytes: in UTF-16, ``\u0101`` (01 01) sorts before
    ``a`` (61 00), unlike code points. The page read as JSON is then out of Python's order and is read again row
    by row in SQLite's: re-sorted in Python, pages by 2 went ``a, \u0100x, a, b, c, d`` (``\u0101`` never)."""
    url = _foreign_catalog_db(tmp_path / "catalog.db", encoding="UTF-16le")
    names = ["\u0101", "b", "a", "c", "\u0100x", "d"]
    with sqlite3.connect(tmp_path / "catalog.db") as con:
        for name in names:
            con.execute("INSERT INTO iceberg_tables VALUES ('c', 'ns', ?, 'file:///m', NULL, 'TABLE')", (name,))
    con.close()
    backend = LocalBackend("c", (tmp_path / "wh").as_uri(), url, ThreadRunner(2))
    try:
        for size in (1, 2, 3, 10):
            tables = _all_pages(lambda t: asyncio.run(backend.list_tables("ns", t, size)))
            assert sorted(tables) == sorted(names) and len(tables) == len(names), (size, tables)
    finally:
        asyncio.run(backend.close())


def test_a_name_another_tool_wrote_as_a_blob_is_left_out_of_listings(tmp_path: Path) -> None:
    """JSON holds no BLOB: one such row made every listing of its namespace (and the namespace listing) a 503
    "Catalog database is unavailable" (a Java client retries a 503); it is no name a client can ask for."""
    url = _foreign_catalog_db(tmp_path / "catalog.db")
    with sqlite3.connect(tmp_path / "catalog.db") as con:
        for name in ("a", b"\xff\x00", "b"):
            con.execute("INSERT INTO iceberg_tables VALUES ('c', 'ns', ?, 'file:///m', NULL, 'TABLE')", (name,))
        con.execute("INSERT INTO iceberg_tables VALUES ('c', ?, 't', 'file:///m', NULL, 'TABLE')", (b"ns2",))
    con.close()
    backend = LocalBackend("c", (tmp_path / "wh").as_uri(), url, ThreadRunner(2))
    try:
        assert asyncio.run(backend.list_tables("ns", None, 10)) == Listing(["a", "b"], None)
        assert _all_pages(lambda t: asyncio.run(backend.list_tables("ns", t, 1))) == ["a", "b"]
        assert asyncio.run(backend.list_namespaces("", None, 10)) == Listing(["ns"], None)
    finally:
        asyncio.run(backend.close())


def test_a_pointer_moves_only_from_the_expected_location(local: LocalBackend) -> None:
    assert create(local, "ns", "t")
    assert not create(local, "ns", "t", "file:///m/other.json")  # exists: a lost swap, not an error
    assert not swap(local, PointerSwap("ns", "t", "file:///m/stale.json", "file:///m/1.json"))
    assert swap(local, PointerSwap("ns", "t", "file:///m/0.json", "file:///m/1.json"))
    assert asyncio.run(local.load_table_pointer("ns", "t")) == "file:///m/1.json"
    assert not swap(local, PointerSwap("ns", "missing", "file:///m/0.json", "file:///m/1.json"))


def test_several_swaps_land_together_or_not_at_all(local: LocalBackend) -> None:
    create(local, "ns", "a", "file:///a/0.json")
    create(local, "ns", "b", "file:///b/0.json")
    stale_b = [
        PointerSwap("ns", "a", "file:///a/0.json", "file:///a/1.json"),
        PointerSwap("ns", "b", "file:///b/stale.json", "file:///b/1.json"),
        PointerSwap("ns", "new", None, "file:///new/0.json"),
    ]
    assert not swap(local, *stale_b)
    assert asyncio.run(local.load_table_pointer("ns", "a")) == "file:///a/0.json"
    assert asyncio.run(local.load_table_pointer("ns", "new")) is None
    both = [
        PointerSwap("ns", "a", "file:///a/0.json", "file:///a/1.json"),
        PointerSwap("ns", "b", "file:///b/0.json", "file:///b/1.json"),
    ]
    assert swap(local, *both)
    assert asyncio.run(local.load_table_pointer("ns", "b")) == "file:///b/1.json"


def test_concurrent_swaps_from_one_pointer_let_exactly_one_land(local: LocalBackend) -> None:
    create(local, "ns", "t")

    async def race() -> list[bool]:
        swaps = (
            local.swap_table_pointers([PointerSwap("ns", "t", "file:///m/0.json", f"file:///m/{i}.next")])
            for i in range(6)
        )
        return list(await asyncio.gather(*swaps))

    outcomes = asyncio.run(race())
    assert outcomes.count(True) == 1
    assert asyncio.run(local.load_table_pointer("ns", "t")) == f"file:///m/{outcomes.index(True)}.next"


def test_a_drop_answers_with_the_last_pointer_and_a_second_drop_is_no_such_table(local: LocalBackend) -> None:
    create(local, "ns", "t")
    swap(local, PointerSwap("ns", "t", "file:///m/0.json", "file:///m/1.json"))

    async def race() -> list[object]:
        return list(
            await asyncio.gather(*(local.drop_table_pointer("ns", "t") for _ in range(3)), return_exceptions=True)
        )

    outcomes = asyncio.run(race())
    dropped = [o for o in outcomes if not isinstance(o, BaseException)]
    assert [d.metadata_location for d in dropped] == ["file:///m/1.json"]  # type: ignore[attr-defined]
    assert sum(isinstance(o, NoSuchTable) for o in outcomes) == 2
    assert asyncio.run(local.load_table_pointer("ns", "t")) is None


def test_rename_moves_the_pointer_and_refuses_a_taken_name(local: LocalBackend) -> None:
    create(local, "ns", "a", "file:///a.json")
    create(local, "ns", "b", "file:///b.json")
    with pytest.raises(AlreadyExists):
        asyncio.run(local.rename_table("ns", "a", "ns", "b"))
    asyncio.run(local.rename_table("ns", "a", "other", "c"))
    assert asyncio.run(local.load_table_pointer("other", "c")) == "file:///a.json"
    with pytest.raises(NoSuchTable):
        asyncio.run(local.rename_table("ns", "a", "ns", "d"))


def test_views_in_the_catalog_tables_are_not_tables(local: LocalBackend, database_url: str) -> None:
    engine = catalog_engine(database_url)
    with engine.begin() as conn:
        conn.execute(
            sa.insert(TABLES).values(
                catalog_name=local._name, table_namespace="ns", table_name="v",
                metadata_location="file:///v.json", iceberg_type="VIEW",
            )
        )  # fmt: skip
    engine.dispose()
    create(local, "ns", "t")
    assert asyncio.run(local.load_table_pointer("ns", "v")) is None
    assert asyncio.run(local.list_tables("ns", None, 10)).names == ["t"]
    with pytest.raises(NoSuchTable):
        asyncio.run(local.drop_table_pointer("ns", "v"))


def test_catalogs_sharing_a_database_do_not_see_each_other(
    local: LocalBackend, database_url: str, tmp_path: Path
) -> None:
    other = LocalBackend(f"o_{uuid.uuid4().hex[:8]}", (tmp_path / "o").as_uri(), database_url, ThreadRunner(2))
    try:
        asyncio.run(local.create_namespaces([("ns", {})]))
        create(local, "ns", "t")
        assert not asyncio.run(other.namespace_exists("ns"))
        assert asyncio.run(other.load_table_pointer("ns", "t")) is None
        asyncio.run(other.create_namespaces([("ns", {})]))  # the same name in another catalog
    finally:
        asyncio.run(other.close())


def test_catalog_tables_of_an_older_pyiceberg_are_upgraded_only_when_asked(tmp_path: Path) -> None:
    engine = catalog_engine(f"sqlite:///{tmp_path / 'old.db'}")
    assert ensure_catalog_tables(engine, upgrade=False) == "created"
    assert ensure_catalog_tables(engine, upgrade=False) == ""
    with engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE iceberg_tables DROP COLUMN iceberg_type"))
    with pytest.raises(StartupError, match="run `irc-proxy db upgrade`"):
        ensure_catalog_tables(engine, upgrade=False)
    assert ensure_catalog_tables(engine, upgrade=True) == "upgraded"
    assert ensure_catalog_tables(engine, upgrade=False) == ""
    engine.dispose()


def test_postgresql_urls_get_a_connect_timeout_unless_they_set_one() -> None:
    assert _with_connect_timeout("postgresql+psycopg://u:p@h/db") == "postgresql+psycopg://u:p@h/db?connect_timeout=5"
    assert (
        _with_connect_timeout("postgresql+psycopg://h/db?connect_timeout=1")
        == "postgresql+psycopg://h/db?connect_timeout=1"
    )
    assert _with_connect_timeout("sqlite:///x.db") == "sqlite:///x.db"
