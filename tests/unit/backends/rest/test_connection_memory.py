"""The answer read on ``wire``'s plain path is held at most twice at the peak (the bytes as they arrived, then the
body), as on h11's path: a hostile remote's answer of ``max_response_mb`` costs no more than that."""

from __future__ import annotations

import asyncio
import tracemalloc

from irc_proxy.backends.rest.connection import Connection

SIZE = 32 << 20


async def _peak() -> float:
    """One answer of SIZE bytes over a real socket; the peak memory traced while reading it, over SIZE."""
    body = b"x" * SIZE

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % SIZE)
        writer.write(body)
        await writer.drain()
        await reader.read()  # until the client hangs up
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = await Connection.open("127.0.0.1", port, None, 5)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        received = await connection.exchange(b"GET", b"/", [(b"host", b"h")], b"", 10, 1 << 30)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
        connection.close()
        server.close()
    assert received.body == body
    return peak / SIZE


def test_a_large_answer_is_held_at_most_twice() -> None:
    """Before: the chunks joined, then the body sliced out of the join: three times the answer at the peak."""
    assert asyncio.run(_peak()) < 2.5
