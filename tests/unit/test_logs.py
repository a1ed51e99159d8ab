"""Every log record is one line the proxy wrote: a client's text cannot start another or drive a terminal."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import io
import json
import logging
import logging.handlers
import os
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, cast
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irc_proxy.log_format import REQUEST_ID, TEXT_FORMAT, JsonFormatter, MaskingFormatter, RequestIdFilter
from irc_proxy.logs import (
    ATOMIC_WRITE_BYTES,
    LINGER_SECONDS,
    PENDING_LINES,
    atomic_write_ends,
    column,
    configure_logging,
    flush_logs,
    info,
)
from irc_proxy.text import UNSAFE, field

FORGED = "x\n2026-01-01 00:00:00,000 INFO [-] irc_proxy.access GET /v1/forged 200\x1b[2J\x85\u2028\u202e"


def record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError(FORGED)
        except ValueError:
            info = sys.exc_info()
    made = logging.LogRecord("irc_proxy.test", logging.ERROR, __file__, 1, message, args, info)
    RequestIdFilter().filter(made)
    return made


def test_a_text_line_escapes_the_message_and_indents_the_traceback() -> None:
    text = MaskingFormatter(TEXT_FORMAT).format(record("refused %s", FORGED, exc=True))
    first, *rest = text.split("\n")
    assert UNSAFE.search(text.replace("\n", "")) is None
    assert first.endswith(
        "refused x\\n2026-01-01 00:00:00,000 INFO [-] irc_proxy.access GET /v1/forged 200\\x1b[2J\\x85\\u2028\\u202e"
    )
    assert rest and all(line.startswith("  ") for line in rest)


def test_a_request_id_with_spaces_is_one_quoted_column() -> None:
    token = REQUEST_ID.set("a] irc_proxy.access GET /v1/forged")
    try:
        text = MaskingFormatter(TEXT_FORMAT).format(record("hello"))
    finally:
        REQUEST_ID.reset(token)
    assert '["a] irc_proxy.access GET /v1/forged"] irc_proxy.test hello' in text


def test_a_json_line_is_one_line_and_keeps_the_message() -> None:
    line = JsonFormatter().format(record("refused %s", FORGED, exc=True))
    assert "\n" not in line and UNSAFE.search(line) is None
    assert json.loads(line)["message"] == f"refused {FORGED}"


def test_the_time_of_a_text_line_is_the_standard_formatters_in_every_second() -> None:
    # The formatter keeps the last second it formatted: records within it, across its boundary and back agree
    # with logging's own formatter.
    ours, standard = MaskingFormatter(TEXT_FORMAT), logging.Formatter(TEXT_FORMAT)
    made = record("tick")
    for created in (1_790_000_000.001, 1_790_000_000.999, 1_790_000_001.0, 1_790_000_000.5, 1_790_003_600.25):
        made.created, made.msecs = created, int((created - int(created)) * 1000)
        assert ours.formatTime(made) == standard.formatTime(made)
        assert ours.formatTime(made, "%H:%M") == standard.formatTime(made, "%H:%M")


# The access log's own lane (``logs.info``): the same bytes as logging's, and logging itself whenever the set-up
# is not the one ``configure_logging`` made.
ACCESS = "%s %s %d %.1fms id=%s%s"
ACCESS_ARGS = ("GET", "/v1/x?u=https://u:pw@h/p?token=s3cret", 200, 1.25, "id-1", f" client={FORGED}")


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], io.StringIO]]:
    """``configure_logging`` writing to a buffer, at a fixed moment; logging's set-up restored afterwards."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.getLogRecordFactory()
    monkeypatch.setattr(time, "time", lambda: 1_790_000_000.25)

    def configure(log_format: str) -> io.StringIO:
        configure_logging("info", log_format)  # type: ignore[arg-type]
        buffer = io.StringIO()
        cast(logging.StreamHandler[Any], root.handlers[0]).setStream(buffer)
        return buffer

    yield configure
    root.handlers[:], _, factory = saved
    root.setLevel(saved[1])
    logging.setLogRecordFactory(factory)


# What ``http.middleware`` passes for a client that chose its method and path (over h2c): spaces, quotes, escapes, a
# URL with a password past the cut.
HOSTILE_ARGS = (
    column("GET /v1/config 200", 32),
    column('/v1/x 200 0.1ms "q" \\ \x0b' + "p" * 1010 + "/https://u:pw@h/p?token=s3cret", 1024),
    404,
    0.5,
    field("id 1"),
    "",
)


