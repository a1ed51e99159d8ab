"""Every log record is one line the proxy wrote: a client's text cannot start another or drive a terminal."""

from __future__ import annotations

import io
import json
import logging
import logging.handlers
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from irc_proxy.logs import (
    REQUEST_ID,
    TEXT_FORMAT,
    JsonFormatter,
    MaskingFormatter,
    RequestIdFilter,
    column,
    configure_logging,
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
