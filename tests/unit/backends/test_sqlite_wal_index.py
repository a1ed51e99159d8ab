"""The SQLite pointer cache's change look (the ``-shm`` wal-index header): exact against other processes.

Real SQLite files, a real writer process (a bare sqlite3 connection, as pyiceberg's SqlCatalog would be),
real checkpoints; a hostile process scribbling on the ``-shm`` costs cache misses, never a stale pointer.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from pathlib import Path

from irc_proxy.backends.base import PointerSwap
from irc_proxy.backends.local import LocalBackend
from irc_proxy.threads import ThreadRunner

WRITER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
for line in sys.stdin:
    verb, arg = line.split()
    if verb == "commit":
        db.execute("UPDATE iceberg_tables SET metadata_location = ? WHERE table_name = 't'", (arg,))
    elif verb == "checkpoint":
        db.execute(f"PRAGMA wal_checkpoint({arg})").fetchall()
    elif verb == "scribble":  # a hostile local process: garbage over the wal-index header
        with open(sys.argv[1] + "-shm", "r+b") as shm:
            shm.seek(int(arg)); shm.write(bytes(range(7, 103)))
    elif verb == "tear":  # the first header copy put back as it was: what a torn read would show
        with open(sys.argv[1] + "-shm", "r+b") as shm:
            shm.write(bytes.fromhex(arg))
    print("ok", flush=True)
"""


class Writer:
    """Another process on the same file, driven line by line (each answer: its work is done)."""

    def __init__(self, database: Path) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(database)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def do(self, verb: str, arg: str) -> None:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(f"{verb} {arg}\n")
        self._process.stdin.flush()
        assert self._process.stdout.readline() == "ok\n"

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(10)


def run(tmp_path: Path, steps: list[tuple[str, str]]) -> tuple[int, int]:
    """Play ``steps`` against a backend with a pointer cache; every read must see the last commit.
    Returns (reads answered by the wal-index header, reads in all)."""
    database = tmp_path / "catalog.db"

    async def scenario() -> tuple[int, int]:
        local = LocalBackend("local", (tmp_path / "wh").as_uri(), f"sqlite:///{database}", ThreadRunner(2))
        writer = Writer(database)
        try:
            await local.create_namespaces([("ns", {})])
            await local.swap_table_pointers([PointerSwap("ns", "t", None, "file:///m/start.json")])
            assert local._wal_index is not None and local._wal_index.header() is not None
            truth, reads, by_header = "file:///m/start.json", 0, 0
            for verb, arg in steps:
                if verb == "read":
                    reads += 1
                    by_header += local._wal_index.header() is not None
                    assert await local.load_table_pointer("ns", "t") == truth, (reads, verb, arg)
                    continue
                if verb == "tear":  # a commit, then the first header copy as it was before it
                    before = local._wal_index.header()
                    assert before is not None
                    writer.do("commit", arg)
                    truth = arg
                    writer.do("tear", before.hex())
                    continue
                writer.do(verb, arg)
                if verb == "commit":
                    truth = arg
            return by_header, reads
        finally:
            writer.close()
            await local.close()

    return asyncio.run(scenario())


def test_another_process_commit_is_seen_by_the_next_cached_read(tmp_path: Path) -> None:
    steps = [("read", ""), ("read", ""), ("commit", "file:///m/1.json"), ("read", ""), ("read", "")]
    by_header, reads = run(tmp_path, steps)
    assert (by_header, reads) == (4, 4)


def test_random_commits_checkpoints_and_reads_never_serve_a_stale_pointer(tmp_path: Path) -> None:
    chance = random.Random(29)
    steps: list[tuple[str, str]] = []
    for n in range(1000):
        roll = chance.random()
        if roll < 0.3:
            steps.append(("commit", f"file:///m/{n}.json"))
        elif roll < 0.45:
            steps.append(("checkpoint", chance.choice(["PASSIVE", "FULL", "RESTART", "TRUNCATE"])))
        else:
            steps.append(("read", ""))
    by_header, reads = run(tmp_path, steps)
    assert by_header == reads > 400


def test_garbage_in_the_shm_costs_a_miss_never_a_stale_pointer(tmp_path: Path) -> None:
    """Both header copies made different (offset 0) or made equal-looking garbage (offset 48 copies only
    the second): each read then goes to SQLite's own look, and commits after the garbage are still seen."""
    steps: list[tuple[str, str]] = [("read", "")]
    for offset in ("0", "48", "0", "20"):
        steps += [("scribble", offset), ("read", ""), ("read", ""), ("commit", f"file:///m/{offset}.json")]
        steps += [("read", ""), ("checkpoint", "TRUNCATE"), ("read", ""), ("commit", f"file:///m/x{offset}.json")]
        steps += [("read", "")]
    run(tmp_path, steps)


def test_header_copies_that_differ_are_not_trusted(tmp_path: Path) -> None:
    """After a commit, the first copy shows the header from before it (a torn read, or a hostile writer):
    the copies differ, SQLite's own look runs (and recovers the index), the commit is seen."""
    steps = [("read", ""), ("read", ""), ("tear", "file:///m/1.json"), ("read", ""), ("read", "")]
    steps += [("commit", "file:///m/2.json"), ("read", "")]
    run(tmp_path, steps)


def test_no_wal_index_for_a_database_not_in_wal_mode(tmp_path: Path) -> None:
    import sqlite3

    from irc_proxy.backends.sqlite_wal_index import WalIndex

    database = str(tmp_path / "plain.db")
    connection = sqlite3.connect(database)
    try:
        connection.execute("CREATE TABLE t (x)")
        assert WalIndex.open(connection, database) is None
        connection.execute("PRAGMA journal_mode=WAL")
        index = WalIndex.open(connection, database)
        assert index is not None and index.header() is not None
        index.close()
        assert index.header() is None
        assert not os.path.exists(database + "-nothing")
    finally:
        connection.close()
