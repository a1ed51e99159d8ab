"""The handling layer's table and namespace semantics over the in-memory backend (no database,
no server): what every backend gets from ``irc_proxy.handling``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from irc_proxy.app import read_limits
from irc_proxy.errors import AlreadyExists, CommitFailed, NamespaceNotEmpty, NoSuchTable, Unsupported
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.paging import PageRequest
from irc_proxy.handling.tables import commits
from irc_proxy.handling.tables.tables import TableChange, TableCreate
from irc_proxy.settings import ServerSettings
from irc_proxy.threads import ThreadRunner
from tests.support.memory_backend import MemoryBackend

T = TypeVar("T")
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def _catalog(tmp_path: Path, multi_table: bool = True) -> tuple[Catalog, MemoryBackend]:
    backend = MemoryBackend((tmp_path / "warehouse").as_uri(), multi_table)
    limits = read_limits(ServerSettings())
    return Catalog.build(
        "mem", backend, ":", ThreadRunner(4), allowed_locations=[backend.warehouse], read_limits=limits
    ), backend


def _run(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(work())


def _set(ident: TableIdent, key: str, value: str, *requirements: dict[str, object]) -> TableChange:
    updates = commits.parse_updates([{"action": "set-properties", "updates": {key: value}}])
    return TableChange(ident, commits.parse_requirements(list(requirements)), updates)


def test_nested_namespaces_map_onto_flat_names_and_create_missing_parents(tmp_path: Path) -> None:
    catalog, backend = _catalog(tmp_path)

    async def work() -> list[tuple[str, ...]]:
        await catalog.namespaces.create(("a", "b", "c"), {"k": "v"})
        return (await catalog.namespaces.list(("a",), PageRequest())).items

    assert _run(work) == [("a", "b")]
    assert set(backend.namespaces) == {"a", "a:b", "a:b:c"}


def test_create_load_commit_and_a_stale_requirement_is_a_conflict(tmp_path: Path) -> None:
    catalog, backend = _catalog(tmp_path)
    ident = TableIdent(("db",), "t")

    async def work() -> None:
        await catalog.namespaces.create(("db",), {})
        created = await catalog.tables.create(("db",), TableCreate("t", SCHEMA))
        uuid = str(created.metadata.table_uuid)
        committed = await catalog.tables.commit(_set(ident, "k", "1", {"type": "assert-table-uuid", "uuid": uuid}))
        assert committed.metadata.properties["k"] == "1"
        assert backend.pointers[("db", "t")] == committed.metadata_location
        stale = {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 99}
        with pytest.raises(CommitFailed):
            await catalog.tables.commit(_set(ident, "k", "2", stale))
        assert (await catalog.tables.load(ident)).metadata.properties["k"] == "1"

    _run(work)


def test_a_transaction_is_all_or_nothing_and_refused_without_atomic_commits(tmp_path: Path) -> None:
    for multi_table in (True, False):
        catalog, backend = _catalog(tmp_path / str(multi_table), multi_table)
        a, b = TableIdent(("db",), "a"), TableIdent(("db",), "b")

        async def work() -> None:
            await catalog.namespaces.create(("db",), {})
            for name in ("a", "b"):
                await catalog.tables.create(("db",), TableCreate(name, SCHEMA))
            before = dict(backend.pointers)
            stale = {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 99}
            with pytest.raises(CommitFailed if multi_table else Unsupported):
                await catalog.tables.commit_transaction([_set(a, "k", "1"), _set(b, "k", "1", stale)])
            assert backend.pointers == before

        _run(work)


def test_rename_and_drop_move_the_pointer_and_a_namespace_with_tables_is_not_empty(tmp_path: Path) -> None:
    catalog, backend = _catalog(tmp_path)

    async def work() -> None:
        await catalog.namespaces.create(("db",), {})
        await catalog.tables.create(("db",), TableCreate("t", SCHEMA))
        with pytest.raises(NamespaceNotEmpty):
            await catalog.namespaces.drop(("db",))
        await catalog.tables.rename(TableIdent(("db",), "t"), TableIdent(("db",), "u"))
        with pytest.raises(AlreadyExists):
            await catalog.tables.create(("db",), TableCreate("u", SCHEMA))
        await catalog.tables.drop(TableIdent(("db",), "u"), purge=False)
        with pytest.raises(NoSuchTable):
            await catalog.tables.load(TableIdent(("db",), "u"))
        await catalog.namespaces.drop(("db",))

    _run(work)
    assert backend.pointers == {} and backend.namespaces == {}
