"""A real HTTP endpoint in front of moto's Glue that can misbehave the way real Glue does.

It forwards every Glue request (JSON protocol: ``POST /`` with ``X-Amz-Target: AWSGlue.<Operation>``)
to the moto server and relays the answer, except that, per operation, it can:

* ``throttle``: answer ``400 {"__type": "ThrottlingException"}`` without forwarding;
* ``delay``: forward (so moto applies the change) and hold a successful reply back for N seconds;
* ``enforce_version_id``: refuse an ``UpdateTable`` whose ``VersionId`` is stale with
  ``ConcurrentModificationException``, as real Glue does and moto does not;
* ``paginate``: honour ``MaxResults`` (1..100, else ``InvalidInputException``) and ``NextToken`` on
  ``GetTables``/``GetDatabases`` as real Glue does (moto returns everything in one page).

Every request's operation and JSON body is recorded in ``calls``.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from tests.support.aws import client

GLUE_MAX_RESULTS = 100
_LIST_KEYS = {"GetTables": "TableList", "GetDatabases": "DatabaseList"}
_HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "keep-alive"}


class FakeGlue:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.throttle: set[str] = set()
        self.delay: dict[str, float] = {}
        self.enforce_version_id = False
        self.paginate = False
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._update_lock = threading.Lock()
        self._http = httpx.Client(timeout=60)
        self._glue = client("glue", upstream)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> FakeGlue:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()

    def reset(self) -> None:
        """Forward everything faithfully again and forget the recorded calls."""
        self.throttle = set()
        self.delay = {}
        self.enforce_version_id = False
        self.paginate = False
        with self._lock:
            self.calls.clear()

    def count(self, operation: str) -> int:
        with self._lock:
            return sum(1 for op, _ in self.calls if op == operation)

    def bodies(self, operation: str) -> list[dict[str, Any]]:
        with self._lock:
            return [body for op, body in self.calls if op == operation]

    # The HTTP side --------------------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                status, reply_headers, content = fake._answer(self.headers.get("X-Amz-Target", ""), raw, headers)
                try:
                    self.send_response(status)
                    for key, value in reply_headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(content)))
                    self.end_headers()
                    self.wfile.write(content)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a read timeout): that is the point of ``delay``

        return Handler

    def _answer(self, target: str, raw: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        operation = target.rsplit(".", 1)[-1]
        body: dict[str, Any] = json.loads(raw or b"{}")
        with self._lock:
            self.calls.append((operation, body))
        if operation in self.throttle:
            return _error(400, "ThrottlingException", "Rate exceeded")
        if self.paginate and operation in _LIST_KEYS:
            max_results = body.get("MaxResults", GLUE_MAX_RESULTS)
            if not 1 <= max_results <= GLUE_MAX_RESULTS:
                return _error(400, "InvalidInputException", f"MaxResults must be 1..{GLUE_MAX_RESULTS}")
        if operation == "UpdateTable" and self.enforce_version_id:
            with self._update_lock:  # check-and-forward as one step, like Glue's own compare-and-swap
                current = self._glue.get_table(DatabaseName=body["DatabaseName"], Name=body["TableInput"]["Name"])
                if body.get("VersionId") and body["VersionId"] != current["Table"].get("VersionId"):
                    return _error(400, "ConcurrentModificationException", "Update table failed due to concurrency")
                reply = self._forward(raw, headers)
        else:
            reply = self._forward(raw, headers)
        if self.paginate and operation in _LIST_KEYS and reply[0] == 200:
            reply = _page(reply, _LIST_KEYS[operation], body)
        if operation in self.delay and reply[0] == 200:  # the change landed; its acknowledgement is late
            time.sleep(self.delay[operation])
        return reply

    def _forward(self, raw: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        response = self._http.post(self.upstream + "/", content=raw, headers=headers)
        kept = {k: v for k, v in response.headers.items() if k.lower() in ("content-type", "x-amzn-requestid")}
        return response.status_code, kept, response.content


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    content = json.dumps({"__type": code, "message": message}).encode()
    return status, {"Content-Type": "application/x-amz-json-1.1"}, content


def _page(
    reply: tuple[int, dict[str, str], bytes], key: str, request: dict[str, Any]
) -> tuple[int, dict[str, str], bytes]:
    status, headers, content = reply
    listing = json.loads(content)
    entries = listing.get(key, [])
    start = int(base64.b64decode(request["NextToken"]).decode()) if request.get("NextToken") else 0
    end = start + request.get("MaxResults", GLUE_MAX_RESULTS)
    listing[key] = entries[start:end]
    listing.pop("NextToken", None)
    if end < len(entries):
        listing["NextToken"] = base64.b64encode(str(end).encode()).decode()
    return status, headers, json.dumps(listing).encode()


@contextmanager
def fake_glue(upstream: str) -> Iterator[FakeGlue]:
    fake = FakeGlue(upstream).start()
    try:
        yield fake
    finally:
        fake.stop()
