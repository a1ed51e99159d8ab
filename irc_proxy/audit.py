"""The audit trail: one record per catalog operation, fanned out to sinks off the request path.

``Auditor.submit`` never blocks and never raises: each sink that does I/O (the database, the
webhook) has its own bounded queue drained by a background task; a full queue or a failing sink
drops records, counts them and logs a warning, and never touches the request. The JSON log line
is written directly (a logging call). ``close`` flushes what is queued, within a time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import Dialect, Engine, String, insert

from irc_proxy.logs import info
from irc_proxy.settings import AuditSettings, AuditWebhookSettings
from irc_proxy.stores.tables import AuditRecordRow
from irc_proxy.threads import ThreadRunner

log = logging.getLogger("irc_proxy")
audit_log = logging.getLogger("irc_proxy.audit")
CLOUDEVENT_TYPE = "io.irc-proxy.audit"
CLOUDEVENT_SOURCE = "irc-proxy"
_WARN_EVERY_SECONDS = 10.0


@dataclass
class AuditRecord:
    """One audited operation. Not frozen: a frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__`` (~4 µs a record against ~1 µs), and one is built for every request; nobody mutates it."""

    time: datetime
    principal: str
    operation: str
    catalog: str | None
    object: str | None
    status: int
    request_id: str
    latency_ms: float
    decision: str = "allowed"
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self) | {"time": self.time.isoformat().replace("+00:00", "Z")}


@dataclass
class _Drops:
    """Counts dropped records of one sink and logs a warning at most every few seconds."""

    sink: str
    count: int = 0
    _last_warning: float = field(default=-_WARN_EVERY_SECONDS)

    def add(self, n: int, why: str) -> None:
        self.count += n
        now = time.monotonic()
        if now - self._last_warning >= _WARN_EVERY_SECONDS:
            self._last_warning = now
            log.warning("audit sink %s dropped %d record(s) (%s); %d dropped so far", self.sink, n, why, self.count)


class _QueuedSink:
    """A bounded queue and the task that drains it in batches through ``write``.

    While records keep coming (the last write was less than ``5 * linger_seconds`` ago), the task
    waits ``linger_seconds`` before taking a batch, so a busy server writes a few large batches
    instead of one small transaction per request; after a pause the first record goes out at once.

    The queue is a ``deque`` rather than an ``asyncio.Queue``: every request offers a record, and
    ``Queue.put_nowait`` (its ``full`` check, task counting, waking a getter) cost ~2 µs of the event
    loop's time per record. Here an offer is an append, and a wake-up only when the task is idle.
    ``offered`` and ``handled`` do what ``Queue.join`` did: ``close`` waits until they meet.
    """

    name = "sink"
    linger_seconds = 0.0

    def __init__(self, queue_size: int, batch_size: int) -> None:
        self.queue_size = queue_size
        self.batch_size = batch_size
        self.drops = _Drops(self.name)
        self._pending: deque[AuditRecord] = deque()
        self._idle: asyncio.Future[None] | None = None
        """Set while the task waits for a record: the next offer wakes it."""
        self._task: asyncio.Task[None] | None = None
        self._last_write = -1e9
        self.offered = self.handled = 0
        """Records accepted by ``offer`` and records written (or dropped) since start: ``caught_up`` compares them."""
        self._progress = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._drain(), name=f"audit-{self.name}")

    def offer(self, record: AuditRecord) -> None:
        if len(self._pending) >= self.queue_size:
            self.drops.add(1, "queue full")
            return
        self._pending.append(record)
        self.offered += 1
        idle = self._idle
        if idle is not None:
            self._idle = None
            if not idle.done():
                idle.set_result(None)

    def pending(self) -> int:
        """Records waiting to be taken into a batch."""
        return len(self._pending)

    async def caught_up(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s) until every record offered before this call is written or dropped: a query
        of the audit trail then sees the records of the requests this replica answered before it."""
        await self._reach(self.offered, timeout)

    async def _reach(self, target: int, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until ``handled`` reaches ``target``; whether it did (or the task ended)."""
        deadline = time.monotonic() + timeout
        while self.handled < target and self._task is not None and not self._task.done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._progress.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._progress.wait(), left)
        return True

    async def write(self, batch: Sequence[AuditRecord]) -> None:
        raise NotImplementedError

    async def _next_batch(self) -> list[AuditRecord]:
        pending = self._pending
        while not pending:
            self._idle = asyncio.get_running_loop().create_future()
            await self._idle
        if self.linger_seconds and time.monotonic() - self._last_write < 5 * self.linger_seconds:
            await asyncio.sleep(self.linger_seconds)
        return [pending.popleft() for _ in range(min(self.batch_size, len(pending)))]

    async def _drain(self) -> None:
        while True:
            batch = await self._next_batch()
            try:
                await self.write(batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.drops.add(len(batch), f"{type(exc).__name__}: {exc}")
            finally:
                self._last_write = time.monotonic()
                self.handled += len(batch)
                self._progress.set()

    async def close(self, timeout: float) -> None:
        """Wait (up to ``timeout``) until every record offered is written, then stop the task; what is still
        queued then is dropped (and counted)."""
        if self._task is None:
            return
        await self._reach(self.offered, timeout)
        if self._pending:
            self.drops.add(len(self._pending), "shutdown before it was written")
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


class DatabaseSink(_QueuedSink):
    """Batch-inserts into ``audit_record`` (in a worker thread), in a few statements per batch.

    Each transaction costs far more than a row (SQLite: ~65 µs a row in batches of 50, ~18 µs in batches of 500,
    most of it the commit), so a busy server lingers 100 ms per batch: a record is written at most ~0.1 s later.

    Few statements, not ``executemany``: both drivers let go of the GIL for every row (sqlite3 around each
    ``sqlite3_step``, psycopg around each row's libpq calls), and taking it back while the event loop thread runs
    is a hand-over that costs far more than the row. Served on SQLite, one ``wrk`` connection of 304s (one record
    each), alternating trees, 8 runs each on a quiet 2-vCPU machine: ``executemany`` 0.187-0.194 ms p50, the event
    loop thread at 194-208 µs a request, the worker at 15-18 µs and 1.4-1.8 context switches a record; now
    0.165-0.180 ms (one run 0.200, in a round where one without the audit took 0.209), 177-199 µs, 4.4-5.9 µs and
    0.08-0.15; 0.159-0.167 ms without the audit. With the state on PostgreSQL (7 pairs, busier): 0.164-0.195 ms
    (median 0.181), up to 1.5 context switches a record, against 0.167-0.176 ms (median 0.169) and at most 0.2.

    SQLite gets multi-row ``VALUES`` (``_ValuesStatements``: 512 rows, then 256, 128, ... 1 for the rest; 64 rows
    at most under the 999 parameters of SQLite before 3.32, which measured 0.06-0.35 context switches a record
    against 0.06-0.15). Every value is bound as ``executemany`` bound it, so what is stored cannot differ on any
    SQLite build. A JSON array expanded by ``json_each`` (one statement) would have SQLite parse each latency from
    text, exact only as far as its text-to-double conversion is (which has changed between versions and
    platforms), and costs more: a batch of 450 in isolation, ~5.3 µs of CPU a record against ~3.1 (``executemany``
    ~4.3); served alongside, 0.163-0.197 ms, the worker at 6.2-9.8 µs and 0.07-0.11 context switches a record.
    PostgreSQL gets one ``INSERT ... SELECT`` of the elements of a JSON array (``_json_statement``): psycopg's side
    of a batch of 450 went from ~8.7 to ~2.5 µs a record, the server's from ~6.7 to ~3.7 (``unnest`` of column
    arrays: ~7.4 and ~4.4; one ``VALUES`` of all the rows: ~15.6 and ~4.4; ``jsonb``: ~3.0 on the server, but its
    numbers are ``numeric``, which has no negative zero). PostgreSQL reads a JSON number with ``float8in``, exact.
    A batch JSON cannot carry exactly (a NaN or infinite latency, a zone offset with a fraction of a second) goes
    the old way, by ``executemany``, rather than failing.

    The values are the ones SQLAlchemy would send: on SQLite ``time`` becomes the text SQLAlchemy's ``DateTime``
    stores (``_sqlite_times``); on PostgreSQL the driver had the ``datetime`` itself, now its ISO text with its
    offset (``_postgres_times``). ``tests/unit/stores/test_audit_rows.py`` compares rows written by SQLAlchemy
    and by the sink on both databases, hostile values included. Before that the sink's rows went through
    ``conn.execute(insert(...), dicts)``, which compiled the statement and ran every value through its type
    processors for each batch (~28 µs of CPU a record on SQLite against ~15 µs for tuples, 2026-11).
    """

    name = "database"
    linger_seconds = 0.1

    def __init__(self, engine: Engine, threads: ThreadRunner, queue_size: int, batch_size: int) -> None:
        super().__init__(queue_size, batch_size)
        self.engine = engine
        self._threads = threads
        self._sql, self._given_times = _insert_statement(engine.dialect)
        self._times = self._given_times
        self._statements: Callable[[list[tuple[Any, ...]]], list[tuple[str, Any]]] = self._one_by_one
        if engine.dialect.name == "sqlite" and self._given_times is _sqlite_times:
            self._statements = _ValuesStatements(self._sql, engine)
        elif engine.dialect.name == "postgresql":
            self._times, self._statements = _postgres_times, _json_statement(engine.dialect)

    def _insert(self, batch: Sequence[AuditRecord]) -> None:
        try:
            statements = self._statements(_rows(batch, self._times()))
        except _NotCarried:  # written as it always was: one row at a time
            statements = self._one_by_one(_rows(batch, self._given_times()))
        with self.engine.begin() as conn:
            for sql, parameters in statements:
                conn.exec_driver_sql(sql, parameters)

    def _one_by_one(self, rows: list[tuple[Any, ...]]) -> list[tuple[str, Any]]:
        return [(self._sql, rows)]  # a list of rows: the driver's executemany

    async def write(self, batch: Sequence[AuditRecord]) -> None:
        await self._threads.run(self._insert, batch)


class _NotCarried(Exception):
    """A batch holds a value the few-statement form cannot carry exactly."""


def _rows(batch: Sequence[AuditRecord], stamp: Callable[[datetime], Any]) -> list[tuple[Any, ...]]:
    """The batch's values in ``_COLUMNS`` order, ``time`` through ``stamp``, every text storable."""
    rows = [
        (
            stamp(r.time),
            r.principal,
            r.operation,
            r.catalog,
            r.object,
            r.decision,
            r.reason,
            r.status,
            r.request_id,
            r.latency_ms,
        )
        for r in batch
    ]
    for i, row in enumerate(rows):  # one string per row tells whether any of its text may not be storable
        text = f"{row[1]}{row[2]}{row[3]}{row[4]}{row[5]}{row[6]}{row[8]}"
        if len(text) > _SHORTEST or not text.isascii() or "\x00" in text:
            rows[i] = _storable(row)
    return rows


_MOST_ROWS_PER_STATEMENT = 512
"""The most rows of one SQLite ``INSERT``: 5,120 parameters, within SQLite's limit since 3.32 (32,766)."""


class _ValuesStatements:
    """What writes rows on SQLite: ``INSERT ... VALUES (...), (...), ...`` of the most rows SQLite's limit of
    parameters allows (512 since SQLite 3.32; 64 under the 999 of older versions), then of half as many, a quarter
    ... one row for the rest (a batch of 500: six statements, at most ten shapes for a connection to prepare), each
    row's values bound as ``executemany`` bound them. The limit is read from a connection of the engine before the
    first batch."""

    def __init__(self, one_row: str, engine: Engine) -> None:
        self._head, _, self._group = one_row.rpartition(" VALUES ")
        if self._group != "(" + ", ".join(["?"] * len(_COLUMNS)) + ")":
            raise RuntimeError(f"unexpected INSERT: {one_row}")
        self._engine = engine
        self._sql: dict[int, str] = {}
        """Each statement by its number of rows, largest first."""

    def __call__(self, rows: list[tuple[Any, ...]]) -> list[tuple[str, Any]]:
        if not self._sql:
            most, limit = _MOST_ROWS_PER_STATEMENT, self._limit()
            while most > 1 and most * len(_COLUMNS) > limit:
                most //= 2
            self._sql = {
                most >> i: f"{self._head} VALUES {', '.join([self._group] * (most >> i))}"
                for i in range(most.bit_length())
            }
        made: list[tuple[str, Any]] = []
        start = 0
        for size, sql in self._sql.items():
            while len(rows) - start >= size:
                made.append((sql, tuple(itertools.chain.from_iterable(rows[start : start + size]))))
                start += size
        return made

    def _limit(self) -> int:
        """The most parameters a statement may have on the engine's connections (999 if the driver cannot say)."""
        import sqlite3  # deferred: a server on PostgreSQL never needs it

        with contextlib.closing(self._engine.raw_connection()) as raw:
            getlimit = getattr(raw.driver_connection, "getlimit", None)
            return int(getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)) if getlimit is not None else 999


