"""Local backend pointer reads: on SQLite they run on the event loop and fall back to the thread pool."""

from __future__ import annotations

import asyncio
from pathlib import Path

from irc_proxy.backends.base import PointerSwap
from irc_proxy.backends.local import LocalBackend
from irc_proxy.threads import ThreadRunner


def backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend("local", (tmp_path / "wh").as_uri(), f"sqlite:///{tmp_path / 'catalog.db'}", ThreadRunner(2))


def test_pointer_reads_see_every_swap_and_survive_a_broken_fast_connection(tmp_path: Path) -> None:
    async def scenario() -> list[str | None]:
        local = backend(tmp_path)
        try:
            await local.create_namespaces([("ns", {})])
            seen = [await local.load_table_pointer("ns", "t")]
            await local.swap_table_pointers([PointerSwap("ns", "t", None, "file:///m/0.json")])
            seen.append(await local.load_table_pointer("ns", "t"))
            await local.swap_table_pointers([PointerSwap("ns", "t", "file:///m/0.json", "file:///m/1.json")])
            seen.append(await local.load_table_pointer("ns", "t"))
            assert local._fast_reads is not None
            local._fast_reads.close()  # every fast read now raises: the thread pool answers instead
            await local.swap_table_pointers([PointerSwap("ns", "t", "file:///m/1.json", "file:///m/2.json")])
            seen.append(await local.load_table_pointer("ns", "t"))
            return seen
        finally:
            await local.close()

    assert asyncio.run(scenario()) == [None, "file:///m/0.json", "file:///m/1.json", "file:///m/2.json"]


def test_in_memory_sqlite_has_no_fast_reader() -> None:
    local = LocalBackend("local", "file:///tmp/wh", "sqlite://", ThreadRunner(2))
    try:
        assert local._fast_reads is None
    finally:
        asyncio.run(local.close())


def test_a_sqlite_commit_by_another_process_is_seen_by_the_next_cached_read(tmp_path: Path) -> None:
    """Several ``hypercorn`` workers on one SQLite file are separate processes: SQLite's ``data_version``
    tells each one's cache that another committed. Here the other process is a bare sqlite3 writer."""
    import subprocess
    import sys

    from irc_proxy.metrics import POINTER_CACHE_HITS

    hits = POINTER_CACHE_HITS.labels("local")

    async def scenario() -> list[str | None]:
        local = backend(tmp_path)
        try:
            await local.create_namespaces([("ns", {})])
            await local.swap_table_pointers([PointerSwap("ns", "t", None, "file:///m/0.json")])
            seen = [await local.load_table_pointer("ns", "t") for _ in range(3)]
            before = hits.get()
            seen.append(await local.load_table_pointer("ns", "t"))
            assert hits.get() == before + 1  # warm: answered from the cache
            writer = (
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                "c.execute(\"UPDATE iceberg_tables SET metadata_location='file:///m/1.json'\"); c.commit()"
            )
            subprocess.run([sys.executable, "-c", writer, str(tmp_path / "catalog.db")], check=True)
            seen.append(await local.load_table_pointer("ns", "t"))
            return seen
        finally:
            await local.close()

    assert asyncio.run(scenario())[-2:] == ["file:///m/0.json", "file:///m/1.json"]
