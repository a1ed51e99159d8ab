"""Table commits as data plus pure functions: parse, check requirements, apply updates.

Requirements are checked against the table's *current* metadata with Iceberg Java's exact
failure messages, then the updates are applied with pyiceberg's update machinery. Java clients
omit ``identifier`` in commit bodies, so requirements and updates are parsed element by element.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSnapshotUpdate,
    AddSortOrderUpdate,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    RemovePartitionStatisticsUpdate,
    RemoveSnapshotsUpdate,
    RemoveStatisticsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetPartitionStatisticsUpdate,
    SetStatisticsUpdate,
    TableRequirement,
    TableUpdate,
    update_table_metadata,
)

from irc_proxy.errors import BadRequest, CommitFailed, Unsupported
from irc_proxy.handling.input_errors import INPUT_ERRORS, clip, explain
from irc_proxy.handling.tables.format_v3 import TABLE_UPDATE, ServedTableMetadata, as_served
from irc_proxy.handling.tables.property_runs import coalesce_property_runs

_REQUIREMENT = TypeAdapter(TableRequirement)


def parse_requirements(raw: Any) -> list[TableRequirement]:
    """Parse a JSON list of requirements; unknown types and bad fields raise BadRequest."""
    return [_parse(_REQUIREMENT, item, "requirement", "type") for item in _as_list(raw, "requirements")]


def parse_updates(raw: Any) -> list[TableUpdate]:
    """Parse a JSON list of table updates; unknown actions and bad fields raise BadRequest."""
    return [_parse(TABLE_UPDATE, item, "update", "action") for item in _as_list(raw, "updates")]


def _as_list(raw: Any, field: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadRequest(f"Invalid commit: {field} must be a list")
    return raw


def _parse(adapter: TypeAdapter[Any], item: Any, kind: str, tag: str) -> Any:
    if not isinstance(item, dict):
        raise BadRequest(f"Invalid {kind}: expected an object, got {type(item).__name__}")
    name = clip(repr(item.get(tag)), 100)
    try:
        return adapter.validate_python(item)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
            raise BadRequest(f"Unsupported {kind} {tag}: {name}") from None
        where = clip(".".join(str(p) for p in first["loc"][1:]), 100)
        raise BadRequest(f"Invalid {kind} {name}: {where}: {clip(first['msg'])}") from None
    except INPUT_ERRORS as exc:  # pyiceberg's validators: ValidationError, KeyError for missing keys, ...
        raise BadRequest(f"Invalid {kind} {name}: {explain(exc)}") from None


def is_create(requirements: Sequence[TableRequirement]) -> bool:
    """Whether the commit creates the table (a staged create or create transaction)."""
    return any(isinstance(r, AssertCreate) for r in requirements)


def check_requirements(requirements: Sequence[TableRequirement], base: TableMetadata | None) -> None:
    """Raise CommitFailed, with Iceberg Java's message, for the first requirement that fails."""
    for requirement in requirements:
        message = _failure(requirement, base)
        if message is not None:
            raise CommitFailed(f"Requirement failed: {message}")


def _failure(r: TableRequirement, base: TableMetadata | None) -> str | None:  # noqa: PLR0911
    if isinstance(r, AssertCreate):
        return "table already exists" if base is not None else None
    if base is None:
        return "table does not exist"
    if isinstance(r, AssertTableUUID):
        return None if r.uuid == base.table_uuid else f"UUID does not match: expected {base.table_uuid} != {r.uuid}"
    if isinstance(r, AssertRefSnapshotId):
        ref = base.refs.get(r.ref)
        if ref is not None:
            kind = ref.snapshot_ref_type.value
            if r.snapshot_id is None:
                return f"{kind} {r.ref} was created concurrently"
            if r.snapshot_id != ref.snapshot_id:
                return f"{kind} {r.ref} has changed: expected id {r.snapshot_id} != {ref.snapshot_id}"
            return None
        return None if r.snapshot_id is None else f"branch or tag {r.ref} is missing, expected {r.snapshot_id}"
    if isinstance(r, AssertLastAssignedFieldId):
        found = base.last_column_id
        return (
            None
            if found == r.last_assigned_field_id
            else _changed("last assigned field id", r.last_assigned_field_id, found)
        )
    if isinstance(r, AssertCurrentSchemaId):
        found = base.current_schema_id
        return None if found == r.current_schema_id else _changed("current schema", r.current_schema_id, found)
    if isinstance(r, AssertLastAssignedPartitionId):
        partition_id = base.last_partition_id
        expected = r.last_assigned_partition_id
        return None if partition_id == expected else _changed("last assigned partition id", expected, partition_id)
    if isinstance(r, AssertDefaultSpecId):
        found = base.default_spec_id
        return None if found == r.default_spec_id else _changed("default partition spec", r.default_spec_id, found)
    if isinstance(r, AssertDefaultSortOrderId):
        found = base.default_sort_order_id
        return (
            None if found == r.default_sort_order_id else _changed("default sort order", r.default_sort_order_id, found)
        )
    raise BadRequest(f"Unsupported requirement type: {r.type}")