def _json_statement(dialect: Dialect) -> Callable[[list[tuple[Any, ...]]], list[tuple[str, Any]]]:
    """What writes rows on PostgreSQL: one ``INSERT ... SELECT`` of the elements of a JSON array of rows (each an
    array in ``_COLUMNS`` order), its texts as they are, its other values cast to their column's type. A text is
    not cast to its ``VARCHAR(n)``: that cast would cut it silently where the insert refuses it (``_storable``
    has cut it already)."""
    columns = AuditRecordRow.__table__.c  # type: ignore[attr-defined]
    values = [
        f"r ->> {i}"
        if isinstance(columns[name].type, String)
        else f"CAST(r ->> {i} AS {columns[name].type.compile(dialect)})"
        for i, name in enumerate(_COLUMNS)
    ]
    names, selected = ", ".join(_COLUMNS), ", ".join(values)  # the model's names and types
    sql = f"INSERT INTO audit_record ({names}) SELECT {selected} FROM json_array_elements(%s::json) AS r"  # noqa: S608

    def statements(rows: list[tuple[Any, ...]]) -> list[tuple[str, Any]]:
        try:  # JSON has no NaN nor infinity (``json.dumps`` would write ``NaN``, which PostgreSQL refuses)
            return [(sql, (json.dumps(rows, ensure_ascii=False, allow_nan=False),))]
        except ValueError:
            raise _NotCarried from None

    return statements


