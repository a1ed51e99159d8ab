"""A preview of a table's rows on its console page: at most ``server.ui_preview_rows`` (100) rows of the current
snapshot, deletes applied.

Who may: the page asks for ``planTableScan`` (``table.read``), like a client planning a scan; a principal
without it gets the 403 page and nothing of the table. How: the server's own scan planning
(``planning.planner``) over the table's manifests, read with the catalog's bounded reader and confined to
the table's own files (``TableFiles``: under its locations and the catalog's allowed ones, symbolic links
resolved), exactly as a planTableScan answer is built; then pyarrow (pyiceberg's ``ArrowScan``, which maps
columns by field id across schema changes) reads the planned data files one at a time, through a FileIO
that opens only files the plan named and the table owns, each read whole by a ``BoundedReader`` within
what is left of ``server.ui_preview_max_bytes`` (never pyiceberg's own FileIO on a path from the metadata).
Everything runs in a console worker slot within the page's time budget (``ui.budget``), checked between files.

Deletes: position delete files and deletion vectors are applied by pyiceberg; equality deletes are not
(pyiceberg cannot): a data file with equality deletes is not shown, and the page says so. At most
``MAX_COLUMNS`` top-level columns are read (a 10,000-column table shows its first ones and says how many
more there are). Values are shown as text, cut at ``MAX_CHARS`` characters; binary as a hex prefix; the
template escapes everything.

The catalog opens the table (``Catalog.open_table``) wherever it is served: a remote catalog's table is read
with the storage access its upstream vends to the proxy, confined and bounded the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io import FileIO, InputFile, OutputFile
from pyiceberg.io.pyarrow import ArrowScan
from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask
from pyiceberg.table.metadata import TableMetadata
from starlette.requests import Request

from irc_proxy.errors import BadRequest, CatalogError, Forbidden
from irc_proxy.handling.catalog import Catalog
from irc_proxy.handling.naming import TableIdent
from irc_proxy.handling.storage.storage_reads import FileTooLarge
from irc_proxy.http import parsing
from irc_proxy.http.app_state import app_state
from irc_proxy.memory_files import MemoryInputFile
from irc_proxy.planning.budget import Budget
from irc_proxy.planning.manifests import ManifestSource
from irc_proxy.planning.planner import ScanPlanner, ScanRequest, ScanTasks
from irc_proxy.ui.budget import Deadline

MAX_COLUMNS = 50
"""Top-level columns read and shown at most."""
MAX_CHARS = 200
"""Characters of one value shown at most."""
HEX_BYTES = 32
"""Bytes of a binary value shown (as hex) at most."""
FILES_PER_STEP = 8
"""Data files planned at a time (planning stops as soon as the rows are there)."""


@dataclass(frozen=True)
class Cell:
    """One value as shown: its text and a kind for the stylesheet (``null``, ``binary``, ``number``, ``text``)."""

    text: str
    kind: str


@dataclass
class Preview:
    """What the preview page shows."""

    columns: list[str] = field(default_factory=list)
    hidden_columns: int = 0
    rows: list[list[Cell]] = field(default_factory=list)
    snapshot_id: int | None = None
    files_read: int = 0
    bytes_read: int = 0
    notes: list[str] = field(default_factory=list)
    complete: bool = False
    """Every row of the snapshot is shown (the table has no more than the preview's rows)."""


@dataclass(frozen=True)
class OpenedTable:
    """A table as the preview reads it: its metadata, where its manifests come from, and how its data files are
    read (``read(path, what, max_bytes)``, confined to the table's files and bounded)."""

    metadata: TableMetadata
    manifests: ManifestSource
    read: Callable[[str, str, int], bytes]
    owns: Callable[[str], bool]


async def open_table(request: Request, catalog: Catalog, ident: TableIdent) -> OpenedTable:
    """The table at its current metadata, as the catalog opens it for reading (served here or by its remote
    catalog, whose vended storage access is then used)."""
    opened = await catalog.open_table(parsing.context(request), ident)
    metadata = opened.load.metadata
    manifest, owns = opened.files(metadata)

    def data(path: str, what: str, max_bytes: int) -> bytes:
        return opened.files(metadata, max_bytes)[0](path, what)

    cache = app_state(request).scan_planning.cache
    return OpenedTable(metadata, ManifestSource(cache, opened.cache_key, manifest, owns), data, owns)


class _OutOfBytes(Exception):
    """The next file does not fit in what is left of the preview's bytes."""


class _PlannedFiles(FileIO):
    """A read-only FileIO that opens only the files a plan named and the table owns, each read whole within
    the preview's remaining bytes."""

    def __init__(self, table: OpenedTable, preview: Preview, max_bytes: int) -> None:
        super().__init__()
        self._table, self._preview, self._max = table, preview, max_bytes
        self._lock = Lock()  # pyiceberg reads a task's delete files in its own threads
        self.allowed: set[str] = set()

    def new_input(self, location: str) -> InputFile:
        if location not in self.allowed or not self._table.owns(location):
            raise Forbidden("The preview reads only the files its plan names inside the table's locations")
        with self._lock:
            left = self._max - self._preview.bytes_read
            self._preview.bytes_read = self._max  # held while this file is read: what it does not use comes back
        try:
            if left <= 0:
                raise _OutOfBytes
            data = self._table.read(location, "Data file", left)
        except FileTooLarge:
            raise _OutOfBytes from None
        finally:
            with self._lock:
                self._preview.bytes_read -= left
        with self._lock:
            self._preview.bytes_read += len(data)
            self._preview.files_read += 1
        return MemoryInputFile(location, data)

    def new_output(self, location: str) -> OutputFile:
        raise PermissionError("read-only")

    def delete(self, location: str | InputFile | OutputFile) -> None:
        raise PermissionError("read-only")


def cell(value: Any) -> Cell:
    """A value as shown: ``null``, a hex prefix of bytes, or text cut at ``MAX_CHARS``."""
    if value is None:
        return Cell("null", "null")
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        more = f"… ({len(raw):,} bytes)" if len(raw) > HEX_BYTES else ""
        return Cell(raw[:HEX_BYTES].hex(" ") + more, "binary")
    kind = "number" if isinstance(value, int | float) and not isinstance(value, bool) else "text"
    text = str(value)
    if len(text) > MAX_CHARS:
        text = f"{text[:MAX_CHARS]}… ({len(text) - MAX_CHARS:,} more characters)"
    return Cell(text, kind)


def read_rows(table: OpenedTable, rows: int, max_bytes: int, due: Deadline) -> Preview:
    """Plan the current snapshot and read up to ``rows`` rows (blocking: a console worker slot calls it)."""
    metadata, preview = table.metadata, Preview()
    schema = metadata.schema()
    shown = schema.fields[:MAX_COLUMNS]
    preview.columns = [f.name for f in shown]
    preview.hidden_columns = len(schema.fields) - len(shown)
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        preview.notes.append("The table has no snapshot yet: no rows.")
        preview.complete = True
        return preview
    preview.snapshot_id = snapshot.snapshot_id
    projected = Schema(*shown, schema_id=schema.schema_id)
    io = _PlannedFiles(table, preview, max_bytes)
    planning = Budget(due.left(), due.left())
    batches: list[pa.Table] = []
    taken, skipped_equality = 0, 0
    with planning.running():
        planner = ScanPlanner(metadata, ScanRequest(), table.manifests, planning)
        steps = [(chunk, 0) for chunk in planner.chunks(FILES_PER_STEP)]
        while steps and taken < rows:
            chunk, skip = steps.pop(0)
            tasks = ScanTasks(max_tasks=FILES_PER_STEP, files=[])
            resume = planner.plan_chunk(chunk, tasks, skip)
            if resume is not None:
                steps.insert(0, (chunk, resume))
            for data_file, deletes in tasks.files or []:
                due.check()
                if taken >= rows:
                    break
                if any(d.content == DataFileContent.EQUALITY_DELETES for d in deletes):
                    skipped_equality += 1
                    continue
                try:
                    read = _read_file(metadata, io, projected, data_file, deletes, rows - taken)
                except _OutOfBytes:
                    preview.notes.append(
                        f"The preview stopped after {preview.bytes_read:,} bytes: the next file does not fit in "
                        "server.ui_preview_max_bytes."
                    )
                    steps = []
                    break
                except CatalogError as exc:  # missing, outside the table, unreadable: said, not shown
                    preview.notes.append(f"The preview stopped: {exc.message}")
                    steps = []
                    break
                batches.append(read)
                taken += read.num_rows
    if skipped_equality:
        preview.notes.append(
            f"{skipped_equality:,} data file(s) carry equality deletes, which the preview cannot apply: "
            "their rows are not shown."
        )
    preview.complete = not steps and taken < rows and not preview.notes
    for batch in batches:
        for record in batch.slice(0, rows - len(preview.rows)).to_pylist():
            preview.rows.append([cell(record.get(name)) for name in preview.columns])
    return preview


def _read_file(
    metadata: TableMetadata,
    io: _PlannedFiles,
    projected: Schema,
    data_file: DataFile,
    deletes: list[DataFile],
    rows: int,
) -> pa.Table:
    """One data file's rows (at most ``rows``), its position deletes and deletion vectors applied."""
    io.allowed = {data_file.file_path, *(d.file_path for d in deletes)}
    task = FileScanTask(data_file, delete_files=set(deletes))
    try:
        return ArrowScan(metadata, io, projected, AlwaysTrue(), limit=rows).to_table([task])
    except (_OutOfBytes, CatalogError):
        raise
    except Exception as exc:  # a file pyarrow or pyiceberg cannot read: the boundary of the reader
        raise _Unreadable(f"A data file could not be read ({type(exc).__name__})") from exc


class _Unreadable(BadRequest):
    """A planned file could not be read as data."""