def _changed(what: str, expected: object, found: object) -> str:
    return f"{what} changed: expected id {expected} != {found}"


def apply_updates(
    base: TableMetadata | None, updates: Sequence[TableUpdate], base_location: str | None
) -> TableMetadata:
    """Apply ``updates`` to ``base`` (or to empty metadata for a create) with pyiceberg's update machinery
    (with the v3 semantics of ``format_v3``); a create's result is validated as a whole, as pyiceberg does.

    Raises:
        BadRequest: an update is invalid for this metadata.
        CommitFailed: a v3 snapshot's ``first-row-id`` is behind the table's ``next-row-id``.
        Unsupported: pyiceberg cannot apply an update.
    """
    start = base if base is not None else MetastoreCatalog._empty_table_metadata()
    kept = _drop_redundant_statistics_removals(base, updates)
    effective = tuple(_assign_ids(start, coalesce_property_runs(start.properties, kept)))
    try:
        metadata = update_table_metadata(
            base_metadata=start, updates=effective, enforce_validation=False, metadata_location=base_location
        )
        if base is None:  # a new table: every field checked, as pyiceberg's enforce_validation does
            metadata = ServedTableMetadata.model_validate(metadata.model_dump()).root
    except NotImplementedError as exc:
        raise Unsupported(f"Cannot apply table update: {clip(str(exc))}") from None
    except StopIteration:  # TableMetadata.spec() / sort_order() / schema(): the current one is not there
        raise BadRequest(
            "Cannot apply table update: the current schema, partition spec or sort order is missing"
        ) from None
    except INPUT_ERRORS as exc:
        raise BadRequest(f"Cannot apply table update: {explain(exc)}") from None
    return as_served(metadata)


def _drop_redundant_statistics_removals(
    base: TableMetadata | None, updates: Sequence[TableUpdate]
) -> list[TableUpdate]:
    """Make remove-snapshots and remove-(partition-)statistics idempotent, as Iceberg Java is.

    Spark's expire_snapshots sends remove-snapshots and then remove-statistics for the same
    snapshot; pyiceberg already dropped the statistics with the snapshot and would raise.
    """
    snapshots = {s.snapshot_id for s in base.snapshots} if base else set()
    stats = {s.snapshot_id for s in base.statistics} if base else set()
    partition_stats = {s.snapshot_id for s in base.partition_statistics} if base else set()
    kept: list[TableUpdate] = []
    for original in updates:
        update = original
        if isinstance(update, SetStatisticsUpdate):
            stats.add(update.statistics.snapshot_id)
        elif isinstance(update, SetPartitionStatisticsUpdate):
            partition_stats.add(update.partition_statistics.snapshot_id)
        elif isinstance(update, AddSnapshotUpdate):
            snapshots.add(update.snapshot.snapshot_id)
        elif isinstance(update, RemoveSnapshotsUpdate):
            present = [i for i in update.snapshot_ids if i in snapshots]
            if not present:
                continue
            snapshots -= set(present)
            stats -= set(present)
            # pyiceberg drops only the statistics of removed snapshots; Java drops partition statistics too.
            kept.append(update.model_copy(update={"snapshot_ids": present}))
            kept += [
                RemovePartitionStatisticsUpdate.model_validate({"snapshot-id": i})
                for i in present
                if i in partition_stats
            ]
            partition_stats -= set(present)
            continue
        elif isinstance(update, RemoveStatisticsUpdate):
            if update.snapshot_id not in stats:
                continue
            stats.discard(update.snapshot_id)
        elif isinstance(update, RemovePartitionStatisticsUpdate):
            if update.snapshot_id not in partition_stats:
                continue
            partition_stats.discard(update.snapshot_id)
        kept.append(update)
    return kept