_COLUMNS: tuple[str, ...] = (
    "time",
    "principal",
    "operation",
    "catalog",
    "object",
    "decision",
    "reason",
    "status",
    "request_id",
    "latency_ms",
)
"""The order of the values in a row: the table's columns after ``id``."""
_SQLITE_DATETIME_FORMAT = "%(year)04d-%(month)02d-%(day)02d %(hour)02d:%(minute)02d:%(second)02d.%(microsecond)06d"


def _insert_statement(dialect: Dialect) -> tuple[str, Callable[[], Callable[[datetime], Any]]]:
    """The ``INSERT`` of one audit row in the driver's parameter style (positional: rows are tuples in
    ``_COLUMNS`` order), and what makes (for a batch) what becomes of ``time`` on its way to the driver: what
    SQLAlchemy's ``DateTime`` would send."""
    if not dialect.positional:  # psycopg's default is "pyformat" (named); it takes "format" (%s) as well
        dialect = type(dialect)(paramstyle="format")  # type: ignore[call-arg]
    compiled = insert(AuditRecordRow).compile(dialect=dialect, column_keys=list(_COLUMNS))
    if tuple(compiled.positiontup or ()) != _COLUMNS:
        raise RuntimeError(f"audit_record's columns changed: {compiled.positiontup}")
    time_type = AuditRecordRow.__table__.c.time.type.dialect_impl(dialect)  # type: ignore[attr-defined]
    process = time_type.bind_processor(dialect)
    if process is None:
        return compiled.string, _as_given
    if getattr(time_type, "_storage_format", None) == _SQLITE_DATETIME_FORMAT:
        return compiled.string, _sqlite_times
    return compiled.string, lambda: process


