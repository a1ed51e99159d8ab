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
from typing import Any, Literal, TextIO

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
        return self.stamp(record.created, record.msecs)

    def stamp(self, created: float, msecs: float) -> str:
        """``asctime`` of a record made at ``created`` (``msecs`` as ``LogRecord`` computes them)."""
        second = int(created)
        cached, text = self._second
        if cached != second:
            text = time.strftime(self.default_time_format, self.converter(created))
            self._second = (second, text)
        return f"{text},{int(msecs):03d}"  # logging's ``default_msec_format``

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
        exception = self.formatException(record.exc_info) if record.exc_info else None
        request_id = getattr(record, "request_id", REQUEST_ID.get())
        return self.line(record.created, record.levelname, record.name, record.getMessage(), request_id, exception)

    @staticmethod
    def line(
        created: float, level: str, logger: str, message: str, request_id: str, exception: str | None = None
    ) -> str:
        """One record's line (also written by :func:`info` without a record)."""
        moment = datetime.fromtimestamp(created, UTC)
        entry = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": level,
            "logger": logger,
            "message": message,
            "request_id": request_id,
        }
        if exception is not None:
            entry["exception"] = exception
        return json_safe(mask_text(json.dumps(entry, ensure_ascii=False)))


class ProxyHandler(logging.StreamHandler[TextIO]):
    """The handler ``configure_logging`` installs: a ``StreamHandler`` that remembers its own filter and formatter,
    so :func:`info` can tell whether they are still the ones in place."""

    def __init__(self, formatter: MaskingFormatter | JsonFormatter) -> None:
        super().__init__()
        self.addFilter(RequestIdFilter())
        self.setFormatter(formatter)
        self.own_filters = list(self.filters)
        self.own_formatter = formatter


def configure_logging(level: str, log_format: Literal["text", "json"]) -> None:
    """Send every logger's records to stderr in ``log_format`` (replacing earlier handlers)."""
    handler = ProxyHandler(JsonFormatter() if log_format == "json" else MaskingFormatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Neither format shows the caller, thread or process: skip collecting them for every record
    # (the logging docs' "Optimization" switches; one access log line per request adds up).
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False


def _sole_handler(logger: logging.Logger) -> ProxyHandler | None:
    """What ``configure_logging`` installed, when it is still all that would handle an INFO record of ``logger``.

    That is: the logger is enabled for INFO, no logger on the way to the root has a handler of its own or stops
    propagation, the logger has no filter, the root's one handler is a ``ProxyHandler`` with its own filter and
    formatter and a level that lets INFO pass, and records are plain ``LogRecord`` objects. Anything else (a
    user's ``dictConfig``, an extra handler or filter, a raised level) is served by logging itself.
    """
    if logger.filters or not logger.isEnabledFor(logging.INFO):
        return None
    current: logging.Logger | None = logger
    while current is not None and current is not logging.root:
        if current.handlers or not current.propagate:
            return None
        current = current.parent
    handlers = logging.root.handlers
    if len(handlers) != 1:
        return None
    handler = handlers[0]
    if (
        type(handler) is not ProxyHandler
        or handler.level > logging.INFO
        or handler.filters != handler.own_filters
        or handler.formatter is not handler.own_formatter
        or logging.getLogRecordFactory() is not logging.LogRecord
    ):
        return None
    return handler


def info(logger: logging.Logger, message: str, *args: object) -> None:
    """``logger.info(message, *args)``, written straight to the stream when the set-up is ``configure_logging``'s.

    The access log writes a line per request, and a ``LogRecord``, the filter, the handler's and the
    formatter's calls cost a fifth of a 304's CPU. With the set-up ``configure_logging`` made (checked on every
    call: :func:`_sole_handler`), the line is built here the same way its formatter builds it, byte for byte
    (request id, time, one-line escaping, masking) and written under the handler's lock; a failed write is reported
    through the handler's ``handleError`` as logging reports one. In any other set-up this is ``logger.info``.
    """
    handler = _sole_handler(logger)
    if handler is None:
        logger.info(message, *args)
        return
    created = time.time()
    msecs = int((created - int(created)) * 1000) + 0.0  # as ``LogRecord``
    text = message % args if args else message
    request_id = REQUEST_ID.get()
    formatter = handler.own_formatter
    if isinstance(formatter, MaskingFormatter):
        stamp, level = formatter.stamp(created, msecs), logging.getLevelName(logging.INFO)
        line = mask_text(printable(f"{stamp} {level} [{field(request_id)}] {logger.name} {text}"))
    else:
        line = JsonFormatter.line(created, logging.getLevelName(logging.INFO), logger.name, text, request_id)
    handler.acquire()
    try:
        handler.stream.write(line + handler.terminator)
        handler.flush()
    except Exception:
        # Reported as logging reports a failed ``emit``, never written again: the line may be in the stream's
        # buffer already (a full non-blocking pipe takes it later), and a second write would log it twice.
        handler.handleError(logger.makeRecord(logger.name, logging.INFO, "(unknown file)", 0, message, args, None))
    finally:
        handler.release()


def column(text: str, limit: int) -> str:
    """``text`` as one column of a space-separated line (``irc_proxy.text.field``), at most ``limit`` of its
    characters followed by ``...(N more)``.

    Why bounded: a client chooses the path and (over HTTP/2) the method, up to the server's header limits
    (64 KiB), and every access log line would carry them whole. Masked before it is cut (rare: only a text over
    the limit pays), so a cut cannot leave half a password that the masking of the whole line no longer knows
    as one.
    """
    if len(text) > limit:
        text = mask_text(text)
        if len(text) > limit:
            text = f"{text[:limit]}...({len(text) - limit} more)"
    return field(text)
