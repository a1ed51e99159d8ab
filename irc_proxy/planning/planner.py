"""Plans one table scan: which data files (with which delete files and residual filter) a scan reads.

A plan has two steps, so that large plans can be handed out in pieces (``plan-tasks``):

1. :meth:`ScanPlanner.chunks` reads the snapshot's manifest list, drops the data manifests whose
   partition summaries cannot match the filter, and groups the rest into chunks of at most
   ``files_per_task`` files (by the manifest list's counts).
2. :meth:`ScanPlanner.plan_chunk` reads a chunk's manifests, keeps the files whose partition and
   column metrics may match, and pairs each with the delete files that apply to it (the spec's
   rules: position deletes and deletion vectors of the same partition, or naming the file, with a
   sequence number not below the file's; equality deletes of the same partition, or global, with a
   greater one) and its residual filter.

Incremental scans (``start-snapshot-id``/``end-snapshot-id``) read the files appended by the
``append`` snapshots after the start up to the end, without deletes, as Java's ``IncrementalAppendScan``.
Blocking (reads files): run it in a worker thread.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.expressions import AlwaysTrue, BooleanExpression, EqualTo
from pyiceberg.expressions.visitors import (
    _InclusiveMetricsEvaluator,
    expression_evaluator,
    inclusive_projection,
    manifest_evaluator,
    residual_evaluator_of,
)
from pyiceberg.manifest import (
    POSITIONAL_DELETE_SCHEMA,
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Operation, Snapshot
from pyiceberg.typedef import Record
from pyiceberg.types import ListType, MapType, StructType

from irc_proxy.errors import BadRequest
from irc_proxy.planning.budget import Budget
from irc_proxy.planning.content_files import FileRenderer, v3_field
from irc_proxy.planning.expressions import MAX_NODES, FilterLimits, check_filter_size, parse_filter, residual_json
from irc_proxy.planning.manifests import ManifestSource

PATH_FIELD_ID = 2147483546
"""The ``file_path`` column of position delete files (its bounds say which data files a file covers)."""


def _int(body: Mapping[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"Invalid scan request: {key} must be an integer")
    return value


def _bool(body: Mapping[str, Any], key: str, default: bool) -> bool:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BadRequest(f"Invalid scan request: {key} must be a boolean")
    return value


def _names(body: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"Invalid scan request: {key} must be a list of field names")
    if len(value) > MAX_NODES:
        raise BadRequest(f"Invalid scan request: {key} names more than {MAX_NODES} fields")
    return tuple(dict.fromkeys(value))  # each name once: what is stored with a plan stays small


DEFAULT_LIMITS = FilterLimits()
MAX_STORED_REQUEST_BYTES = 1 << 20
"""A scan request as kept with a plan (its filter within ``FilterLimits``, its names each once) at most."""


@dataclass(frozen=True)
class ScanRequest:
    """A PlanTableScanRequest, checked for shape (what it names is checked by :class:`ScanPlanner`)."""

    snapshot_id: int | None = None
    start_snapshot_id: int | None = None
    end_snapshot_id: int | None = None
    select: tuple[str, ...] | None = None
    filter: Any = None
    case_sensitive: bool = True
    use_snapshot_schema: bool = False
    stats_fields: tuple[str, ...] = ()
    min_rows_requested: int | None = None

    @classmethod
    def from_json(cls, body: Any, limits: FilterLimits | None = DEFAULT_LIMITS) -> ScanRequest:
        """Raises BadRequest. ``limits`` None: a request kept with a plan (checked when it was made)."""
        if not isinstance(body, dict):
            raise BadRequest("Invalid scan request: expected a JSON object")
        if limits is not None and body.get("filter") is not None:
            check_filter_size(body["filter"], limits)
        request = cls(
            snapshot_id=_int(body, "snapshot-id"),
            start_snapshot_id=_int(body, "start-snapshot-id"),
            end_snapshot_id=_int(body, "end-snapshot-id"),
            select=_names(body, "select"),
            filter=body.get("filter"),
            case_sensitive=_bool(body, "case-sensitive", True),
            use_snapshot_schema=_bool(body, "use-snapshot-schema", False),
            stats_fields=_names(body, "stats-fields") or (),
            min_rows_requested=_int(body, "min-rows-requested"),
        )
        if request.start_snapshot_id is not None and request.end_snapshot_id is None:
            raise BadRequest("Invalid scan request: end-snapshot-id is required with start-snapshot-id")
        if request.snapshot_id is not None and request.end_snapshot_id is not None:
            raise BadRequest("Invalid scan request: snapshot-id cannot be combined with start/end-snapshot-id")
        if request.min_rows_requested is not None and request.min_rows_requested < 0:
            raise BadRequest("Invalid scan request: min-rows-requested must not be negative")
        if limits is not None and len(json.dumps(request.to_json())) > MAX_STORED_REQUEST_BYTES:
            raise BadRequest(f"Invalid scan request: larger than {MAX_STORED_REQUEST_BYTES} bytes (filter, names)")
        return request

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "snapshot-id": self.snapshot_id,
            "start-snapshot-id": self.start_snapshot_id,
            "end-snapshot-id": self.end_snapshot_id,
            "select": list(self.select) if self.select is not None else None,
            "filter": self.filter,
            "case-sensitive": self.case_sensitive,
            "use-snapshot-schema": self.use_snapshot_schema,
            "stats-fields": list(self.stats_fields),
            "min-rows-requested": self.min_rows_requested,
        }
        return {k: v for k, v in body.items() if v is not None}


def _delete_key(delete: dict[str, Any]) -> tuple[str, int | None]:
    """One delete file entry: deletion vectors of several data files share a Puffin file, at different offsets."""
    return delete["file-path"], delete.get("content-offset")


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))


@dataclass(frozen=True)
class Residual:
    """A task's residual filter as JSON and its encoded size; ``json`` None: not sent (see ``ScanPlanner``)."""

    json: Any
    size: int = 0
    plain: bool = False
    """The residual is ``true``: every row of the file matches."""


