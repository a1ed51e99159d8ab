"""The table and namespace operations over the in-memory backend: filtered listings, the audit note,
and commits parsed where the caller's offload runs them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from irc_proxy.app import read_limits
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.operations import namespace_ops, table_ops
from irc_proxy.handling.paging import PageRequest
from irc_proxy.handling.security.authz import Grant, Grants, Privilege, Securable, SecurableType
from irc_proxy.handling.security.context import RequestContext
from irc_proxy.handling.tables.tables import TableCreate
from irc_proxy.settings import ServerSettings
from irc_proxy.threads import ThreadRunner
from tests.support.change_bodies import Change, Ident, Transaction
from tests.support.memory_backend import MemoryBackend

R = TypeVar("R")
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


class NoLimits:
    def check(self, updates: Sequence[Any], requirements: int) -> None:
        return None


@dataclass
class Inline:
    """An offload that runs the work where it is and counts it."""

    runs: int = 0

    async def __call__(self, work: Callable[[], R]) -> R:
        self.runs += 1
        return work()


def _catalog(tmp_path: Path) -> Catalog:
    backend = MemoryBackend((tmp_path / "warehouse").as_uri())
    limits = read_limits(ServerSettings())
    return Catalog.build(
        "mem", backend, ":", ThreadRunner(2), allowed_locations=[backend.warehouse], read_limits=limits
    )


def _filtered(*grants: tuple[Privilege, Securable]) -> RequestContext:
    """A caller whose listing the authorization step decided to filter."""
    context = RequestContext(request_id="r", list_filtered=True)
    context.grants = Grants(Grant("r", securable, privilege) for privilege, securable in grants)
    return context


async def _tables(catalog: Catalog, *idents: TableIdent) -> None:
    for ident in idents:
        await catalog.tables.create(ident.namespace, TableCreate(ident.name, SCHEMA))


def test_a_filtered_listing_shows_only_what_the_caller_holds_grants_on(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    seen = Securable(SecurableType.TABLE, "mem", ("a",), "seen")
    context = _filtered((Privilege.TABLE_READ, seen))

    async def work() -> tuple[list[Any], list[Any]]:
        await namespace_ops.create_namespace(RequestContext(request_id="c"), catalog, ("a",), {})
        await namespace_ops.create_namespace(RequestContext(request_id="c"), catalog, ("b",), {})
        await _tables(catalog, TableIdent(("a",), "seen"), TableIdent(("a",), "hidden"))
        tables = await table_ops.list_tables(context, catalog, ("a",), PageRequest())
        namespaces = await namespace_ops.list_namespaces(context, catalog, (), PageRequest())
        return tables.items, namespaces.items

    assert asyncio.run(work()) == ([TableIdent(("a",), "seen")], [("a",)])


def test_a_commit_is_parsed_by_the_offload_and_a_transaction_names_its_tables(tmp_path: Path) -> None:
    catalog, offload, context = _catalog(tmp_path), Inline(), RequestContext(request_id="r")
    set_k = {"action": "set-properties", "updates": {"k": "v"}}

    async def work() -> dict[str, str]:
        await namespace_ops.create_namespace(context, catalog, ("a",), {})
        await _tables(catalog, TableIdent(("a",), "t"), TableIdent(("a",), "u"))
        await table_ops.commit_table(catalog, TableIdent(("a",), "t"), Change(updates=[set_k]), NoLimits(), offload)
        both = Transaction([Change(Ident(["a"], "t"), [], [set_k]), Change(Ident(["a"], "u"), [], [set_k])])
        await table_ops.commit_transaction(context, catalog, both, NoLimits(), offload)
        return dict((await catalog.tables.load(TableIdent(("a",), "u"))).metadata.properties)

    assert asyncio.run(work())["k"] == "v"
    assert offload.runs == 2 and context.audit.object == "a.t, a.u"


def test_a_rename_names_both_tables_for_the_audit(tmp_path: Path) -> None:
    catalog, context = _catalog(tmp_path), RequestContext(request_id="r")

    async def work() -> None:
        await namespace_ops.create_namespace(context, catalog, ("a", "b"), {})
        await _tables(catalog, TableIdent(("a", "b"), "t"))
        await table_ops.rename_table(context, catalog, Ident(["a", "b"], "t"), Ident(["a"], "t2"))
        await table_ops.table_exists(catalog, TableIdent(("a",), "t2"))

    asyncio.run(work())
    assert context.audit.object == "a.b.t, a.t2"
