"""Manifest entries as the spec's ``DataFile``/``PositionDeleteFile``/``EqualityDeleteFile`` JSON.

Partition values and bounds use the spec's single-value JSON (dates as ``"2024-01-01"``, binary as
uppercase hex). Column statistics are sent only for the ``stats-fields`` a plan asked for (as Java's
server does); v3 fields (``first-row-id``, ``referenced-data-file``, ``content-offset``) when present.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Collection, Mapping
from typing import Any

from pyiceberg.conversions import from_bytes, to_json
from pyiceberg.manifest import DATA_FILE_TYPE, DataFile, DataFileContent
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.types import BinaryType, FixedType, PrimitiveType, StructType, UUIDType

_CONTENT = {
    DataFileContent.DATA: "data",
    DataFileContent.POSITION_DELETES: "position-deletes",
    DataFileContent.EQUALITY_DELETES: "equality-deletes",
}
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_V3_POSITIONS = {field.name: i for i, field in enumerate(DATA_FILE_TYPE[3].fields)}


def v3_field(data_file: DataFile, name: str) -> Any:
    """A data file field pyiceberg 0.12 reads (with the v3 read schema) but has no property for."""
    position = _V3_POSITIONS[name]
    data = data_file._data
    return data[position] if position < len(data) else None


def single_value(field_type: PrimitiveType, value: Any) -> Any:
    """``value`` in the spec's single-value JSON for ``field_type`` (None stays None)."""
    if value is None:
        return None
    if isinstance(field_type, UUIDType) and isinstance(value, bytes):
        value = uuid.UUID(bytes=value)
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE[str(value)]  # no JSON number: written as Java's Jackson writes it
    result = to_json(field_type, value)
    if isinstance(field_type, (BinaryType, FixedType)) and isinstance(result, str):
        return result.upper()
    return result


class FileRenderer:
    """Renders the files of one table's plan (its schema and specs), with the statistics asked for."""

    def __init__(self, schema: Schema, specs: Mapping[int, PartitionSpec], stats_ids: Collection[int]) -> None:
        self._schema = schema
        self._specs = specs
        self._stats_ids = frozenset(stats_ids)
        self._partition_types: dict[int, StructType | None] = {}

    def _partition_type(self, spec_id: int) -> StructType | None:
        if spec_id not in self._partition_types:
            spec = self._specs.get(spec_id)
            try:
                self._partition_types[spec_id] = None if spec is None else spec.partition_type(self._schema)
            except (ValueError, KeyError):  # a source column dropped since: values are sent as read
                self._partition_types[spec_id] = None
        return self._partition_types[spec_id]

    def partition(self, data_file: DataFile) -> list[Any]:
        record = data_file.partition
        values = [record[i] for i in range(len(record))]
        partition_type = self._partition_type(data_file.spec_id)
        if partition_type is None or len(partition_type.fields) != len(values):
            return [_plain(v) for v in values]
        return [
            single_value(f.field_type, v) if isinstance(f.field_type, PrimitiveType) else _plain(v)
            for f, v in zip(partition_type.fields, values, strict=True)
        ]

    def render(self, data_file: DataFile) -> dict[str, Any]:
        """The file as the spec's ContentFile JSON."""
        content = data_file.content
        body: dict[str, Any] = {
            "content": _CONTENT[content],
            "file-path": data_file.file_path,
            "file-format": data_file.file_format.name.lower(),
            "spec-id": data_file.spec_id,
            "partition": self.partition(data_file),
            "file-size-in-bytes": data_file.file_size_in_bytes,
            "record-count": data_file.record_count,
        }
        if data_file.key_metadata:
            body["key-metadata"] = data_file.key_metadata.hex().upper()
        if data_file.split_offsets:
            body["split-offsets"] = list(data_file.split_offsets)
        if data_file.sort_order_id is not None:
            body["sort-order-id"] = data_file.sort_order_id
        if content == DataFileContent.DATA:
            first_row_id = v3_field(data_file, "first_row_id")
            if first_row_id is not None:
                body["first-row-id"] = first_row_id
            if self._stats_ids:
                body.update(self._stats(data_file))
        elif content == DataFileContent.EQUALITY_DELETES:
            body["equality-ids"] = list(data_file.equality_ids or [])
        else:
            for name, key in (
                ("referenced_data_file", "referenced-data-file"),
                ("content_offset", "content-offset"),
                ("content_size_in_bytes", "content-size-in-bytes"),
            ):
                value = v3_field(data_file, name)
                if value is not None:
                    body[key] = value
        return body

    def _stats(self, data_file: DataFile) -> dict[str, Any]:
        wanted = self._stats_ids
        stats: dict[str, Any] = {}
        for key, counts in (
            ("column-sizes", data_file.column_sizes),
            ("value-counts", data_file.value_counts),
            ("null-value-counts", data_file.null_value_counts),
            ("nan-value-counts", data_file.nan_value_counts),
        ):
            chosen = sorted((k, v) for k, v in (counts or {}).items() if k in wanted)
            if chosen:
                stats[key] = {"keys": [k for k, _ in chosen], "values": [v for _, v in chosen]}
        for key, bounds in (("lower-bounds", data_file.lower_bounds), ("upper-bounds", data_file.upper_bounds)):
            keys, values = [], []
            for field_id, raw in sorted((bounds or {}).items()):
                if field_id not in wanted:
                    continue
                value = self._bound(field_id, raw)
                if value is not None:
                    keys.append(field_id)
                    values.append(value)
            if keys:
                stats[key] = {"keys": keys, "values": values}
        return stats

    def _bound(self, field_id: int, raw: bytes) -> Any:
        try:
            field_type = self._schema.find_type(field_id)
            if not isinstance(field_type, PrimitiveType):
                return None
            return single_value(field_type, from_bytes(field_type, raw))
        except (ValueError, TypeError, NotImplementedError, KeyError, ArithmeticError):
            return None  # a type without a JSON form (geometry), or a dropped column: no bound rather than a wrong one


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex().upper()
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)
