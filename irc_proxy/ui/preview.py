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
Everything runs in a console worker slot within the page's time budget (``ui.budget``), checked between files
and decoded batches.

Decoding is bounded too (``ui.preview_reads``): a data file's rows are decoded in small batches only as far
as they fit in ``server.ui_preview_max_bytes`` (Parquet can pack gigabytes into a few hundred bytes), and
its deletes are read only for the rows kept and applied by position here: position delete files and
deletion vectors; equality deletes are not (pyiceberg cannot): a data file with equality deletes is not
shown, and the page says so. Columns are mapped by field id across schema changes by pyiceberg's
``ArrowScan``. At most ``MAX_COLUMNS`` top-level columns are read (a 10,000-column table shows its first
ones and says how many more there are). Values are shown as text, cut at ``MAX_CHARS`` characters; binary
as a hex prefix; the template escapes everything.

The catalog opens the table (``Catalog.open_table``) wherever it is served: a remote catalog's table is read
with the storage access its upstream vends to the proxy, confined and bounded the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io import FileIO, InputFile, OutputFile
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask
from pyiceberg.table.metadata import TableMetadata
from pyroaring import BitMap
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

if TYPE_CHECKING:
    from irc_proxy.ui import preview_reads

MAX_COLUMNS = 50
"""Top-level columns read and shown at most."""
MAX_CHARS = 200
"""Characters of one value shown at most."""
HEX_BYTES = 32
"""Bytes of a binary value shown (as hex) at most."""
DELETED_ROWS_READ = 1_000_000
"""Rows of a data file read past the ones shown, at most, for its deletes to remove (as its delete files declare)."""
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
    the preview's remaining bytes (``read``), then handed to pyarrow as the preview decided (``served``)."""

    def __init__(self, table: OpenedTable, preview: Preview, max_bytes: int) -> None:
        super().__init__()
        self._table, self._preview, self._max = table, preview, max_bytes
        self.max_decoded = max_bytes
        """What one data file's rows, or one delete file's positions, may decode to (``ui.preview_reads``)."""
        self.allowed: set[str] = set()
        self.served: dict[str, bytes] = {}

    def read(self, location: str, what: str) -> bytes:
        """The whole file, if the plan names it, the table owns it and it fits in the bytes left."""
        if location not in self.allowed or not self._table.owns(location):
            raise Forbidden("The preview reads only the files its plan names inside the table's locations")
        left = self._max - self._preview.bytes_read
        if left <= 0:
            raise _OutOfBytes
        try:
            data = self._table.read(location, what, left)
        except FileTooLarge:
            raise _OutOfBytes from None
        self._preview.bytes_read += len(data)
        self._preview.files_read += 1
        return data

    def new_input(self, location: str) -> InputFile:
        if location not in self.served:
            raise Forbidden("The preview reads only the files its plan names inside the table's locations")
        return MemoryInputFile(location, self.served[location])

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
    taken, skipped_equality, cut_files = 0, 0, 0
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
                    read, cut = _read_file(metadata, io, projected, (data_file, deletes), rows - taken, due)
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
                cut_files += cut
                taken += len(read)
                preview.rows += [[cell(record.get(name)) for name in preview.columns] for record in read]
    if skipped_equality:
        preview.notes.append(
            f"{skipped_equality:,} data file(s) carry equality deletes, which the preview cannot apply: "
            "their rows are not shown."
        )
    if cut_files:
        preview.notes.append(
            f"{cut_files:,} data file(s) were read only in part (as far as their rows decode within "
            "server.ui_preview_max_bytes, or their deletes declare): their later rows are not shown."
        )
    preview.complete = not steps and taken < rows and not preview.notes
    return preview


def _read_file(
    metadata: TableMetadata,
    io: _PlannedFiles,
    projected: Schema,
    planned: tuple[DataFile, list[DataFile]],
    rows: int,
    due: Deadline,
) -> tuple[list[dict[str, Any]], bool]:
    """One data file's first ``rows`` rows (as Python values), its position deletes and deletion vectors
    applied, and whether the file was cut short at the preview's decoded budget (``ui.preview_reads``)."""
    # deferred: pyarrow (~0.3 s) is needed only once a preview reads a file, not to serve the console's routes
    import pyarrow as pa
    from pyiceberg.io.pyarrow import ArrowScan

    from irc_proxy.ui import preview_reads

    data_file, deletes = planned
    path = data_file.file_path
    if data_file.file_format != FileFormat.PARQUET:
        raise _Unreadable(f"The preview reads Parquet data files only, not {data_file.file_format}")
    io.allowed = {path, *(d.file_path for d in deletes)}
    enough = rows + min(sum(d.record_count for d in deletes), DELETED_ROWS_READ)
    data = io.read(path, "Data file")
    prefix = preview_reads.data_prefix(data, path, _wanted(metadata, projected), io.max_decoded, enough, due.check)
    gone = BitMap()
    for delete in deletes:
        due.check()
        gone |= preview_reads.deleted_positions(
            io.read(delete.file_path, "Delete file"), delete, path, prefix.rows, io.max_decoded
        )
    io.served = {path: prefix.data}
    try:
        table = ArrowScan(metadata, io, projected, AlwaysTrue(), limit=None if gone else rows).to_table(
            [FileScanTask(data_file)]
        )
    except (_OutOfBytes, CatalogError):
        raise
    except Exception as exc:  # a file pyarrow or pyiceberg cannot read: the boundary of the reader
        raise _Unreadable(f"A data file could not be read ({type(exc).__name__})") from exc
    finally:
        io.served = {}
    shown = preview_reads.first_live(gone, table.num_rows, rows)
    cut = prefix.over_budget or (not prefix.whole and len(shown) < rows)
    return table.take(pa.array(shown, pa.uint64())).to_pylist(), cut


def _wanted(metadata: TableMetadata, projected: Schema) -> preview_reads.Wanted:
    """The columns shown, by field id and by every name the table's name mapping gives them."""
    from irc_proxy.ui import preview_reads  # deferred with pyarrow (see _read_file)

    ids = frozenset(field.field_id for field in projected.fields)
    names = {field.name for field in projected.fields}
    mapping = metadata.name_mapping()
    for mapped in mapping or []:
        if mapped.field_id in ids:
            names.update(mapped.names)
    return preview_reads.Wanted(ids, frozenset(names))


class _Unreadable(BadRequest):
    """A planned file could not be read as data."""
