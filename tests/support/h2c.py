"""One HTTP/2 request without TLS (h2c, "prior knowledge") over a raw socket, with any pseudo-headers.

Why: hypercorn serves HTTP/2 on a plain port to a client that starts with the HTTP/2 preface, and HTTP/2 lets
``:method`` and ``:path`` carry what no HTTP/1.1 request line can (spaces, ``"``), and header values carry
control characters that HTTP/1.1 parsers refuse (vertical tab, form feed). httpx cannot send them (it
validates and speaks h2 only over TLS), so tests that attack the server this way use ``h2`` itself, with its
outbound checks off.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import NamedTuple

import h2.config
import h2.connection
import h2.events


class H2Answer(NamedTuple):
    status: int
    headers: dict[bytes, bytes]
    body: bytes


def h2c_request(
    port: int,
    method: bytes,
    path: bytes,
    headers: Sequence[tuple[bytes, bytes]] = (),
    body: bytes = b"",
    timeout: float = 30.0,
) -> H2Answer:
    """Send one request to ``127.0.0.1:port`` as given (no normalisation, no validation) and read its answer."""
    config = h2.config.H2Configuration(
        client_side=True, header_encoding=None, validate_outbound_headers=False, normalize_outbound_headers=False
    )
    connection = h2.connection.H2Connection(config=config)
    connection.initiate_connection()
    sent = [(b":method", method), (b":scheme", b"http"), (b":authority", b"127.0.0.1"), (b":path", path)]
    sent += list(headers)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        stream = connection.get_next_available_stream_id()
        connection.send_headers(stream, sent, end_stream=not body)
        if body:
            connection.send_data(stream, body, end_stream=True)
        sock.sendall(connection.data_to_send())
        status, answer_headers, chunks = 0, {}, []
        while True:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection before the answer ended")
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                    answer_headers = {bytes(k): bytes(v) for k, v in event.headers}
                    status = int(answer_headers.pop(b":status"))
                elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream:
                    chunks.append(event.data)
                    connection.acknowledge_received_data(event.flow_controlled_length, stream)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                    return H2Answer(status, answer_headers, b"".join(chunks))
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                    raise ConnectionError(f"the server reset the stream ({event.error_code!r})")
                elif isinstance(event, h2.events.ConnectionTerminated):
                    raise ConnectionError(f"the server ended the connection ({event.error_code!r})")
            sock.sendall(connection.data_to_send())
