"""Hostile review of the request pipeline (``Edge`` + ``Gate``, the lean 304) on a served proxy (``oauth2``):
a reader, a writer and an anonymous client over real sockets, raw HTTP/1.x where a client library would tidy up
what an attacker sends. Each test is an attack that worked on the merged pipeline, or a bound it must keep.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.support.console import root_config
from tests.support.rest import assert_error, create_table, make_principal, token_of
from tests.support.server import ProxyProcess

ROOT_SECRET = "root-secret-for-attack-gate"
BODY_LIMIT = 100_000


@dataclass(frozen=True)
class Setup:
    server: ProxyProcess
    root: httpx.Client
    root_token: str
    reader_token: str
    """Holds ``table.read`` on ``open`` only, nothing on ``secret_ns``."""
    secret_table: str

    def raw(self, head: bytes, body: bytes = b"", timeout: float = 5.0) -> tuple[int, bytes]:
        """Send ``head`` (request line and headers, no blank line) and ``body`` as they are; (status, body)."""
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=timeout) as sock:
            sock.sendall(head + b"Connection: close\r\n\r\n" + body)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        status_line, _, rest = answer.partition(b"\r\n")
        return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]

    def audit_rows(self, request_id: str) -> list[dict[str, Any]]:
        engine = sa.create_engine(f"sqlite:///{self.server.workdir / 'data' / 'state.db'}")
        try:
            with engine.connect() as conn:
                rows = conn.execute(sa.text("select * from audit_record where request_id = :r"), {"r": request_id})
                return [dict(row._mapping) for row in rows]
        finally:
            engine.dispose()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    workdir = tmp_path_factory.mktemp("attack-gate")
    warehouse = workdir / "warehouse"
    warehouse.mkdir()
    extra = f"[server]\nmax_body_bytes = {BODY_LIMIT}\n"
    extra += f'[catalogs.local]\nkind = "local"\nwarehouse = "{warehouse.as_uri()}"\n'
    server = ProxyProcess(workdir, root_config(ROOT_SECRET, extra)).start()
    with ExitStack() as stack:
        stack.callback(server.stop)
        anonymous = stack.enter_context(httpx.Client(base_url=server.url, timeout=60))
        root_token = token_of(anonymous, "root", ROOT_SECRET)
        root = stack.enter_context(
            httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {root_token}"})
        )
        for namespace in ("secret_ns", "open"):
            assert root.post("/v1/local/namespaces", json={"namespace": [namespace]}).status_code == 200
        create_table(root, ("secret_ns",), "t")
        client_id, secret = make_principal(root, "gate-reader", {"privilege": "table.read", "namespace": ["open"]})
        reader_token = token_of(anonymous, client_id, secret)
        yield Setup(server, root, root_token, reader_token, "/v1/local/namespaces/secret_ns/tables/t")


def _get(path: str, *headers: bytes) -> bytes:
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(h + b"\r\n" for h in headers)


# Two Authorization headers ------------------------------------------------------------------------------------
def test_two_authorization_headers_are_refused_not_read_as_the_last(setup: Setup) -> None:
    """The Gate's one header scan keeps the last ``Authorization`` while Starlette's ``Headers.get`` (and the
    pipeline before the merge) reads the first: a request carrying a reader's token then root's was served as root
    (200 on a table the reader may not read), and anything reading the header the other way would see the reader.
    A singleton field sent twice is refused (400), in either order, before any token work."""
    reader, root = (f"Authorization: Bearer {t}".encode() for t in (setup.reader_token, setup.root_token))
    for first, second in ((reader, root), (root, reader)):
        status, body = setup.raw(_get(setup.secret_table, first, second))
        assert status == 400, body[:300]
        assert json.loads(body)["error"]["type"] == "BadRequestException"
    assert setup.raw(_get(setup.secret_table, root))[0] == 200
    assert setup.raw(_get(setup.secret_table, reader))[0] == 403


# The lean 304 -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tag", ["*", "etag"])
def test_a_304_is_answered_only_after_authorization(setup: Setup, tag: str) -> None:
    """The lean 304 skips Starlette's parsing, not the authorization step: a reader without ``table.read`` who
    sends ``If-None-Match: *`` (or the table's real ETag, learned elsewhere) gets 403, an anonymous caller 401."""
    etag = setup.root.get(setup.secret_table).headers["etag"] if tag == "etag" else "*"
    match = f"If-None-Match: {etag}".encode()
    status, _ = setup.raw(_get(setup.secret_table, match, f"Authorization: Bearer {setup.reader_token}".encode()))
    assert status == 403
    assert setup.raw(_get(setup.secret_table, match))[0] == 401
    assert setup.raw(_get(setup.secret_table, match, f"Authorization: Bearer {setup.root_token}".encode()))[0] == 304


# Lone surrogates: a 500 and a lost audit batch ----------------------------------------------------------------
def test_a_lone_surrogate_in_a_body_is_a_400_and_keeps_the_audit_trail(setup: Setup) -> None:
    """``{"namespace": ["\\ud800"]}`` is valid JSON that Python decodes to a str no UTF-8 encoder takes: the create
    failed deep in the backend (a 500), and its audit record made the database sink drop the whole batch it was in
    (``UnicodeEncodeError``), so the records of everyone's requests in the same ~0.1 s vanished: a writer could
    hide what it (or anyone) did just before. Now the body is a 400 and every record of the batch is stored."""
    ids = [uuid.uuid4().hex for _ in range(3)]
    hidden = setup.root.get("/v1/local/namespaces", headers={"X-Request-Id": ids[0]})
    assert hidden.status_code == 200
    body = b'{"namespace": ["\\ud800"]}'
    answer = setup.root.post(
        "/v1/local/namespaces", content=body, headers={"Content-Type": "application/json", "X-Request-Id": ids[1]}
    )
    assert_error(answer, 400, "BadRequestException", "lone UTF-16 surrogate")
    pair = setup.root.post(  # a valid pair (what Java's and Python's encoders send for non-BMP text) still works
        "/v1/local/namespaces",
        content=b'{"namespace": ["emoji_\\ud83d\\ude00"]}',
        headers={"Content-Type": "application/json", "X-Request-Id": ids[2]},
    )
    assert pair.status_code == 200, pair.text
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(setup.audit_rows(i) for i in ids):
        time.sleep(0.2)
    assert [len(setup.audit_rows(i)) for i in ids] == [1, 1, 1]
    assert "Traceback" not in setup.server.log_path.read_text(encoding="utf-8", errors="replace")


# What held: kept as guards ------------------------------------------------------------------------------------
def test_the_body_limit_holds_for_chunked_http10_and_bodies_on_get(setup: Setup) -> None:
    """A chunked POST over the limit (HTTP/1.1 or 1.0) is a 413 without being read whole; a GET carrying a
    chunked body is answered and its body drained, not buffered; HTTP/1.0 without a length carries no body."""
    token = f"Authorization: Bearer {setup.root_token}\r\nContent-Type: application/json\r\n".encode()
    piece = b"x" * 50_000
    chunked = (b"%x\r\n" % len(piece) + piece + b"\r\n") * 4 + b"0\r\n\r\n"
    for version in (b"1.1", b"1.0"):
        head = b"POST /v1/local/namespaces HTTP/" + version + b"\r\nHost: 127.0.0.1\r\n" + token
        status, body = setup.raw(head + b"Transfer-Encoding: chunked\r\n", chunked)
        assert status == 413, body[:200]
    head = b"GET /v1/local/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\n" + token + b"Transfer-Encoding: chunked\r\n"
    assert setup.raw(head, chunked)[0] == 200
    head = b"POST /v1/local/namespaces HTTP/1.0\r\nHost: 127.0.0.1\r\n" + token
    assert setup.raw(head, b'{"namespace": ["http10"]}')[0] == 400  # no length: an empty body, not JSON


def test_two_hosts_and_two_content_lengths_never_reach_the_app(setup: Setup) -> None:
    """The guard reads the last ``Host`` and the base URL the first: the server (h11) refuses both duplicates."""
    token = f"Authorization: Bearer {setup.root_token}".encode()
    status, _ = setup.raw(
        b"GET /v1/local/namespaces HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1\r\n" + token + b"\r\n"
    )
    assert status == 400
    head = b"POST /v1/local/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 0\r\n"
    assert setup.raw(head, b"{}   ")[0] == 400


@pytest.mark.parametrize(
    "path",
    ["//v1/local/namespaces", "/healthz/../v1/local/namespaces", "/v1/oauth/token%73", "/metrics/../v1/config"],
)
def test_open_path_lookalikes_still_need_a_token(setup: Setup, path: str) -> None:
    assert setup.raw(_get(path))[0] == 401
