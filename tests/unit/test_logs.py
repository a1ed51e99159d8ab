"""Every log record is one line the proxy wrote: a client's text cannot start another or drive a terminal."""

from __future__ import annotations

import json
import logging
import sys

from irc_proxy.logs import REQUEST_ID, TEXT_FORMAT, JsonFormatter, MaskingFormatter, RequestIdFilter
from irc_proxy.text import UNSAFE

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