@pytest.mark.parametrize("args", [ACCESS_ARGS, HOSTILE_ARGS], ids=["plain", "hostile"])
@pytest.mark.parametrize("log_format", ["text", "json"])
def test_the_access_lane_writes_what_logging_writes(
    configured: Callable[[str], io.StringIO], log_format: str, args: tuple[object, ...]
) -> None:
    buffer = configured(log_format)
    access = logging.getLogger("irc_proxy.access")
    token = REQUEST_ID.set("rid 1")
    try:
        info(access, ACCESS, *args)
        access.info(ACCESS, *args)
    finally:
        REQUEST_ID.reset(token)
    fast, standard = buffer.getvalue().splitlines()
    assert fast == standard
    assert "s3cret" not in fast and ":pw@" not in fast and UNSAFE.search(fast) is None


def test_the_access_lane_yields_to_any_other_set_up(configured: Callable[[str], io.StringIO]) -> None:
    buffer = configured("text")
    access = logging.getLogger("irc_proxy.access")
    root_handler = logging.getLogger().handlers[0]

    # A handler of the user's own on the access logger gets the record (and ours too, through propagation).
    mine = logging.handlers.BufferingHandler(10)
    access.addHandler(mine)
    try:
        info(access, ACCESS, *ACCESS_ARGS)
    finally:
        access.removeHandler(mine)
    assert [record.args for record in mine.buffer] == [ACCESS_ARGS]
    assert buffer.getvalue().count("\n") == 1

    # A filter on our handler is asked, and may drop the line.
    dropped = logging.Filter("nobody")
    root_handler.addFilter(dropped)
    info(access, ACCESS, *ACCESS_ARGS)
    root_handler.removeFilter(dropped)
    assert buffer.getvalue().count("\n") == 1

    # Another formatter is used.
    root_handler.setFormatter(logging.Formatter("custom %(message)s"))
    info(access, ACCESS, "GET", "/v1/x", 200, 1.25, "id-1", "")
    assert buffer.getvalue().splitlines()[-1] == "custom GET /v1/x 200 1.2ms id=id-1"

    # A raised level silences it.
    access.setLevel(logging.WARNING)
    try:
        info(access, ACCESS, *ACCESS_ARGS)
    finally:
        access.setLevel(logging.NOTSET)
    assert buffer.getvalue().count("\n") == 2


def test_a_column_is_one_quoted_token_cut_after_its_limit() -> None:
    assert column("/v1/local/namespaces/db/tables/t", 1024) == "/v1/local/namespaces/db/tables/t"
    assert column("GET /x 200", 32) == '"GET /x 200"'
    cut = column("/" + "a" * 30, 10)
    assert json.loads(cut) == "/" + "a" * 9 + "...(21 more)"
    # masked before the cut: half a password is not left where the masking of the line no longer sees a URL
    assert "pw" not in column("/x/https://user:pw@host/" + "b" * 50, 20)


# What a client chooses of an access line comes from bytes (``raw_path`` and the method decoded as latin-1, an
# ``X-Request-Id`` of printable latin-1): the characters that are widest once escaped or encoded, and plain ones.
WIDE = st.text(alphabet=st.sampled_from(["\x01", "\x1b", "\x80", "\x9f", "\\", '"', "\xe9", "\xff", "a", " "]))


@settings(max_examples=200, deadline=None)
@given(method=WIDE, path=WIDE, request_id=WIDE, client=st.text(max_size=200))
def test_an_access_line_of_any_client_text_fits_one_atomic_pipe_write(
    method: str, path: str, request_id: str, client: str
) -> None:
    """With ``server.workers > 1`` on one stderr pipe, a line over ``PIPE_BUF`` bytes goes in parts that another
    worker's lines land between (a slow reader). A path of 1,024 control characters was 6 KiB as text, 7 as JSON:
    each column is at most its limit in bytes as either format writes it, so a whole line fits in one write."""
    from irc_proxy.http.middleware import METHOD_SHOWN, PATH_SHOWN

    wide_path = ("/v1/" + path * 2000)[:3000]
    sent_id = ("\xe9" + "".join(c for c in request_id if c.isprintable()) * 200)[:128]  # else a new one
    shown_id = field(sent_id)
    columns = (
        column((method * 100)[:200] or "GET", METHOD_SHOWN),
        column(wide_path, PATH_SHOWN),
        500,
        123456.7,
        shown_id,
        " client=" + quote(("\U0010ffff" + client * 200)[:128], safe="@._-:+"),
    )
    message = "%s %s %d %.1fms id=%s%s" % columns  # noqa: UP031 (the middleware's own format)
    for formatter in (MaskingFormatter(TEXT_FORMAT), JsonFormatter()):
        line = formatter.line(1.7e9, "INFO", "irc_proxy.access", sent_id, message) + "\n"
        assert len(line.encode("utf-8", "backslashreplace")) <= ATOMIC_WRITE_BYTES