def _postgres_times() -> Callable[[datetime], str]:
    """A function that writes a ``time`` as PostgreSQL reads a ``timestamp with time zone`` exactly: the
    ISO text of the datetime, its offset written (a UTC time's text made as ``_sqlite_times`` makes it); a naive
    one without, which PostgreSQL places in the session's zone as it did the driver's ``timestamp``. An offset with
    a fraction of a second (Python allows one) has no text PostgreSQL reads: ``_NotCarried``."""
    utc = _sqlite_times()

    def text(moment: datetime) -> str:
        if moment.tzinfo is UTC:
            return f"{utc(moment)}+00:00"
        offset = moment.utcoffset()
        if offset is not None and offset.microseconds:
            raise _NotCarried
        return moment.isoformat(" ")

    return text


def _same(moment: datetime) -> datetime:
    return moment


def _as_given() -> Callable[[datetime], Any]:
    return _same


def _sqlite_times() -> Callable[[datetime], str]:
    """A function that writes a ``time`` as SQLAlchemy's SQLite ``DateTime`` stores it (``_SQLITE_DATETIME_FORMAT``:
    the datetime's own wall clock, its zone dropped, the year in four digits as ``isoformat`` writes it), each
    second's text made once (a batch's records share their seconds): ~1.8 µs a record against ~3.4 µs for
    ``isoformat`` and ~4.5 µs for SQLAlchemy's format of a dict. One per batch: what it remembers stays small."""
    heads: dict[tuple[int, ...], str] = {}

    def text(moment: datetime) -> str:
        key = (moment.second, moment.minute, moment.hour, moment.day, moment.month, moment.year)
        head = heads.get(key)
        if head is None:
            head = heads[key] = moment.isoformat(" ")[:19]
        return f"{head}.{moment.microsecond:06d}"

    return text


