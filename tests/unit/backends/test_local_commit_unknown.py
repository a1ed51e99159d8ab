"""A pointer swap whose COMMIT lost the database connection (CommitStateUnknown) may have landed: its change
notification then reached the other replicas, and the client is about to reload the table to learn whether
it landed (Iceberg clients do, and delete the new metadata when it looks absent). So the swap still waits
until the other replicas dropped the old pointer (``settle``), as a landed one does: a replica answering
the old pointer from its cache would make the client delete the table's current metadata."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Connection

from irc_proxy.backends.base import PointerSwap
from irc_proxy.backends.local import LocalBackend
from irc_proxy.backends.pointer_feed import LEASE_SECONDS
from irc_proxy.errors import CommitStateUnknown
from irc_proxy.threads import ThreadRunner
from tests.support.postgres import scratch_database

pytestmark = pytest.mark.postgres


class _LostAtCommit(LocalBackend):
    """The transaction commits, then the connection is reported lost (what a COMMIT cut short looks like)."""

    lose = False

    def _swap_transaction(self, fn: Callable[[Connection], None]) -> None:
        super()._swap_transaction(fn)
        if self.lose:
            raise CommitStateUnknown("lost while committing")


def test_a_swap_of_unknown_outcome_waits_for_the_other_replicas_like_a_landed_one(tmp_path: Path) -> None:
    async def scenario(url: str) -> float:
        backend = _LostAtCommit("local", tmp_path.as_uri(), url, ThreadRunner(2))
        try:
            await backend.create_namespaces([("ns", {})])
            assert await backend.swap_table_pointers([PointerSwap("ns", "t", None, "file:///m1.json")])
            await backend.load_table_pointer("ns", "t")  # starts the feed
            await asyncio.sleep(LEASE_SECONDS + 0.3)  # it knows who listens
            feed = backend._pointers._feed
            assert feed is not None
            feed._members["a-replica-that-has-not-acked-yet"] = time.monotonic()
            backend.lose = True
            started = time.monotonic()
            with pytest.raises(CommitStateUnknown):
                await backend.swap_table_pointers([PointerSwap("ns", "t", "file:///m1.json", "file:///m2.json")])
            return time.monotonic() - started
        finally:
            await backend.close()

    with scratch_database() as url:
        took = asyncio.run(scenario(url))
    assert took >= LEASE_SECONDS * 0.8, f"answered after {took:.3f} s, before the other replica dropped its cache"