def test_a_column_of_wide_characters_is_cut_at_its_limit_in_bytes() -> None:
    assert json.loads(column("/v1/" + "\x01" * 1100, 1024)) == "/v1/" + "\x01" * 145 + "...(955 more)"
    assert json.loads(column("/v1/" + "\xe9" * 2000, 1024)) == "/v1/" + "\xe9" * 510 + "...(1490 more)"
    assert json.loads(column("/v1/" + "a" * 2000, 1024)) == "/v1/" + "a" * 1020 + "...(980 more)"  # as before


# Any input: the lane against logging's own handler and formatter, for client text built from the pieces that
# matter (URLs with passwords and tokens, ``password=`` in any case, quotes, escapes, white space, control, line
# separator and bidi characters, text that casefolds into a name) and any time (second and rounding boundaries).
PIECES = st.sampled_from(
    [
        "a",
        "Z",
        "0",
        " ",
        "/",
        "?",
        "&",
        ";",
        "#",
        "=",
        "@",
        ":",
        "//",
        "://",
        "https://",
        "u:pw@h",
        "token=",
        "s3cret",
        "password=",
        "PassWd=",
        "pwd=",
        "\u017f",  # long s: casefolds to s
        "***",
        "[",
        "]",
        '"',
        "'",
        "\\",
        "\t",
        "\n",
        "\r",
        "\x00",
        "\x1b[2J",
        "\x7f",
        "\x85",
        "\u2028",
        "\u202e",
        "\ufeff",
        "é",
        "中",
        "%",
        "%s",
        "\U0001f600",
        "\ud800",
    ]
)
CLIENT_TEXT = st.lists(PIECES, max_size=12).map("".join)
SECONDS = st.one_of(
    st.floats(min_value=0, max_value=2**33, allow_nan=False),
    st.builds(
        lambda whole, frac: whole + frac,
        st.integers(0, 2**33),
        st.sampled_from([0.0, 0.0005, 0.9995, 0.9999995, 0.99999949, 0.0000005]),
    ),
)


