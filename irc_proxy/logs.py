"""Logging set-up: one handler on the root logger writing ``text`` or ``json`` lines (``irc_proxy.log_format``), and
the access log's lane (:func:`info`) that writes the same lines without a ``LogRecord``.

Lines of the lane are written in batches rather than one by one: a write and a flush per line are system calls,
and in a real ``irc-proxy serve`` answering one keep-alive client the per-line write cost ~10 µs of each 304's
latency (p50 0.171 → 0.161 ms over one wrk connection, 2026-11; ``benchmarks.bench_http``). They wait in the
handler (``ProxyHandler.pending``) at most ``LINGER_SECONDS`` (a timer the first of them sets on its loop), or
until any other line is written (that line goes after them: the order is the order of the calls), the handler is
flushed (``logging.shutdown`` at exit does, and ``irc-proxy serve`` when its loop ends, however it ends), or
``PENDING_LINES`` of them wait. Outside an event loop a line is written at once. A process killed outright
(SIGKILL) loses the lines of its last ``LINGER_SECONDS``; SIGTERM loses none (a worker of ``server.workers > 1``
writes them before it ends: ``irc_proxy.asgi``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import select
import time
import weakref
from asyncio import AbstractEventLoop
from asyncio import _get_running_loop as running_loop
from collections import deque
from json.encoder import encode_basestring
from typing import Literal, TextIO

from irc_proxy.log_format import REQUEST_ID, TEXT_FORMAT, JsonFormatter, MaskingFormatter, RequestIdFilter
from irc_proxy.masking import mask_text
from irc_proxy.text import field, json_safe

PENDING_LINES = 64
"""Lines of the lane that may wait (a busy server makes this many well within ``LINGER_SECONDS``; a coroutine that
never yields would keep them waiting): the one that makes this many writes them all."""
LINGER_SECONDS = 0.02
"""How long the lane's first waiting line may wait for others: a reader of the log sees each line this much later
at most (nginx's ``access_log ... flush=`` is the same idea, in seconds)."""
ATOMIC_WRITE_BYTES = select.PIPE_BUF
"""POSIX writes at most this many bytes to a pipe in one piece: with ``server.workers > 1`` every worker writes to
the same stderr, and when the pipe is full (a slow reader: journald, ``docker logs``) a longer write goes in parts
that another worker's lines can land between. So the waiting lines go out in writes of whole lines of at most this
many bytes each; a longer line is written alone, as every line was before lines waited for each other."""
_Pending = tuple[str, logging.Logger, str, tuple[object, ...]]
_HANDLERS: weakref.WeakSet[ProxyHandler] = weakref.WeakSet()


class ProxyHandler(logging.StreamHandler[TextIO]):
    """The handler ``configure_logging`` installs: a ``StreamHandler`` that remembers its own filter and formatter,
    so :func:`info` can tell whether they are still the ones in place, and holds the lane's lines until the
    end of their loop's iteration (the module's docstring)."""

    def __init__(self, formatter: MaskingFormatter | JsonFormatter) -> None:
        super().__init__()
        self.addFilter(RequestIdFilter())
        self.setFormatter(formatter)
        self.own_filters = list(self.filters)
        self.own_formatter = formatter
        self.pending: deque[_Pending] = deque()
        """The lane's lines not written yet, each with what ``handleError`` reports if its write fails."""
        self.flush_on: AbstractEventLoop | None = None
        """The loop whose timer writes ``pending`` (``None``: none set)."""
        _HANDLERS.add(self)

    def scheduled_flush(self) -> None:
        """The timer the first pending line sets on its loop (``LINGER_SECONDS``)."""
        self.flush_on = None
        if self.pending:
            self.flush()

    def emit(self, record: logging.LogRecord) -> None:
        """Any other record: after the lane's lines written before it (``handle`` holds the lock)."""
        if self.pending:
            self._write_pending()
        super().emit(record)

    def flush(self) -> None:
        """Write the pending lines and flush the stream (``StreamHandler.flush`` with the pending lines first)."""
        lock = self.lock
        assert lock is not None  # ``Handler.createLock`` made it
        with lock:
            if self.pending:
                self._write_pending()
            elif self.stream and hasattr(self.stream, "flush"):
                self.stream.flush()

    def _write_pending(self) -> None:
        """Write the pending lines in one go and flush the stream (the caller holds the lock). A failed write is
        reported for each of its lines, as logging reports a failed ``emit``, and never made again: the stream
        may hold part of it already (a full non-blocking pipe takes it later), and a second write would log it
        twice."""
        pending = self.pending
        taken = list(pending)  # one C call: other threads' appends land before or after it, never inside
        terminator = self.terminator
        texts = [entry[0] + terminator for entry in taken]
        written = 0
        try:
            # What a failed write left in the stream (a full non-blocking pipe) goes out alone first: behind it, the
            # first write would be two writes' bytes, over PIPE_BUF (cut mid-line when the pipe is full). Each
            # write below ends with its own flush, so the stream is empty before the next one.
            self.stream.flush()
            for end in atomic_write_ends(texts):
                text = "".join(texts[written:end])
                # Lines leave the queue only once written: a SIGTERM handler (``irc_proxy.asgi``) that runs between
                # two bytecodes of this method, re-entering it through ``flush``, writes what is still queued
                # before the process ends. Taken out first, they were lost in that window; now the window (between
                # the write and the ``popleft`` calls) can at worst write a few lines twice.
                self.stream.write(text)
                self.stream.flush()
                _drop(pending, taken[written:end])
                written = end
        except Exception:
            _drop(pending, taken[written:])  # never written again: the stream may hold part of them already
            for _, logger, message, args in taken[written:]:
                self.handleError(logger.makeRecord(logger.name, logging.INFO, "(unknown file)", 0, message, args, None))


def _drop(pending: deque[_Pending], entries: list[_Pending]) -> None:
    """Take ``entries`` off the front of ``pending``, those still there (a re-entrant write may have taken them)."""
    for entry in entries:
        if pending and pending[0] is entry:
            pending.popleft()


def atomic_write_ends(texts: list[str], limit: int = ATOMIC_WRITE_BYTES) -> list[int]:
    """Where to cut ``texts`` (whole lines, in order) into writes of at most ``limit`` bytes each: the end index of
    each write. A text over ``limit`` on its own is one write. Bytes are bounded without encoding: an ASCII text
    is its length, any other at most 10 bytes a character (``backslashreplace`` of an astral character in a
    stream whose encoding lacks it: ``\\U0001f600``)."""
    ends: list[int] = []
    size = 0
    for index, text in enumerate(texts):
        length = len(text) if text.isascii() else 10 * len(text)
        if size and size + length > limit:
            ends.append(index)
            size = 0
        size += length
    ends.append(len(texts))
    return ends


def _forget_pending() -> None:
    """In a forked child: the parent writes its own pending lines; the child must not write them again."""
    for handler in list(_HANDLERS):
        handler.pending.clear()
        handler.flush_on = None


os.register_at_fork(after_in_child=_forget_pending)


def flush_logs() -> None:
    """Write every line still pending (``irc-proxy serve`` calls this when its loop has ended)."""
    for handler in list(_HANDLERS):
        handler.flush()


def configure_logging(level: str, log_format: Literal["text", "json"]) -> None:
    """Send every logger's records to stderr in ``log_format`` (replacing earlier handlers)."""
    handler = ProxyHandler(JsonFormatter() if log_format == "json" else MaskingFormatter(TEXT_FORMAT))
    root = logging.getLogger()
    for earlier in root.handlers:  # their pending lines before any of the new handler's
        earlier.flush()
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
    """``logger.info(message, *args)``, the line handed straight to the handler when the set-up is
    ``configure_logging``'s.

    The access log writes a line per request, and logging's own path (a ``LogRecord``, the filter, the handler's
    and the formatter's calls) costs ~31 µs a line where this costs ~14 µs, its write included (measured alone,
    2026-11). With the set-up ``configure_logging`` made (checked on every call: :func:`_sole_handler`), the line
    is built by the formatter's ``line``, byte for byte what its ``format`` makes of the record (request id, time,
    one-line escaping, masking: ``tests/unit/test_logs.py`` compares them for any input), and written with the
    other lines of the next ``LINGER_SECONDS`` (``ProxyHandler.pending``); a failed write is reported through the
    handler's ``handleError`` as logging reports one. In any other set-up this is ``logger.info``. Inside the served app
    (``benchmarks.tools.asgi_cpu``, the access log switched off against on) the whole line, its columns included,
    costs ~27 µs of a 304's CPU (~35 µs before the lines were built in parts and written per iteration).
    """
    handler = _sole_handler(logger)
    if handler is None:
        logger.info(message, *args)
        return
    created = time.time()
    text = message % args if args else message
    level = logging.getLevelName(logging.INFO)
    line = handler.own_formatter.line(created, level, logger.name, REQUEST_ID.get(), text)
    # Pending for at most LINGER_SECONDS (at once outside a loop). ``deque.append`` is atomic: another thread's
    # write (under the handler's lock) takes the line or leaves it whole.
    pending = handler.pending
    pending.append((line, logger, message, args))
    loop = running_loop()
    if loop is None or len(pending) >= PENDING_LINES:
        handler.flush()
    elif handler.flush_on is not loop:
        handler.flush_on = loop
        loop.call_later(LINGER_SECONDS, handler.scheduled_flush)


def column(text: str, limit: int) -> str:
    """``text`` as one column of a space-separated line (``irc_proxy.text.field``), at most ``limit`` of its
    characters followed by ``...(N more)``, and at most ``limit`` bytes as either log format writes them.

    Why bounded: a client chooses the path and (over HTTP/2) the method, up to the server's header limits
    (64 KiB), and every access log line would carry them whole. Masked before it is cut (rare: only a text over
    the limit pays), so a cut cannot leave half a password that the masking of the whole line no longer knows
    as one. Why in bytes too: a character may be written as up to 7 (``\\u0001`` in a JSON line), and a line
    over ``ATOMIC_WRITE_BYTES`` goes to a pipe in parts: with ``server.workers > 1`` and a slow reader, another
    worker's lines landed inside an h2c client's line of 1,100 control characters (8 of 60 such lines split,
    a tail starting a line of its own: room for a forged one).
    """
    if len(text) * _WIDEST <= limit:  # every path a client sends in earnest: no character is counted
        return field(text)
    cut = limit if _narrow(text) else _fitting(text, limit)
    if len(text) > cut:
        text = mask_text(text)
        cut = limit if _narrow(text) else _fitting(text, limit)
        if len(text) > cut:
            text = f"{text[:cut]}...({len(text) - cut} more)"
    return field(text)


_WIDEST = 7
"""The most bytes a character of a column is written as (``_written_width``: ``\\\\u0001`` in a JSON line)."""


def _narrow(text: str) -> bool:
    """Whether each character of ``text`` is one byte in both log formats (printable ASCII but ``\\`` and ``"``)."""
    return text.isascii() and text.isprintable() and "\\" not in text and '"' not in text


def _fitting(text: str, limit: int) -> int:
    """How many of ``text``'s first characters are at most ``limit`` bytes as a column of either log format."""
    size = 0
    for index, char in enumerate(text[:limit]):
        size += _written_width(char)
        if size > limit:
            return index
    return min(len(text), limit)


@functools.lru_cache(maxsize=1024)
def _written_width(char: str) -> int:
    """The bytes of ``char`` in a quoted column (``field``), in a text line and, escaped again, in a JSON line."""
    quoted = json_safe(json.dumps(char, ensure_ascii=False))[1:-1]
    return len(json_safe(encode_basestring(quoted))[1:-1].encode("utf-8", "backslashreplace"))
