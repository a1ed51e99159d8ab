"""Logging set-up: ``text`` or ``json`` lines, each carrying the id of the request it belongs to.

Every line is masked (``irc_proxy.masking.mask_text``) after it is formatted, so a URL with a
password or a token in it never reaches the log, whoever logged it (our code, SQLAlchemy's
exception texts, hypercorn's tracebacks). And every record stays one line (``irc_proxy.text``): a
client's text in a message (a name, a client id, a raw path) cannot start a forged line or drive the
reader's terminal. Text lines escape control characters; a traceback's own line breaks are kept, but
each of its lines is indented, so none of them can pass for a record of its own. JSON lines escape
what ``json.dumps`` leaves raw (C1 controls, U+2028/U+2029, bidi controls).

``REQUEST_ID`` is set by the HTTP layer for the duration of a request; worker threads see it too
(anyio copies the context into them), so any layer may read it, e.g. to pass it upstream.
"""

from __future__ import annotations

import json
import logging
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal

from irc_proxy.masking import mask_text
from irc_proxy.text import field, json_safe, printable

REQUEST_ID: ContextVar[str] = ContextVar("irc_proxy_request_id", default="-")
TEXT_FORMAT = "%(asctime)s %(levelname)s [%(request_id_text)s] %(name)s %(message)s"


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

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        cached, text = self._second
        if cached != second:
            text = time.strftime(self.default_time_format, self.converter(record.created))
            self._second = (second, text)
        return f"{text},{int(record.msecs):03d}"  # logging's ``default_msec_format``

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        return _indented(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _indented(super().formatStack(stack_info))

    def format(self, record: logging.LogRecord) -> str:
        return mask_text(super().format(record))


def _indented(text: str) -> str:
    """A traceback as continuation lines: each line indented, control characters other than line breaks escaped."""
    return "\n".join("  " + printable(line) for line in text.split("\n"))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id (and the exception, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        entry = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", REQUEST_ID.get()),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json_safe(mask_text(json.dumps(entry, ensure_ascii=False)))


def configure_logging(level: str, log_format: Literal["text", "json"]) -> None:
    """Send every logger's records to stderr in ``log_format`` (replacing earlier handlers)."""
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter() if log_format == "json" else MaskingFormatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Neither format shows the caller, thread or process: skip collecting them for every record
    # (the logging docs' "Optimization" switches; one access log line per request adds up).
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