_LENGTHS: tuple[int | None, ...] = tuple(
    getattr(AuditRecordRow.__table__.c[name].type, "length", None)  # type: ignore[attr-defined]
    for name in _COLUMNS
)
"""Each column's ``VARCHAR`` length (``None``: unbounded), in ``_COLUMNS`` order."""
_SHORTEST = min(length for length in _LENGTHS[1:] if length is not None and length >= 128)
"""A row whose texts (the client's: principal, catalog, object, request id) add up to no more characters than this
fits every column the client's text goes to (``operation`` and ``decision`` are the proxy's own words)."""


def _storable(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """``row`` with each text made storable on every database: one record the database refuses made the sink drop
    its whole batch, other callers' records with it. PostgreSQL refuses text that is not valid Unicode (a lone
    surrogate, which Python's JSON decoding lets into a ``str``), a NUL character (``%00`` in a path's name) and a
    text longer than its ``VARCHAR`` (a 2000-character namespace in a path, any caller's 404): the first two are
    stored escaped (``\\ud800``, ``\\x00``), the last cut to the column's length, ending in ``...(N more)``.
    Called only for a row with text that is not ASCII, holds a NUL or is long (``_SHORTEST``)."""
    return tuple(
        _valid_text(value, length) if isinstance(value, str) else value
        for value, length in zip(row, _LENGTHS, strict=True)
    )


def _valid_text(value: str, length: int | None) -> str:
    try:
        value.encode()
    except UnicodeEncodeError:
        value = value.encode(errors="backslashreplace").decode()
    if "\x00" in value:
        value = value.replace("\x00", "\\x00")
    if length is not None and len(value) > length:
        more = f"...({len(value) - length} more)"
        value = value[: length - len(more)] + more
    return value


def cloudevent(record: AuditRecord) -> dict[str, Any]:
    """A CloudEvents 1.0 event in the structured JSON format."""
    return {
        "specversion": "1.0",
        "id": uuid.uuid4().hex,
        "source": CLOUDEVENT_SOURCE,
        "type": CLOUDEVENT_TYPE,
        "time": record.as_json()["time"],
        "subject": f"{record.catalog}/{record.object}" if record.object else record.catalog,
        "datacontenttype": "application/json",
        "data": record.as_json(),
    }


class WebhookSink(_QueuedSink):
    """POSTs each record (a CloudEvent or the plain JSON record), retrying with exponential backoff."""

    name = "webhook"

    def __init__(
        self, settings: AuditWebhookSettings, client: httpx.AsyncClient, sleep: Callable[[float], Any] = asyncio.sleep
    ) -> None:
        super().__init__(settings.queue_size, 1)
        self.settings = settings
        self.client = client
        self.sleep = sleep

    async def write(self, batch: Sequence[AuditRecord]) -> None:
        for record in batch:
            if self.settings.cloudevents:
                body, content_type = cloudevent(record), "application/cloudevents+json"
            else:
                body, content_type = record.as_json(), "application/json"
            await self._post(json.dumps(body).encode(), content_type)

    async def _post(self, content: bytes, content_type: str) -> None:
        headers = {"Content-Type": content_type} | {k: v.get_secret_value() for k, v in self.settings.headers.items()}
        delay = self.settings.backoff_seconds
        for attempt in range(1, self.settings.max_attempts + 1):
            try:
                response = await self.client.post(
                    self.settings.url.get_secret_value(), content=content, headers=headers
                )
                if response.status_code < 500 and response.status_code != 429:
                    response.raise_for_status()
                    return
                problem = f"HTTP {response.status_code}"
                if attempt == self.settings.max_attempts:
                    response.raise_for_status()
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}"
                if attempt == self.settings.max_attempts:
                    raise
            log.debug("audit webhook attempt %d failed (%s); retrying in %.2fs", attempt, problem, delay)
            await self.sleep(delay)
            delay = min(delay * 2, 30.0)

    async def close(self, timeout: float) -> None:
        await super().close(timeout)
        await self.client.aclose()


