"""The change feed forgets replicas it has not heard for a lease: restarts (a new replica id each) and
forged origins do not accumulate for the process's lifetime."""

from __future__ import annotations

import time

from irc_proxy.backends.pointer_feed import LEASE_SECONDS, PointerFeed


def test_replicas_not_heard_for_a_lease_are_forgotten() -> None:
    feed = PointerFeed("postgresql+psycopg://nobody@127.0.0.1:1/none")
    for i in range(1000):
        feed._receive({"k": "s", "r": f"gone-{i}", "n": 1})
    feed._receive({"k": "s", "r": "alive", "n": 1})
    assert len(feed._members) == 1001
    feed._forget_departed(time.monotonic())
    assert len(feed._members) == 1001  # all heard within the lease: still members
    feed._members = {m: seen - LEASE_SECONDS for m, seen in feed._members.items()} | {"alive": time.monotonic()}
    feed._forget_departed(time.monotonic())
    assert set(feed._members) == {"alive"}
