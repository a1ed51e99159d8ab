"""A real HTTP endpoint in front of moto's STS that records every AssumeRole and can throttle.

STS speaks the query protocol (``POST /`` with a form body ``Action=AssumeRole&RoleArn=...&Policy=...``).
Each request's parsed parameters are recorded in ``calls`` (so tests can read the exact session policy
the proxy sent; moto does not enforce session policies). ``throttle_next = N`` answers the next N
requests with STS's ``Throttling`` error instead of forwarding them; ``delay`` holds each answer back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

import httpx

# Host is kept: it is part of the SigV4 signature, which moto checks when its IAM enforcement is on.
_HOP_HEADERS = {"content-length", "connection", "transfer-encoding", "keep-alive"}
_THROTTLED = (
    b'<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>'
    b"<Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>fake</RequestId></ErrorResponse>"
)


class FakeSts:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.throttle_next = 0
        self.delay = 0.0
        self.calls: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._http = httpx.Client(timeout=60)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> FakeSts:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.throttle_next = 0
            self.delay = 0.0

    def assume_role_calls(self) -> list[dict[str, str]]:
        with self._lock:
            return [call for call in self.calls if call.get("Action") == "AssumeRole"]

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                status, reply_headers, content = fake._answer(raw, headers)
                self.send_response(status)
                for key, value in reply_headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

        return Handler

    def _answer(self, raw: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        params = dict(parse_qsl(raw.decode(), keep_blank_values=True))
        with self._lock:
            self.calls.append(params)
            throttled = self.throttle_next > 0
            if throttled:
                self.throttle_next -= 1
        if throttled:
            return 400, {"Content-Type": "text/xml"}, _THROTTLED
        if self.delay:
            time.sleep(self.delay)
        response = self._http.post(self.upstream + "/", content=raw, headers=headers)
        kept = {k: v for k, v in response.headers.items() if k.lower() in ("content-type", "x-amzn-requestid")}
        return response.status_code, kept, response.content


@contextmanager
def fake_sts(upstream: str) -> Iterator[FakeSts]:
    fake = FakeSts(upstream).start()
    try:
        yield fake
    finally:
        fake.stop()
