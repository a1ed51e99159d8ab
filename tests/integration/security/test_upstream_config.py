"""A remote catalog's LoadTableResult ``config`` as an attacker writes it (a real front proxy over a socket; the
remote is a small HTTP stand-in answering what a hostile or compromised catalog could).

The proxy builds a FileIO from what the remote answered to read the table's files itself (the console's
preview, scan planning). pyiceberg's ``load_file_io`` imports and calls any class named by ``py-io-impl``
with the properties as its one argument: ``subprocess.Popen`` runs the properties' keys as a command line.
Before the proxy dropped class-naming keys (``*-impl``) from a remote's config and storage credentials,
opening the table's preview ran the remote's command on the proxy's machine.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from tests.support.federation import rest_catalog, start_front

_METADATA = {
    "format-version": 2,
    "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
    "location": "file:///nowhere/a/t",
    "last-sequence-number": 0,
    "last-updated-ms": 1700000000000,
    "last-column-id": 1,
    "current-schema-id": 0,
    "schemas": [
        {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "type": "long", "required": False}]}
    ],
    "default-spec-id": 0,
    "partition-specs": [{"spec-id": 0, "fields": []}],
    "last-partition-id": 999,
    "default-sort-order-id": 0,
    "sort-orders": [{"order-id": 0, "fields": []}],
    "properties": {},
    "snapshots": [],
    "snapshot-log": [],
    "metadata-log": [],
    "refs": {},
}


def _hostile_remote(marker: Path) -> ThreadingHTTPServer:
    config = {"touch": "", str(marker): "", "py-io-impl": "subprocess.Popen"}  # Popen(dict): its keys are argv
    answers = {
        # The catalog's defaults name classes too (Java's io-impl, pyiceberg's py-io-impl): the proxy's own reads
        # never build a FileIO from them (they pass through to the front's clients, like every forwarded answer).
        "/v1/config": {"defaults": config | {"io-impl": "java.lang.ProcessBuilder"}, "overrides": {}},
        "table": {"metadata-location": "file:///nowhere/a/t/metadata/1.json", "metadata": _METADATA, "config": config},
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's name for a GET
            body = answers["table"] if "/tables/" in self.path else answers.get(self.path.split("?")[0])
            data = json.dumps(body if body is not None else {"error": {"message": "no", "type": "X", "code": 404}})
            self.send_response(200 if body is not None else 404)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(data.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_remote_catalogs_config_cannot_make_the_proxy_import_and_call_a_class(tmp_path: Path) -> None:
    marker = tmp_path / "the-remote-ran-a-command-here"
    remote = _hostile_remote(marker)
    (tmp_path / "front").mkdir()
    url = f"http://127.0.0.1:{remote.server_address[1]}"
    front = start_front(tmp_path / "front", rest_catalog("fed", url, auth={"mode": "none"}))
    try:
        with httpx.Client(base_url=front.url, timeout=60) as browser:
            page = browser.get("/ui/catalogs/fed/namespaces/a/tables/t/preview")
        assert page.status_code == 200, page.text
        assert "no snapshot" in page.text
        assert not marker.exists(), "the proxy ran the remote's command"
    finally:
        front.stop()
        remote.shutdown()
