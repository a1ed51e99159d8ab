"""A remote REST catalog stand-in that records every request and answers as a test scripts it, byte for byte.

``/v1/config`` is answered with the prefix ``p``; any other request with ``remote.reply(writer)`` (or, for a path
under a prefix given to ``replying``, that reply), which writes a whole answer as raw bytes (a cookie that is not
ASCII, a run of ``1xx`` answers, a body one byte at a time). The default is a 200 with a small loadTable body.
Each request is kept as ``Seen`` (method, the path exactly as it arrived, the headers, the body) in
``remote.seen``.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase
from typing import NamedTuple

LOADED = json.dumps({"metadata-location": "s3://b/t/metadata/1.json", "metadata": {}}).encode()
Reply = Callable[[BufferedIOBase], object]


class Seen(NamedTuple):
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes


def answer(body: bytes = LOADED, *headers: bytes, status: bytes = b"200 OK") -> bytes:
    """A whole HTTP/1.1 answer with ``Content-Length``; each of ``headers`` a raw ``name: value`` line."""
    head = [b"HTTP/1.1 " + status, b"content-type: application/json", b"content-length: %d" % len(body), *headers]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def raw(data: bytes) -> Reply:
    """A reply that writes ``data`` as it is."""
    return lambda out: out.write(data)


def drip(length: int, every: float) -> Reply:
    """A 200 of ``length`` bytes, one byte every ``every`` seconds (until the reader hangs up)."""

    def write(out: BufferedIOBase) -> None:
        with contextlib.suppress(OSError):
            out.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % length)
            out.flush()
            for _ in range(length):
                time.sleep(every)
                out.write(b" ")
                out.flush()

    return write


class HostileRemote:
    """The stand-in (see the module docstring), serving on ``url`` from a thread."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.reply: Reply = raw(answer())
        self.routes: dict[str, Reply] = {}
        remote = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                remote.seen.append(Seen(self.command, self.path, list(self.headers.items()), body))
                routed = [reply for under, reply in remote.routes.items() if self.path.startswith(under)]
                if routed:
                    routed[0](self.wfile)
                elif self.path.startswith("/v1/config"):
                    self.wfile.write(answer(b'{"overrides": {"prefix": "p"}}'))
                else:
                    remote.reply(self.wfile)
                self.wfile.flush()

            do_GET = do_POST = do_DELETE = do_HEAD = _any  # http.server's names

            def log_message(self, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a reader that hung up on a drip

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def forwarded(self) -> list[Seen]:
        """What reached the remote besides ``/v1/config``."""
        return [seen for seen in self.seen if not seen.path.startswith("/v1/config")]

    @contextmanager
    def replying(self, reply: Reply, under: str | None = None) -> Iterator[None]:
        """Answer with ``reply`` inside (only paths starting with ``under``, if given), as before afterwards."""
        if under is None:
            self.reply = reply
        else:
            self.routes[under] = reply
        try:
            yield
        finally:
            if under is None:
                self.reply = raw(answer())
            else:
                del self.routes[under]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
