"""The access log's columns hold against a client that chooses its method and path, and its lines are bounded.

hypercorn speaks HTTP/2 on the plain port to a client that opens with the HTTP/2 preface (h2c, "prior
knowledge"), and HTTP/2 lets ``:method`` and ``:path`` carry spaces, which no HTTP/1.1 request line can: a path
``/v1/config 200 0.1ms`` printed raw forged the status and time columns of its own line. The attacker here
speaks h2c to a real ``irc-proxy serve`` (``tests/support/h2c.py``) and the operator reads its text log.

The last test writes the access log to a full non-blocking pipe, as a log collector that stopped reading leaves
it: the line that could not be written must come out once, not twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from irc_proxy.logs import configure_logging, info
from irc_proxy.text import UNSAFE
from tests.support.h2c import h2c_request
from tests.support.server import ProxyProcess, Serve

_COLUMN = re.compile(r'"(?:[^"\\]|\\.)*"|[^\s"]+')
"""One column of a text log line: a plain token or a JSON-quoted string."""


@pytest.fixture(scope="module")
def proxy(serve: Serve) -> ProxyProcess:
    return serve('[catalogs.local]\nkind = "local"\n', "access-log")


def access_columns(proxy: ProxyProcess, request_id: str) -> list[str]:
    """The columns after ``irc_proxy.access`` of the one access line of ``request_id`` (JSON-quoted ones decoded)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        lines = [line for line in proxy.log().splitlines() if f"id={request_id}" in line and "irc_proxy.access" in line]
        if lines:
            assert len(lines) == 1, lines
            assert UNSAFE.search(lines[0]) is None
            message = lines[0].split(" irc_proxy.access ", 1)[1]
            columns = _COLUMN.findall(message)
            assert " ".join(columns) == message, f"not all columns: {message!r}"
            return [json.loads(column) if column.startswith('"') else column for column in columns]
        time.sleep(0.05)
    raise AssertionError(f"no access line for {request_id}")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        (b"GET", b"/v1/config 200 0.1ms id=forged"),  # was: GET /v1/config 200 0.1ms id=forged 404 …
        (b"GET /v1/config 200", b"/healthz"),  # hypercorn upper-cases the method, spaces and all
        (b"GET", b'/v1/"quoted" \\ path\x0b\x1b[2J'),
    ],
)
def test_an_h2c_method_or_path_with_spaces_is_one_column_each(proxy: ProxyProcess, method: bytes, path: bytes) -> None:
    request_id = secrets.token_hex(8)
    answer = h2c_request(proxy.port, method, path, [(b"x-request-id", request_id.encode())])
    assert answer.status in (404, 405), answer
    shown_method, shown_path, status, took, shown_id = access_columns(proxy, request_id)
    assert (shown_method, shown_path) == (method.decode().upper(), path.decode("latin-1"))
    assert (status, shown_id) == (str(answer.status), f"id={request_id}")
    assert re.fullmatch(r"\d+\.\dms", took)


def test_a_long_path_is_cut_at_1024_characters(proxy: ProxyProcess) -> None:
    request_id = secrets.token_hex(8)
    path = "/v1/" + "a" * 20_000
    answer = h2c_request(proxy.port, b"GET", path.encode(), [(b"x-request-id", request_id.encode())])
    assert answer.status == 404
    _, shown_path, status, _, _ = access_columns(proxy, request_id)  # was: the whole path on every line
    assert shown_path == path[:1024] + f"...({len(path) - 1024} more)"
    assert status == "404"


def test_a_long_path_is_masked_before_it_is_cut(proxy: ProxyProcess) -> None:
    """A URL's password cut in half would no longer look like one to the masking of the whole line."""
    request_id = secrets.token_hex(8)
    path = "/v1/" + "a" * 1000 + "/https://user:pa55w0rd-never-logged@host/x" + "b" * 100
    h2c_request(proxy.port, b"GET", path.encode(), [(b"x-request-id", request_id.encode())])
    _, shown_path, _, _, _ = access_columns(proxy, request_id)
    assert shown_path.startswith("/v1/" + "a" * 1000 + "/https://user:***@")
    assert "pa55" not in proxy.log()


@pytest.fixture
def full_pipe() -> Iterator[tuple[int, io.TextIOWrapper]]:
    """A non-blocking pipe that is full (its reader stopped reading) and a text stream writing into it."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    fcntl.fcntl(write, 1031, 4096)  # F_SETPIPE_SZ: one page, quick to fill
    stream = io.TextIOWrapper(io.BufferedWriter(io.FileIO(write, "w")), encoding="utf-8")
    with pytest.raises(BlockingIOError):
        while True:
            os.write(write, b"x" * 4096)
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        yield read, stream
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        os.close(read)
        with contextlib.suppress(OSError):
            stream.close()


def test_an_access_line_that_could_not_be_written_is_not_written_twice(
    full_pipe: tuple[int, io.TextIOWrapper], capsys: pytest.CaptureFixture[str]
) -> None:
    read, stream = full_pipe
    configure_logging("info", "text")
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    info(logging.getLogger("irc_proxy.access"), "%s %s %d", "GET", "/v1/once", 200)
    assert "--- Logging error ---" in capsys.readouterr().err  # reported as logging reports a failed write
    drained = _drain(read)  # the reader catches up: what the stream kept comes out now
    stream.flush()
    drained += _drain(read)
    assert drained.count(b"GET /v1/once 200") == 1  # was 2: logging's own write after the failed one


def _drain(read: int) -> bytes:
    os.set_blocking(read, False)
    chunks = []
    try:
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    return b"".join(chunks)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_a_path_of_scheme_characters_costs_no_quadratic_masking(proxy: ProxyProcess) -> None:
    """``/v1/://a.a.a.…``: every ``a`` after a dot starts a word that the URL pattern's scheme part scanned to the
    end of the run, looking for ``://``. A 60 KB HTTP/2 path from an anonymous client held the event loop ~3.4 s
    (everyone's requests waited) while its access line was masked before being cut; now ~0.1 s."""
    request_id = secrets.token_hex(8)
    path = "/v1/://" + "a." * 30_000
    before = _cpu_seconds(proxy.pid)
    answer = h2c_request(proxy.port, b"GET", path.encode(), [(b"x-request-id", request_id.encode())])
    assert answer.status == 404
    _, shown_path, _, _, _ = access_columns(proxy, request_id)
    assert shown_path.startswith("/v1/://a.a.") and shown_path.endswith(f"...({len(path) - 1024} more)")
    assert _cpu_seconds(proxy.pid) - before < 1.0