NO_RESIDUAL = Residual(None, 0, True)
WHOLE_FILTER = Residual(None)
MIN_REPEATED_RESIDUAL_BYTES = 2048


def repeated_residual_bytes(max_response_bytes: int) -> int:
    """Up to what size a residual equal to the whole filter is repeated in each task (omitted above it).

    The spec says a client without a residual applies the original filter, so omitting it is always correct;
    but pyiceberg 0.12's ``count()`` takes a missing residual for ``true`` (it adds the file's record count).
    Ordinary filters therefore keep their residual, as long as an answer still holds about a thousand tasks
    with it: 16 KiB under the default 16 MiB answer bound (a 1,000-value ``in`` of short strings, the largest
    list ``max_filter_in_values`` admits), never less than 2 KiB. A larger filter is not repeated in every task
    (a 1 MB filter times 2,000 files was a 2 GB answer)."""
    return max(MIN_REPEATED_RESIDUAL_BYTES, max_response_bytes // 1024)


@dataclass
class ScanTasks:
    """File scan tasks and the delete files they reference, as the spec's ScanTasks JSON, bounded: once
    ``max_tasks`` tasks or about ``max_bytes`` of JSON are in, it is :attr:`full` (one task at least)."""

    max_tasks: int = 1 << 62
    max_bytes: int = 1 << 62
    tasks: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[dict[str, Any]] = field(default_factory=list)
    plain_rows: int = 0
    """Rows of the tasks that need neither a residual filter nor deletes (for ``min-rows-requested``)."""
    bytes: int = 0
    """The JSON size of what is in, estimated (exact but for separators)."""
    _delete_index: dict[tuple[str, int | None], int] = field(default_factory=dict)
    files: list[tuple[DataFile, list[DataFile]]] | None = None
    """Set to a list to also keep each task's data file and delete files as pyiceberg objects (for a reader on the
    server: the console's table preview); None keeps only the JSON."""

    @property
    def full(self) -> bool:
        return len(self.tasks) >= self.max_tasks or self.bytes >= self.max_bytes

    def add(self, data: dict[str, Any], deletes: Sequence[dict[str, Any]], residual: Residual) -> None:
        references = []
        for delete in deletes:
            key = _delete_key(delete)
            if key not in self._delete_index:
                self._delete_index[key] = len(self.deletes)
                self.deletes.append(delete)
                self.bytes += _size(delete) + 1
            references.append(self._delete_index[key])
        task: dict[str, Any] = {"data-file": data}
        self.bytes += _size(data) + 16
        if references:
            task["delete-file-references"] = references
            self.bytes += 30 + 8 * len(references)
        if residual.json is not None:
            task["residual-filter"] = residual.json
            self.bytes += residual.size + 20
        if residual.plain and not references:
            self.plain_rows += int(data["record-count"])
        self.tasks.append(task)

    def body(self) -> dict[str, Any]:
        return {"file-scan-tasks": self.tasks, "delete-files": self.deletes} if self.tasks else {}


class _Deletes:
    """The delete files of a snapshot, indexed for finding those that apply to one data file."""

    def __init__(self) -> None:
        self._by_path: dict[str, list[ManifestEntry]] = {}
        self._positional: dict[tuple[int, Record], list[ManifestEntry]] = {}
        self._equality: dict[tuple[int, Record], list[ManifestEntry]] = {}
        self._global_equality: list[ManifestEntry] = []
        self.empty = True

    def add(self, entry: ManifestEntry, spec: PartitionSpec | None) -> None:
        self.empty = False
        delete = entry.data_file
        key = (delete.spec_id, delete.partition)
        if delete.content == DataFileContent.EQUALITY_DELETES:
            if spec is not None and spec.is_unpartitioned():
                self._global_equality.append(entry)
            else:
                self._equality.setdefault(key, []).append(entry)
            return
        referenced = v3_field(delete, "referenced_data_file") or _single_path(delete)
        if referenced:
            self._by_path.setdefault(referenced, []).append(entry)
        else:
            self._positional.setdefault(key, []).append(entry)

    def for_entry(self, entry: ManifestEntry) -> list[DataFile]:
        if self.empty:
            return []
        data = entry.data_file
        sequence = entry.sequence_number or 0
        key = (data.spec_id, data.partition)
        found = [d.data_file for d in self._by_path.get(data.file_path, ()) if (d.sequence_number or 0) >= sequence]
        found += [
            d.data_file
            for d in self._positional.get(key, ())
            if (d.sequence_number or 0) >= sequence and _may_cover(d.data_file, data.file_path)
        ]
        found += [
            d.data_file
            for d in (*self._equality.get(key, ()), *self._global_equality)
            if (d.sequence_number or 0) > sequence
        ]
        return found


def _single_path(delete: DataFile) -> str | None:
    """The one data file a position delete file covers, when its path bounds are equal."""
    lower, upper = (delete.lower_bounds or {}).get(PATH_FIELD_ID), (delete.upper_bounds or {}).get(PATH_FIELD_ID)
    if lower and lower == upper:
        try:
            return bytes(lower).decode()
        except UnicodeDecodeError:
            return None
    return None


def _may_cover(delete: DataFile, path: str) -> bool:
    bounds = delete.lower_bounds or {}
    if PATH_FIELD_ID not in bounds or PATH_FIELD_ID not in (delete.upper_bounds or {}):
        return True
    evaluator = _InclusiveMetricsEvaluator(POSITIONAL_DELETE_SCHEMA, EqualTo("file_path", path))  # type: ignore[call-arg,arg-type]
    return bool(evaluator.eval(delete))


def _descendant_ids(schema: Schema, field_id: int) -> list[int]:
    ids = [field_id]
    field_type = schema.find_type(field_id)
    children: Iterable[int] = ()
    if isinstance(field_type, StructType):
        children = (f.field_id for f in field_type.fields)
    elif isinstance(field_type, ListType):
        children = (field_type.element_id,)
    elif isinstance(field_type, MapType):
        children = (field_type.key_id, field_type.value_id)
    for child in children:
        ids.extend(_descendant_ids(schema, child))
    return ids


Chunk = tuple[int, int]
"""A piece of a plan: the data manifests from ``start`` to ``end`` (exclusive) in the manifest list's order."""


class ScanPlanner:
    """One scan of one table's metadata (see the module docstring). Raises BadRequest for what the request names,
    and PlanTooCostly once ``budget`` is spent (checked per manifest, partition and manifest entry)."""

    def __init__(
        self,
        metadata: TableMetadata,
        request: ScanRequest,
        source: ManifestSource,
        budget: Budget | None = None,
        repeated_residual_bytes: int = MIN_REPEATED_RESIDUAL_BYTES,
    ) -> None:
        self._metadata, self._request, self._source = metadata, request, source
        self._repeated_residual_bytes = repeated_residual_bytes
        self._budget = budget or Budget(float("inf"), float("inf"))
        self.snapshot = self._snapshot()
        self.appended = self._appended()
        self.schema = self._schema()
        case_sensitive = request.case_sensitive
        for name in request.select or ():
            self._find(name, "select")
        stats_ids = [
            i for name in request.stats_fields for i in _descendant_ids(self.schema, self._find(name, "stats-fields"))
        ]
        self.row_filter: BooleanExpression = (
            AlwaysTrue() if request.filter is None else parse_filter(request.filter, self.schema, case_sensitive)
        )
        self._always = isinstance(self.row_filter, AlwaysTrue)
        self._specs = metadata.specs()
        self._renderer = FileRenderer(self.schema, self._specs, stats_ids)
        self._projections: dict[int, BooleanExpression] = {}
        self._manifest_evaluators: dict[int, Any] = {}
        self._partition_evaluators: dict[int, Any] = {}
        self._residual_evaluators: dict[int, Any] = {}
        self._residuals: dict[tuple[int, Record], Residual] = {}
        self._whole: tuple[str, Residual] | None = None
        self._metrics: Any = None
        self._manifests: list[ManifestFile] | None = None
        self._delete_files: _Deletes | None = None
        self._rendered_deletes: dict[tuple[str, int | None], dict[str, Any]] = {}

    # What is scanned ------------------------------------------------------------------------------------
    def _snapshot(self) -> Snapshot | None:
        request, metadata = self._request, self._metadata
        wanted = request.end_snapshot_id if request.end_snapshot_id is not None else request.snapshot_id
        if wanted is None:
            return metadata.current_snapshot()
        snapshot = metadata.snapshot_by_id(wanted)
        if snapshot is None:
            raise BadRequest(f"Invalid scan request: the table has no snapshot {wanted}")
        return snapshot

    def _appended(self) -> list[Snapshot] | None:
        """An incremental scan's append snapshots after the start, up to the end (None: not incremental)."""
        start = self._request.start_snapshot_id
        if self._request.end_snapshot_id is None:
            return None
        if start is not None and self._metadata.snapshot_by_id(start) is None:
            raise BadRequest(f"Invalid scan request: the table has no snapshot {start}")
        chain: list[Snapshot] = []
        current = self.snapshot
        while current is not None and current.snapshot_id != start:
            chain.append(current)
            parent = current.parent_snapshot_id
            current = None if parent is None else self._metadata.snapshot_by_id(parent)
        if start is not None and current is None:
            raise BadRequest(
                f"Invalid scan request: snapshot {start} is not an ancestor of snapshot {self._request.end_snapshot_id}"
            )
        return [s for s in chain if s.summary is not None and s.summary.operation == Operation.APPEND]

    def _schema(self) -> Schema:
        metadata = self._metadata
        if self._request.use_snapshot_schema and self.snapshot is not None and self.snapshot.schema_id is not None:
            for schema in metadata.schemas:
                if schema.schema_id == self.snapshot.schema_id:
                    return schema
        return metadata.schema()

    def _find(self, name: str, what: str) -> int:
        try:
            return self.schema.find_field(name, self._request.case_sensitive).field_id
        except ValueError:
            raise BadRequest(f"Invalid scan request: {what} names no column {name!r}") from None

    # Step 1: chunks of data manifests -------------------------------------------------------------------
    def _manifest_files(self) -> list[ManifestFile]:
        """The snapshot's manifests (an incremental scan's added data manifests), each once, in a stable order."""
        if self._manifests is None:
            found: dict[str, ManifestFile] = {}
            if self.appended is not None:
                for snapshot in self.appended:
                    for manifest in self._source.manifest_list(snapshot.manifest_list):
                        if (
                            manifest.added_snapshot_id == snapshot.snapshot_id
                            and manifest.content == ManifestContent.DATA
                        ):
                            found.setdefault(manifest.manifest_path, manifest)
            elif self.snapshot is not None:
                for manifest in self._source.manifest_list(self.snapshot.manifest_list):
                    found.setdefault(manifest.manifest_path, manifest)
            self._manifests = list(found.values())
        return self._manifests

    def _projection(self, spec_id: int) -> BooleanExpression:
        if spec_id not in self._projections:
            spec = self._specs[spec_id]
            self._projections[spec_id] = inclusive_projection(self.schema, spec, self._request.case_sensitive)(
                self.row_filter
            )
        return self._projections[spec_id]

    def _may_match(self, manifest: ManifestFile) -> bool:
        if self._always:
            return True
        spec_id = manifest.partition_spec_id
        spec = self._specs.get(spec_id)
        if spec is None:
            return True
        if spec_id not in self._manifest_evaluators:  # binding the filter is the cost: once per spec
            self._manifest_evaluators[spec_id] = manifest_evaluator(
                spec, self.schema, self._projection(spec_id), self._request.case_sensitive
            )
        self._budget.check()
        return bool(self._manifest_evaluators[spec_id](manifest))

    def _wanted(self, manifest: ManifestFile) -> bool:
        return manifest.content == ManifestContent.DATA and self._may_match(manifest)

    def chunks(self, files_per_task: int) -> list[Chunk]:
        """The data manifests that may match, in chunks of at most ``files_per_task`` files (by the list's counts)."""
        chunks: list[Chunk] = []
        start: int | None = None
        files = 0
        for index, manifest in enumerate(self._manifest_files()):
            if not self._wanted(manifest):
                continue
            count = max(1, (manifest.added_files_count or 0) + (manifest.existing_files_count or 0))
            if start is not None and files + count > files_per_task:
                chunks.append((start, index))
                start, files = None, 0
            if start is None:
                start = index
            files += count
        if start is not None:
            chunks.append((start, len(self._manifest_files())))
        return chunks

    # Step 2: the tasks of one chunk ---------------------------------------------------------------------
    def _deletes(self) -> _Deletes:
        if self._delete_files is None:
            self._delete_files = self._index_deletes()
        return self._delete_files

    def _index_deletes(self) -> _Deletes:
        deletes = _Deletes()
        if self.appended is not None:
            return deletes
        for manifest in self._manifest_files():
            if manifest.content != ManifestContent.DELETES or not self._may_match(manifest):
                continue
            spec = self._specs.get(manifest.partition_spec_id)
            evaluate = self._partition_evaluator(manifest.partition_spec_id)
            for entry in self._source.entries(manifest):
                self._budget.check()
                if evaluate(entry.data_file.partition):
                    deletes.add(entry, spec)
        return deletes

    def _partition_evaluator(self, spec_id: int) -> Any:
        if spec_id not in self._partition_evaluators:
            spec = self._specs.get(spec_id)
            if spec is None or self._always:
                self._partition_evaluators[spec_id] = lambda _partition: True
            else:
                partition_schema = Schema(*spec.partition_type(self.schema).fields)
                self._partition_evaluators[spec_id] = expression_evaluator(
                    partition_schema, self._projection(spec_id), self._request.case_sensitive
                )
        return self._partition_evaluators[spec_id]

    def _metrics_evaluator(self) -> Any:
        if self._metrics is None:
            self._metrics = _InclusiveMetricsEvaluator(self.schema, self.row_filter, self._request.case_sensitive).eval
        return self._metrics

    def plan_chunk(self, chunk: Chunk, into: ScanTasks, skip: int = 0) -> int | None:
        """Add the file scan tasks of ``chunk`` to ``into``, from its ``skip``-th manifest entry on, until ``into``
        is full. Where to resume (an entry number for ``skip``) when it filled up before the chunk's end, else None.
        """
        manifests = self._manifest_files()
        deletes = self._deletes()
        appended = None if self.appended is None else {s.snapshot_id for s in self.appended}
        position = 0
        for manifest in manifests[chunk[0] : chunk[1]]:
            if not self._wanted(manifest):
                continue
            entries = self._source.entries(manifest)
            if position + len(entries) <= skip:
                position += len(entries)
                continue
            spec_id = manifest.partition_spec_id
            in_partition = self._partition_evaluator(spec_id)
            for entry in entries:
                position += 1
                if position <= skip:
                    continue
                self._budget.check()
                data = entry.data_file
                if data.content != DataFileContent.DATA:
                    continue
                if appended is not None and (
                    entry.status != ManifestEntryStatus.ADDED or entry.snapshot_id not in appended
                ):
                    continue
                if not self._always and not (in_partition(data.partition) and self._metrics_evaluator()(data)):
                    continue
                delete_files = deletes.for_entry(entry)
                rendered_deletes = [self._render_delete(d) for d in delete_files]
                into.add(self._renderer.render(data), rendered_deletes, self._residual(spec_id, data.partition))
                if into.files is not None:
                    into.files.append((data, delete_files))
                if into.full:
                    return position if self._more_after(chunk, manifest, entry) else None
        return None

    def _more_after(self, chunk: Chunk, manifest: ManifestFile, entry: ManifestEntry) -> bool:
        """Whether ``chunk`` has entries after ``entry`` (of ``manifest``)."""
        manifests = self._manifest_files()
        entries = self._source.entries(manifest)
        if entries and entries[-1] is not entry:
            return True
        index = manifests.index(manifest, chunk[0], chunk[1])
        return any(self._wanted(m) and self._source.entries(m) for m in manifests[index + 1 : chunk[1]])

    def _render_delete(self, delete: DataFile) -> dict[str, Any]:
        key = (delete.file_path, v3_field(delete, "content_offset"))
        rendered = self._rendered_deletes.get(key)
        if rendered is None:
            rendered = self._rendered_deletes[key] = self._renderer.render(delete)
        return rendered

    def _residual(self, spec_id: int, partition: Record) -> Residual:
        """The residual of the files of one partition, computed once; ``true`` and a large whole filter are not sent
        (see ``repeated_residual_bytes``)."""
        if self._always:
            return NO_RESIDUAL
        key = (spec_id, partition)
        found = self._residuals.get(key)
        if found is not None:
            return found
        self._budget.check()
        spec = self._specs.get(spec_id)
        if spec is None:
            expression = self.row_filter
        else:
            if spec_id not in self._residual_evaluators:
                self._residual_evaluators[spec_id] = residual_evaluator_of(
                    spec, self.row_filter, self._request.case_sensitive, self.schema
                )
            expression = self._residual_evaluators[spec_id].residual_for(partition)
        if isinstance(expression, AlwaysTrue):
            found = NO_RESIDUAL
        else:
            value = residual_json(expression, self.schema)
            text = json.dumps(value, separators=(",", ":"))
            whole_text, whole = self._whole_filter()
            found = whole if text == whole_text else Residual(value, len(text))
        self._residuals[key] = found
        return found

    def stored_request(self) -> dict[str, Any]:
        """The request to keep with the plan, its filter as simplified here (cheaper to read again per plan task:
        an ``or`` of 3,300 ``eq`` is one ``in``). Read back with ``ScanRequest.from_json(..., None)``."""
        body = self._request.to_json()
        if self._request.filter is not None:
            body["filter"] = residual_json(self.row_filter, self.schema)
        return body

    def _whole_filter(self) -> tuple[str, Residual]:
        """The whole filter as a residual: sent in each task while small, else left out (the client applies it)."""
        if self._whole is None:
            value = residual_json(self.row_filter, self.schema)
            text = json.dumps(value, separators=(",", ":"))
            residual = Residual(value, len(text)) if len(text) <= self._repeated_residual_bytes else WHOLE_FILTER
            self._whole = (text, residual)
        return self._whole
