"""The write timeout for HTTP/2 answers: a stream whose client takes none of its answer for ``write_timeout`` is reset.

Why: ``read_timeout.TimedReadTCPServer`` enforces the write timeout where the transport's buffer waits for the
client, but an h2 answer waits before that, in hypercorn's per-stream ``StreamBuffer``, for the client's
flow-control window. A client that keeps its window shut (``SETTINGS_INITIAL_WINDOW_SIZE`` 0) never fills the
transport, and a PING now and then keeps the read timeout away: each of its connections held 100 app tasks and their
answers (h2's concurrency limit) for as long as it liked (50 such connections asking ``/healthz``: +125 MB in the
worker). :class:`TakenStreamBuffer` notes when its client last took a byte (or when bytes began to wait); the
connection's timer (``TimedReadTCPServer._check_h2``) resets a stream whose bytes have waited ``write_timeout``
with none taken, as hypercorn handles a stream the client resets: the app is told of the disconnect and its
``send`` returns. A client that takes bytes, however slowly, is never cut (the h1 write timeout's rule).
"""

from __future__ import annotations

import contextlib
import time

import h2.errors
import h2.exceptions
from hypercorn.protocol import h2 as hypercorn_h2
from hypercorn.protocol.h2 import H2Protocol, StreamBuffer
from hypercorn.typing import Event as IOEvent


class TakenStreamBuffer(StreamBuffer):
    """hypercorn's ``StreamBuffer`` that notes ``waiting_since``: when its client last took a byte of the answer,
    or when bytes began to wait in an empty buffer (an app slow to answer is not the client's doing)."""

    def __init__(self, event_class: type[IOEvent]) -> None:
        super().__init__(event_class)
        self.waiting_since = time.monotonic()

    async def push(self, data: bytes) -> None:
        if not self.buffer:
            self.waiting_since = time.monotonic()
        await super().push(data)

    async def pop(self, max_length: int) -> bytes:
        data = await super().pop(max_length)
        if data:
            self.waiting_since = time.monotonic()
        return data


def stalled(protocol: H2Protocol, timeout: float) -> list[int]:
    """The streams whose answer has bytes that waited ``timeout`` seconds with none taken by the client."""
    now = time.monotonic()
    return [
        stream_id
        for stream_id, buffer in protocol.stream_buffers.items()
        if buffer.buffer and now - getattr(buffer, "waiting_since", now) >= timeout
    ]


async def reset(protocol: H2Protocol, stream_ids: list[int]) -> None:
    """Reset the streams, as hypercorn handles a reset from the client (``H2Protocol._handle_events``): the stream
    closes (its app sees the disconnect), the buffer is closed (the app's ``send`` returns) and the sender drops
    it."""
    for stream_id in stream_ids:
        with contextlib.suppress(h2.exceptions.ProtocolError):  # the stream closed meanwhile
            protocol.connection.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
        await protocol._close_stream(stream_id)
        buffer = protocol.stream_buffers.get(stream_id)
        if buffer is not None:
            await buffer.close()
        await protocol._window_updated(stream_id)
    await protocol._flush()


def install() -> None:
    """Make hypercorn's h2 protocol build :class:`TakenStreamBuffer` buffers (``read_timeout.install`` calls this
    only for the hypercorn version it was checked against)."""
    hypercorn_h2.StreamBuffer = TakenStreamBuffer  # type: ignore[misc]  # a module name, not a constant