class Auditor:
    """Where the request path hands over its records."""

    def __init__(self, settings: AuditSettings, sinks: Sequence[_QueuedSink]) -> None:
        self.settings = settings
        self.sinks = list(sinks)

    @classmethod
    def build(cls, settings: AuditSettings, state: Engine, threads: ThreadRunner) -> Auditor:
        sinks: list[_QueuedSink] = []
        if settings.enabled and settings.database:
            sinks.append(DatabaseSink(state, threads, settings.queue_size, settings.batch_size))
        if settings.enabled and settings.webhook.url:
            client = httpx.AsyncClient(timeout=settings.webhook.timeout_seconds)
            sinks.append(WebhookSink(settings.webhook, client))
        return cls(settings, sinks)

    def start(self) -> None:
        for sink in self.sinks:
            sink.start()

    async def written(self, timeout: float = 2.0) -> None:
        """Wait (bounded) until the database sink has written what this replica submitted so far (the audit
        query's read-your-writes: records are written in batches up to ~0.1 s apart)."""
        for sink in self.sinks:
            if isinstance(sink, DatabaseSink):
                await sink.caught_up(timeout)

    def submit(self, record: AuditRecord) -> None:
        """Hand a record to every sink; never blocks, never raises."""
        if not self.settings.enabled:
            return
        try:
            if self.settings.log:
                info(audit_log, "%s", json.dumps(record.as_json()))
            for sink in self.sinks:
                sink.offer(record)
        except Exception:  # the request must not fail because of its audit record
            log.exception("audit: could not submit a record")

    async def close(self) -> None:
        await asyncio.gather(*(sink.close(self.settings.flush_timeout_seconds) for sink in self.sinks))


now: Callable[[], datetime] = functools.partial(datetime.now, UTC)
"""The time of a record: ``datetime.now(UTC)`` without a Python frame around it (one call per request)."""
