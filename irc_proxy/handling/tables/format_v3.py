"""Format version 3 table metadata: the model we read and write, and the v3 table updates.

pyiceberg 0.12 parses v3 metadata but refuses to serialise it, drops ``encryption-keys`` and a
snapshot's ``key-id``, refuses to upgrade a table to v3, leaves a new v3 table without ``next-row-id``,
and answers a stale ``first-row-id`` with a ValueError. This module closes those gaps and nothing
else, so the rest of the server keeps using pyiceberg's update machinery:

- ``TableMetadataV3`` (a pyiceberg ``TableMetadataV3``) keeps the encryption keys and snapshot key ids,
  requires ``next-row-id``, and serialises field for field as the spec's v3 JSON.
- ``TABLE_UPDATE`` parses the spec's table updates: pyiceberg's, with ``add-snapshot`` keeping
  ``key-id``, plus ``add-encryption-key`` and ``remove-encryption-key``.
- ``initial-default``/``write-default`` of nanosecond timestamp columns are read and written (pyiceberg's
  JSON single-value conversions, also ``singledispatch``, lack them), and kept through create.
- Updates are applied by pyiceberg's ``_apply_table_update`` (a ``singledispatch`` function: its
  extension point); the handlers registered here give upgrade, row lineage and encryption keys Iceberg
  Java's ``TableMetadata.Builder`` semantics.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal, Union, cast, get_args

from pydantic import Field, TypeAdapter, field_serializer
from pyiceberg.conversions import from_json, to_json
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, TableMetadataV1, TableMetadataV2
from pyiceberg.table.metadata import TableMetadataV3 as PyIcebergTableMetadataV3
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    UpgradeFormatVersionUpdate,
    _apply_table_update,
    _TableMetadataUpdateContext,
)
from pyiceberg.table.update import TableUpdate as PyIcebergTableUpdate
from pyiceberg.typedef import IcebergBaseModel, IcebergRootModel
from pyiceberg.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TimestampNanoType,
    TimestamptzNanoType,
)
from pyiceberg.utils.datetime import timestamp_to_nanos, timestamptz_to_nanos

from irc_proxy.errors import BadRequest, CommitFailed

MAX_FORMAT_VERSION = 3
"""The highest table format version this server reads and writes."""
ROW_LINEAGE_VERSION = 3
INITIAL_ROW_ID = 0
MAX_ROW_ID = 2**63 - 1
"""Row ids are longs: a snapshot whose range would pass this (or that adds a negative number of rows, which
would move ``next-row-id`` back and let two rows share an id) is refused."""


class EncryptedKey(IcebergBaseModel):
    """An entry of ``encryption-keys`` (the spec's ``EncryptedKey``)."""

    key_id: str = Field(alias="key-id")
    encrypted_key_metadata: str = Field(alias="encrypted-key-metadata")
    encrypted_by_id: str | None = Field(alias="encrypted-by-id", default=None)
    properties: dict[str, str] | None = Field(default=None)


class SnapshotV3(Snapshot):
    """A snapshot with the v3 field pyiceberg drops: the id of the key encrypting its manifest list."""

    key_id: str | None = Field(alias="key-id", default=None)


class TableMetadataV3(PyIcebergTableMetadataV3):
    """Version 3 table metadata, as the spec writes it (``next-row-id`` required)."""

    next_row_id: int = Field(alias="next-row-id")  # required in v3, not optional
    encryption_keys: list[EncryptedKey] = Field(alias="encryption-keys", default_factory=list)
    snapshots: list[SnapshotV3] = Field(default_factory=list)  # type: ignore[assignment]  # keeps key-id

    @field_serializer("snapshots")
    def serialize_snapshots(self, snapshots: list[SnapshotV3]) -> list[SnapshotV3]:  # type: ignore[override]
        """As written (pyiceberg's serialiser would write them as its ``Snapshot``, without ``key-id``)."""
        return snapshots

    def model_dump_json(  # type: ignore[override]  # pyiceberg's signature, as its own models
        self, exclude_none: bool = True, exclude: Any | None = None, by_alias: bool = True, **kwargs: Any
    ) -> str:
        """The spec's v3 JSON (pyiceberg's own v3 model refuses to write it)."""
        exclude = set(exclude or ()) | ({"encryption_keys"} if not self.encryption_keys else set())
        return IcebergBaseModel.model_dump_json(self, exclude_none=exclude_none, exclude=exclude, by_alias=by_alias)


class ServedTableMetadata(IcebergRootModel[TableMetadataV1 | TableMetadataV2 | TableMetadataV3]):
    """Any table metadata file this server reads: v1, v2 (pyiceberg's models) or v3 (ours)."""

    root: Annotated[TableMetadataV1 | TableMetadataV2 | TableMetadataV3, Field(discriminator="format_version")]


def as_served(metadata: TableMetadata) -> TableMetadata:
    """``metadata`` in the model this server writes: pyiceberg's v3 objects become ``TableMetadataV3``
    (a new v3 table starts at ``next-row-id`` 0); v1 and v2 are returned as they are."""
    if metadata.format_version < ROW_LINEAGE_VERSION or isinstance(metadata, TableMetadataV3):
        return metadata
    return _to_v3(metadata, getattr(metadata, "next_row_id", None) or INITIAL_ROW_ID)


def _to_v3(metadata: TableMetadata, next_row_id: int) -> TableMetadataV3:
    fields = dict(metadata) | {"format_version": 3, "next_row_id": next_row_id}
    fields["snapshots"] = [_snapshot_v3(s) for s in metadata.snapshots]
    fields.setdefault("encryption_keys", [])
    return TableMetadataV3.model_construct(**fields)


def _snapshot_v3(snapshot: Snapshot) -> SnapshotV3:
    return snapshot if isinstance(snapshot, SnapshotV3) else SnapshotV3.model_construct(**dict(snapshot))


def with_defaults(metadata: TableMetadata, requested: Schema) -> TableMetadata:
    """``metadata`` of a new table with the column defaults of the ``requested`` schema, which pyiceberg's
    fresh id assignment drops (``initial-default``/``write-default``: the new schema has the same shape)."""
    fresh = metadata.schema()
    fields = cast(StructType, _copy_defaults(requested.as_struct(), fresh.as_struct())).fields
    if fields == fresh.fields:
        return metadata
    schema = Schema(*fields, schema_id=fresh.schema_id, identifier_field_ids=fresh.identifier_field_ids)
    return metadata.model_copy(
        update={"schemas": [schema if s.schema_id == schema.schema_id else s for s in metadata.schemas]}
    )


def _copy_defaults(requested: IcebergType, fresh: IcebergType) -> IcebergType:
    if isinstance(requested, StructType) and isinstance(fresh, StructType):
        return StructType(*(_field_defaults(r, f) for r, f in zip(requested.fields, fresh.fields, strict=True)))
    if isinstance(requested, ListType) and isinstance(fresh, ListType):
        element = _copy_defaults(requested.element_type, fresh.element_type)
        return ListType(fresh.element_id, element, fresh.element_required)
    if isinstance(requested, MapType) and isinstance(fresh, MapType):
        key = _copy_defaults(requested.key_type, fresh.key_type)
        value = _copy_defaults(requested.value_type, fresh.value_type)
        return MapType(fresh.key_id, key, fresh.value_id, value, fresh.value_required)
    return fresh


def _field_defaults(requested: NestedField, fresh: NestedField) -> NestedField:
    return fresh.model_copy(
        update={
            "field_type": _copy_defaults(requested.field_type, fresh.field_type),
            "initial_default": requested.initial_default,
            "write_default": requested.write_default,
        }
    )


# Nanosecond column defaults: pyiceberg 0.12 converts the other types' JSON single values, not these.
_EPOCH = datetime(1970, 1, 1)


def _nanos_from_json(_: PrimitiveType, value: str | int) -> int:
    """``2024-01-02T03:04:05.000000001`` (with ``+00:00`` for timestamptz_ns) as nanoseconds since the epoch."""
    if isinstance(value, int):
        return value
    if value.endswith(("+00:00", "Z")):
        return timestamptz_to_nanos(value)
    return timestamp_to_nanos(value)


def _nanos_to_json(zone: str) -> Callable[[PrimitiveType, int], str]:
    def to_json(_: PrimitiveType, nanos: int) -> str:
        seconds, fraction = divmod(nanos, 1_000_000_000)
        return f"{(_EPOCH + timedelta(seconds=seconds)).isoformat(timespec='seconds')}.{fraction:09d}{zone}"

    return to_json


for _type, _zone in ((TimestampNanoType, ""), (TimestamptzNanoType, "+00:00")):
    cast(Any, from_json).register(_type, _nanos_from_json)
    cast(Any, to_json).register(_type, _nanos_to_json(_zone))


# Updates ------------------------------------------------------------------------------------


class AddSnapshotV3Update(AddSnapshotUpdate):
    """``add-snapshot`` whose snapshot keeps ``key-id``."""

    snapshot: SnapshotV3


class UpgradeFormatVersion(UpgradeFormatVersionUpdate):
    """``upgrade-format-version``, up to version 3."""


class AddEncryptionKeyUpdate(IcebergBaseModel):
    action: Literal["add-encryption-key"] = Field(default="add-encryption-key")
    encryption_key: EncryptedKey = Field(alias="encryption-key")


class RemoveEncryptionKeyUpdate(IcebergBaseModel):
    action: Literal["remove-encryption-key"] = Field(default="remove-encryption-key")
    key_id: str = Field(alias="key-id")


_REPLACED = {AddSnapshotUpdate: AddSnapshotV3Update, UpgradeFormatVersionUpdate: UpgradeFormatVersion}
_MEMBERS = tuple(_REPLACED.get(m, m) for m in get_args(get_args(PyIcebergTableUpdate)[0]))
_UNION: Any = Union[(*_MEMBERS, AddEncryptionKeyUpdate, RemoveEncryptionKeyUpdate)]  # built from a tuple
TABLE_UPDATE: TypeAdapter[Any] = TypeAdapter(cast(Any, Annotated[_UNION, Field(discriminator="action")]))
"""The spec's table updates: pyiceberg's, with v3's ``add-snapshot`` and the encryption key updates."""

_apply: Any = _apply_table_update
"""pyiceberg's update dispatcher, typed loosely: the encryption key updates are not in its union."""


@_apply_table_update.register(UpgradeFormatVersion)
def _upgrade(update: UpgradeFormatVersion, base: TableMetadata, context: _TableMetadataUpdateContext) -> TableMetadata:
    """Java's ``upgradeFormatVersion``: never down, at most v3; an upgraded table's row ids start at 0."""
    if update.format_version > MAX_FORMAT_VERSION:
        raise BadRequest(
            f"Cannot upgrade table to unsupported format version: v{update.format_version} "
            f"(supported: v{MAX_FORMAT_VERSION})"
        )
    if update.format_version < base.format_version:
        raise BadRequest(f"Cannot downgrade v{base.format_version} table to v{update.format_version}")
    if update.format_version == base.format_version:
        return base
    context.add_update(update)
    if update.format_version < ROW_LINEAGE_VERSION:
        return _apply_table_update.dispatch(UpgradeFormatVersionUpdate)(update, base, context)
    return _to_v3(base, INITIAL_ROW_ID)


@_apply_table_update.register(AddSnapshotV3Update)
def _add_snapshot(
    update: AddSnapshotV3Update, base: TableMetadata, context: _TableMetadataUpdateContext
) -> TableMetadata:
    """Java's ``addSnapshot`` row lineage: a v3 snapshot names its ``first-row-id`` (not behind the table's
    ``next-row-id``: a stale one is a conflict the client retries) and ``added-rows``, which advance it."""
    snapshot = update.snapshot
    if base.format_version >= ROW_LINEAGE_VERSION:
        if snapshot.first_row_id is None:
            raise BadRequest("Cannot add a snapshot: first-row-id is null")
        if snapshot.added_rows is None:
            raise BadRequest("Cannot add a snapshot: added-rows is null")
        if snapshot.added_rows < 0 or snapshot.first_row_id + snapshot.added_rows > MAX_ROW_ID:
            raise BadRequest("Cannot add a snapshot: added-rows must be >= 0 and keep row ids within a long")
        next_row_id = getattr(base, "next_row_id", None) or INITIAL_ROW_ID
        if snapshot.first_row_id < next_row_id:
            raise CommitFailed(
                f"Cannot add a snapshot, first-row-id is behind table next-row-id: "
                f"{snapshot.first_row_id} < {next_row_id}"
            )
    return _apply_table_update.dispatch(AddSnapshotUpdate)(update, base, context)


def _add_key(
    update: AddEncryptionKeyUpdate, base: TableMetadata, context: _TableMetadataUpdateContext
) -> TableMetadata:
    keys = _keys(base, "add")
    if any(key.key_id == update.encryption_key.key_id for key in keys):
        return base  # Java: adding a key that is there already changes nothing
    cast(Any, context).add_update(update)
    return base.model_copy(update={"encryption_keys": [*keys, update.encryption_key]})


def _remove_key(
    update: RemoveEncryptionKeyUpdate, base: TableMetadata, context: _TableMetadataUpdateContext
) -> TableMetadata:
    keys = _keys(base, "remove")
    kept = [key for key in keys if key.key_id != update.key_id]
    if len(kept) == len(keys):
        return base
    cast(Any, context).add_update(update)
    return base.model_copy(update={"encryption_keys": kept})


_apply.register(AddEncryptionKeyUpdate, _add_key)
_apply.register(RemoveEncryptionKeyUpdate, _remove_key)


def _keys(base: TableMetadata, verb: str) -> list[EncryptedKey]:
    if not isinstance(base, TableMetadataV3):
        raise BadRequest(
            f"Cannot {verb} an encryption key: the table's format version is {base.format_version} (needs 3)"
        )
    return base.encryption_keys