@contextlib.contextmanager
def logging_to_buffer(log_format: str, created: float) -> Iterator[io.StringIO]:
    """``configure_logging`` writing to a buffer, ``time.time()`` fixed at ``created``; logging restored after."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    now = time.time
    time.time = lambda: created  # logging's records and the lane both read it
    try:
        configure_logging("info", log_format)  # type: ignore[arg-type]
        buffer = io.StringIO()
        cast(logging.StreamHandler[Any], root.handlers[0]).setStream(buffer)
        yield buffer
    finally:
        time.time = now
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


@settings(max_examples=400, deadline=None)
@given(
    log_format=st.sampled_from(["text", "json"]),
    created=SECONDS,
    method=CLIENT_TEXT,
    path=CLIENT_TEXT,
    request_id=CLIENT_TEXT,
    client=CLIENT_TEXT,
    took=st.floats(allow_nan=True, allow_infinity=True),
    status=st.integers(100, 599),
)
def test_the_lane_writes_what_logging_writes_for_any_client_text_and_time(
    log_format: str, created: float, method: str, path: str, request_id: str, client: str, took: float, status: int
) -> None:
    access = logging.getLogger("irc_proxy.access")
    args = (column(method, 32), column(path, 1024), status, took, field(request_id), f" client={client}")
    token = REQUEST_ID.set(request_id)
    try:
        with logging_to_buffer(log_format, created) as buffer:
            info(access, ACCESS, *args)
            access.info(ACCESS, *args)
            info(access, path, *())  # a message of the caller's own, without arguments
            access.info(path)
    finally:
        REQUEST_ID.reset(token)
    lines = buffer.getvalue().split("\n")
    assert lines[-1] == "" and len(lines) == 5
    assert lines[0] == lines[1]
    assert lines[2] == lines[3]


@settings(max_examples=300, deadline=None)
@given(created=SECONDS)
def test_the_lanes_times_are_loggings_and_datetimes(created: float) -> None:
    standard = logging.Formatter(TEXT_FORMAT)
    made = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    made.created, made.msecs = created, int((created - int(created)) * 1000) + 0.0
    line = MaskingFormatter(TEXT_FORMAT).line(created, "INFO", "x", "-", "m")
    assert line == f"{standard.formatTime(made)} INFO [-] x m"
    moment = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert JsonFormatter().stamp(created) == moment


def test_the_lanes_lines_wait_at_most_the_linger_and_keep_their_order(
    configured: Callable[[str], io.StringIO],
) -> None:
    buffer = configured("text")
    access, other = logging.getLogger("irc_proxy.access"), logging.getLogger("irc_proxy.test")

    async def requests() -> list[list[str]]:
        seen = []
        info(access, "first")
        info(access, "second")
        seen.append(buffer.getvalue().splitlines())  # nothing yet: they wait for others
        other.warning("third")  # any other line goes after them
        info(access, "fourth")
        seen.append(buffer.getvalue().splitlines())
        await asyncio.sleep(0)
        seen.append(buffer.getvalue().splitlines())  # still waiting after the loop's next iteration
        await asyncio.sleep(LINGER_SECONDS * 1.5)
        seen.append(buffer.getvalue().splitlines())
        for i in range(PENDING_LINES):  # a coroutine that never yields: written once this many wait
            info(access, "busy %d", i)
        seen.append(buffer.getvalue().splitlines())
        return seen

    before, after_other, next_iteration, lingered, busy = asyncio.run(requests())
    assert before == []
    assert [line.rsplit(" ", 1)[1] for line in after_other] == ["first", "second", "third"]
    assert next_iteration == after_other
    assert [line.rsplit(" ", 1)[1] for line in lingered] == ["first", "second", "third", "fourth"]
    assert len(busy) == 4 + PENDING_LINES


def test_a_line_left_when_its_loop_ends_is_written_by_a_flush(configured: Callable[[str], io.StringIO]) -> None:
    buffer = configured("json")
    loop = asyncio.new_event_loop()
    loop.call_soon(info, logging.getLogger("irc_proxy.access"), "last %s", "words")
    loop.call_soon(loop.stop)  # before the flush the line scheduled
    loop.run_forever()
    loop.close()
    assert buffer.getvalue() == ""
    flush_logs()  # what ``irc-proxy serve`` calls when its loop has ended (and ``logging.shutdown`` at exit)
    assert json.loads(buffer.getvalue())["message"] == "last words"


class _Writes(io.StringIO):
    """A stream that keeps what each flush sent (one ``write`` system call of a real stderr)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []
        self._from = 0

    def flush(self) -> None:
        value = self.getvalue()
        if len(value) > self._from:
            self.sent.append(value[self._from :])
            self._from = len(value)


class _RecordedFile(io.FileIO):
    """A file whose every ``write`` (one system call) is recorded: how many bytes asked, how many taken."""

    calls: list[tuple[int, int | None]]

    def write(self, data: bytes, /) -> int | None:  # type: ignore[override]  # typeshed: never None
        taken: int | None = super().write(data)  # None: the pipe is full (a non-blocking file)
        self.calls.append((len(data), taken))
        return taken


