"""The two log line formats: ``text`` and ``json``, each carrying the id of the request a line belongs to.

Every line is masked (``irc_proxy.masking.mask_text``) after it is formatted, so a URL with a
password or a token in it never reaches the log, whoever logged it (our code, SQLAlchemy's
exception texts, hypercorn's tracebacks). And every record stays one line (``irc_proxy.text``): a
client's text in a message (a name, a client id, a raw path) cannot start a forged line or drive the
reader's terminal. Text lines escape control characters; a traceback's own line breaks are kept, but
each of its lines is indented, so none of them can pass for a record of its own. JSON lines escape
what ``json.dumps`` leaves raw (C1 controls, U+2028/U+2029, bidi controls).

Each formatter also builds an INFO line without a ``LogRecord`` (``line``), byte for byte what its ``format``
writes for the same record: ``irc_proxy.logs.info`` (the access log's lane) writes those.

``REQUEST_ID`` is set by the HTTP layer for the duration of a request; worker threads see it too
(anyio copies the context into them), so any layer may read it, e.g. to pass it upstream.
"""

from __future__ import annotations

import logging
import math
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import Any

from irc_proxy.masking import mask_text
from irc_proxy.text import field, json_safe, printable

REQUEST_ID: ContextVar[str] = ContextVar("irc_proxy_request_id", default="-")
TEXT_FORMAT = "%(asctime)s %(levelname)s [%(request_id_text)s] %(name)s %(message)s"
_MILLIS = tuple(f"{ms:03d}" for ms in range(1000))
"""``%03d`` of every millisecond, worked out once."""


class RequestIdFilter(logging.Filter):
    """Stamp every record with the current request id (``-`` outside requests)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id = REQUEST_ID.get()
        record.request_id_text = field(request_id)  # a client may send it: one plain or quoted column
        return True


class MaskingFormatter(logging.Formatter):
    """The standard text format with credentials masked, one record per line (continuations indented)."""

    _second: tuple[int, str] = (-1, "")
    """The last second formatted (``time.strftime`` per record cost more than the rest of an access log line)."""

    def __init__(self, fmt: str | None = None) -> None:
        super().__init__(fmt)
        self._heads: dict[str, tuple[str, str, str]] = {}
        """By logger: the level name they were made for, then the level's and the logger's parts of a ``line``,
        escaped and masked."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt:
            return super().formatTime(record, datefmt)
        return self.stamp(record.created, record.msecs)

    def stamp(self, created: float, msecs: float) -> str:
        """``asctime`` of a record made at ``created`` (``msecs`` as ``LogRecord`` computes them)."""
        return f"{self._day(created)},{int(msecs):03d}"  # logging's ``default_msec_format``

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        return _indented(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _indented(super().formatStack(stack_info))

    def format(self, record: logging.LogRecord) -> str:
        return mask_text(super().format(record))

    def line(self, created: float, level: str, logger: str, request_id: str, text: str) -> str:
        """What ``format`` writes for a record of ``created`` with the message ``text`` and no traceback.

        Built in parts, escaped and masked one by one: ``printable`` escapes character by character, and no match
        of ``mask_text``'s patterns holds white space, so a line cut after a space is masked as its parts are (the
        patterns' ``\\b`` and look-ahead see the same on either side of such a cut). The time has nothing to escape
        or mask (digits and ``-: ,``); the level's and the logger's parts are worked out once; the request id's
        column is a ``field`` (nothing to escape) and is masked only when it holds ``=`` or ``://``.
        """
        day = self._day(created)
        heads = self._heads.get(logger)
        if heads is None or heads[0] is not level:
            heads = self._heads[logger] = (level, _masked(level + " "), _masked(logger + " "))
        column = f"[{field(request_id)}] "
        if "=" in column or "://" in column:
            column = mask_text(column)
        text = printable(text)
        # LogRecord's msecs: int((created - int(created)) * 1000), 0..999 for any time after 1970
        millis = _MILLIS[int((created - int(created)) * 1000)]
        return f"{day},{millis} {heads[1]}{column}{heads[2]}{mask_text(text)}"

    def _day(self, created: float) -> str:
        """``asctime`` without the milliseconds, each second's text made once."""
        second = int(created)
        cached, text = self._second
        if cached != second:
            text = time.strftime(self.default_time_format, self.converter(created))
            self._second = (second, text)
        return text


def _masked(text: str) -> str:
    return mask_text(printable(text))


def _indented(text: str) -> str:
    """A traceback as continuation lines: each line indented, control characters other than line breaks escaped."""
    return "\n".join("  " + printable(line) for line in text.split("\n"))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id (and the exception, if any)."""

    _second: tuple[int, str] = (-1, "")
    """The last second written, as ``datetime.isoformat`` writes it (without the milliseconds and the zone)."""

    def format(self, record: logging.LogRecord) -> str:
        exception = self.formatException(record.exc_info) if record.exc_info else None
        request_id = getattr(record, "request_id", REQUEST_ID.get())
        return self.line(record.created, record.levelname, record.name, request_id, record.getMessage(), exception)

    def line(
        self, created: float, level: str, logger: str, request_id: str, message: str, exception: str | None = None
    ) -> str:
        """One record's line: ``json.dumps`` of its fields (``ensure_ascii=False``), masked, then ``json_safe``.

        The object is written here as ``json.dumps`` writes it (its separators, each string through the same
        ``encode_basestring``) rather than built as a dict and encoded: half the cost of an access log line.
        """
        encoded = (
            f'{{"time": "{self.stamp(created)}", "level": {encode_basestring(level)}, "logger": '
            f'{encode_basestring(logger)}, "message": {encode_basestring(message)}, "request_id": '
            f"{encode_basestring(request_id)}"
        )
        if exception is not None:
            encoded += f', "exception": {encode_basestring(exception)}'
        return json_safe(mask_text(encoded + "}"))

    def stamp(self, created: float) -> str:
        """``datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")`` with ``Z`` for ``+00:00``.

        ``fromtimestamp`` rounds the fraction to microseconds, half to even (which may carry into the next
        second), and ``isoformat`` cuts them to milliseconds: the same here, with each second's text made once.
        """
        fraction, whole = math.modf(created)
        micros = round(fraction * 1e6)
        if micros >= 1_000_000:
            micros -= 1_000_000
            whole += 1.0
        elif micros < 0:  # before 1970: modf's parts are negative
            micros += 1_000_000
            whole -= 1.0
        second = int(whole)
        cached, text = self._second
        if cached != second:
            text = datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds").removesuffix("+00:00")
            self._second = (second, text)
        return f"{text}.{_MILLIS[micros // 1000]}Z"