def _assign_ids(base: TableMetadata, updates: Sequence[TableUpdate]) -> list[TableUpdate]:
    """Give added schemas, partition specs and sort orders their ids as Iceberg Java's
    ``TableMetadata.Builder`` does, whatever id the client put in the update.

    An added object identical to an existing one reuses its id (the update is dropped); a new one gets
    the highest id + 1. ``-1`` ("last added") in set-current-schema / set-default-spec /
    set-default-sort-order becomes that id. pyiceberg would append the object with the client's id,
    which a commit re-based on newer metadata (server-side retry, concurrent replace transactions)
    turns into a duplicate id (schemas, specs) or a 400 (sort orders). Unlike Java, "last added" also
    resolves to a reused id instead of failing.
    """
    # Each added object is looked up by content in a dict (a scan per update made 10k updates cost minutes).
    schemas = _Added(((_schema_key(s), s.schema_id) for s in base.schemas), base.current_schema_id)
    specs = _Added(((_spec_key(s), s.spec_id) for s in base.partition_specs), 0)
    orders = _Added(((tuple(o.fields), o.order_id) for o in base.sort_orders), 1)
    result: list[TableUpdate] = []
    for update in updates:
        if isinstance(update, AddSchemaUpdate):
            schema_id = schemas.add(_schema_key(update.schema_))
            if schema_id is None:
                continue
            update = update.model_copy(update={"schema_": update.schema_.model_copy(update={"schema_id": schema_id})})  # noqa: PLW2901
        elif isinstance(update, AddPartitionSpecUpdate):
            spec_id = specs.add(_spec_key(update.spec))
            if spec_id is None:
                continue
            update = update.model_copy(update={"spec": update.spec.model_copy(update={"spec_id": spec_id})})  # noqa: PLW2901
        elif isinstance(update, AddSortOrderUpdate):
            order = update.sort_order
            order_id = orders.add_unsorted() if order.is_unsorted else orders.add(tuple(order.fields))
            if order_id is None:
                continue
            update = update.model_copy(update={"sort_order": order.model_copy(update={"order_id": order_id})})  # noqa: PLW2901
        elif isinstance(update, SetCurrentSchemaUpdate) and update.schema_id == -1 and schemas.last is not None:
            update = update.model_copy(update={"schema_id": schemas.last})  # noqa: PLW2901
        elif isinstance(update, SetDefaultSpecUpdate) and update.spec_id == -1 and specs.last is not None:
            update = update.model_copy(update={"spec_id": specs.last})  # noqa: PLW2901
        elif isinstance(update, SetDefaultSortOrderUpdate) and update.sort_order_id == -1 and orders.last is not None:
            update = update.model_copy(update={"sort_order_id": orders.last})  # noqa: PLW2901
        result.append(update)
    return result


class _Added:
    """Schemas, partition specs or sort orders of one table by content, as ``_assign_ids`` numbers them."""

    def __init__(self, existing: Iterable[tuple[Hashable | None, int]], lowest_new: int) -> None:
        self.ids: dict[Hashable, int] = {}  # content -> the first id with it
        self.taken: set[int] = set()
        for key, object_id in existing:
            self.taken.add(object_id)
            if key is not None:
                self.ids.setdefault(key, object_id)
        self.next = max([lowest_new, *(i + 1 for i in self.taken)])
        self.last: int | None = None
        """The id of the object added last (what ``-1`` means in set-current-schema and the like)."""

    def add(self, key: Hashable | None) -> int | None:
        """The id for an added object with content ``key``; None when an existing one is reused."""
        same = None if key is None else self.ids.get(key)
        if same is not None:
            self.last = same
            return None
        self.last, self.next = self.next, self.next + 1
        self.taken.add(self.last)
        if key is not None:
            self.ids[key] = self.last
        return self.last

    def add_unsorted(self) -> int | None:
        """The unsorted order is always id 0 (reused when the table has one)."""
        self.last = 0
        if 0 in self.taken:
            return None
        self.taken.add(0)
        return 0


def _schema_key(schema: Schema) -> Hashable | None:
    """What ``Schema.__eq__`` compares: the columns and the identifier field ids (in order); None for a schema
    without columns, which ``Schema.__eq__`` finds equal to nothing, not even itself."""
    return (tuple(schema.columns), tuple(schema.identifier_field_ids)) if schema.columns else None


def _spec_key(spec: PartitionSpec) -> tuple[tuple[int, str, str], ...]:
    """What Java's ``PartitionSpec.compatibleWith`` compares: each field's source, transform and name."""
    return tuple((f.source_id, str(f.transform), f.name) for f in spec.fields)