def test_after_a_failed_write_to_a_full_pipe_no_write_is_over_pipe_buf(
    configured: Callable[[str], io.StringIO], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that a full non-blocking pipe refused stays in the stream's buffer: the next batch's first write
    carried it too, 7,792 bytes of which the pipe took 4,096, cutting a line where another worker's could land.
    What was left goes out alone first."""
    configured("text")
    read, write = os.pipe()
    fcntl.fcntl(write, 1031, ATOMIC_WRITE_BYTES)  # F_SETPIPE_SZ: one page
    os.set_blocking(write, False)
    raw = _RecordedFile(write, "w")
    raw.calls = []
    stream = io.TextIOWrapper(io.BufferedWriter(cast(io.FileIO, raw)), encoding="utf-8", errors="backslashreplace")
    handler = cast(logging.StreamHandler[Any], logging.getLogger().handlers[0])
    handler.setStream(stream)
    failed: list[logging.LogRecord] = []
    monkeypatch.setattr(handler, "handleError", failed.append)
    access = logging.getLogger("irc_proxy.access")

    async def batch(tag: str, count: int) -> None:
        for i in range(count):
            info(access, "GET /v1/%s-%03d/%s 200", tag, i, "p" * 150)
        handler.flush()  # the batch, as the linger's timer writes it

    try:
        os.write(write, b"x" * (ATOMIC_WRITE_BYTES - 100))  # a reader that stopped reading
        asyncio.run(batch("a", 40))
        assert len(failed) == 40
        os.set_blocking(read, False)
        os.read(read, 65536)  # it caught up once
        asyncio.run(batch("b", 20))
        assert raw.calls and all(asked <= ATOMIC_WRITE_BYTES for asked, _ in raw.calls), raw.calls
        assert all(taken in (None, asked) for asked, taken in raw.calls), raw.calls  # each whole, or none of it
    finally:
        os.close(read)
        with contextlib.suppress(OSError):
            stream.close()


def test_waiting_lines_go_out_in_whole_lines_of_at_most_pipe_buf_bytes(
    configured: Callable[[str], io.StringIO],
) -> None:
    """With several workers on one stderr pipe, a write over ``PIPE_BUF`` can be split by another worker's lines."""
    configured("text")
    stream = _Writes()
    cast(logging.StreamHandler[Any], logging.getLogger().handlers[0]).setStream(stream)
    access = logging.getLogger("irc_proxy.access")

    async def busy() -> None:
        info(access, "GET /v1/%s 200", "x" * 5000)  # longer than PIPE_BUF: alone, as every line once was
        info(access, "GET /v1/%s 200", "\u00e9" * 700)  # non-ASCII: 1,400 bytes in UTF-8
        for i in range(PENDING_LINES - 2):
            info(access, "GET /v1/%s-%03d 200", "y" * 250, i)

    asyncio.run(busy())
    lines = stream.getvalue().splitlines()
    assert len(lines) == PENDING_LINES
    assert 3 <= len(stream.sent) < PENDING_LINES  # batched, yet cut
    assert "".join(stream.sent) == stream.getvalue()
    for sent in stream.sent:
        assert sent.endswith("\n")
        assert len(sent.encode()) <= ATOMIC_WRITE_BYTES or sent.count("\n") == 1, sent[:80]


@given(st.lists(st.text(min_size=0, max_size=600).map(lambda t: t + "\n"), max_size=40), st.integers(1, 5000))
def test_atomic_write_ends_cut_whole_texts_in_order_within_the_limit(texts: list[str], limit: int) -> None:
    ends = atomic_write_ends(texts, limit)
    assert ends == sorted(set(ends)) and ends[-1] == len(texts)
    start = 0
    for end in ends:
        assert end > start or not texts
        size = len("".join(texts[start:end]).encode("utf-8", "surrogatepass"))
        assert size <= limit or end - start == 1
        start = end


class _Terminated(BaseException):
    """The process ending in the middle of a write (a SIGTERM's default action after ``irc_proxy.asgi``'s flush)."""


class _SignalledAt(io.StringIO):
    """A stream whose ``at``-th write is preceded by a SIGTERM: the handler flushes the log, then the process ends."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.writes = at, 0

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes == self.at:
            flush_logs()  # what ``asgi._flush_then_terminate`` does, re-entering the write that was under way
            raise _Terminated
        return super().write(text)


@pytest.mark.parametrize("at", [1, 2, 3])
def test_a_sigterm_between_two_writes_of_a_batch_loses_no_line(
    configured: Callable[[str], io.StringIO], at: int
) -> None:
    configured("text")
    stream = _SignalledAt(at)
    cast(logging.StreamHandler[Any], logging.getLogger().handlers[0]).setStream(stream)
    access = logging.getLogger("irc_proxy.access")

    async def busy() -> None:
        for i in range(PENDING_LINES):  # the last one writes them all, in several writes of whole lines
            info(access, "GET /v1/%s-%03d 200", "y" * 250, i)

    with pytest.raises(_Terminated):
        asyncio.run(busy())
    written = [line.rsplit("-", 1)[1].split()[0] for line in stream.getvalue().splitlines()]
    assert written == [f"{i:03d}" for i in range(PENDING_LINES)]
