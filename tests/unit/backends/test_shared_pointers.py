"""The Glue pointer cache folds names to lower case, as Glue does: a commit or drop through one spelling of
a name drops the pointer cached under another."""

from __future__ import annotations

import asyncio

from irc_proxy.backends.pointer_cache import Peers
from irc_proxy.backends.shared_pointers import SharedPointers


def test_a_move_of_t_drops_the_pointer_cached_as_capital_t() -> None:
    pointers = SharedPointers("glue", ttl=3600, peers=Peers())
    loads: list[str] = []

    async def load() -> str | None:
        loads.append("x")
        return f"loc-{len(loads)}"

    async def scenario() -> list[str | None]:
        first = await pointers.read(("Db", "T"), load)
        cached = await pointers.read(("Db", "T"), load)
        async with pointers.moving([("db", "t")]):
            pass
        after = await pointers.read(("Db", "T"), load)
        pointers.heard([("db", "t")])
        return [first, cached, after, await pointers.read(("DB", "t"), load)]

    assert asyncio.run(scenario()) == ["loc-1", "loc-1", "loc-2", "loc-3"]
