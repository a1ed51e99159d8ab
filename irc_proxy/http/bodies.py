"""Request bodies of the REST spec as pydantic models (unknown fields are ignored, as the spec allows)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder
from pyiceberg.view.metadata import ViewVersion


class _Body(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)


class CreateNamespaceRequest(_Body):
    namespace: list[StrictStr]
    properties: dict[StrictStr, StrictStr] = Field(default_factory=dict)


class UpdateNamespacePropertiesRequest(_Body):
    removals: list[StrictStr] = Field(default_factory=list)
    updates: dict[StrictStr, StrictStr] = Field(default_factory=dict)


class TableIdentifier(_Body):
    namespace: list[StrictStr]
    name: StrictStr


class CreateTableRequest(_Body):
    name: StrictStr
    location: StrictStr | None = None
    table_schema: Schema = Field(alias="schema")
    partition_spec: PartitionSpec | None = Field(default=None, alias="partition-spec")
    write_order: SortOrder | None = Field(default=None, alias="write-order")
    stage_create: StrictBool = Field(default=False, alias="stage-create")
    properties: dict[StrictStr, StrictStr] = Field(default_factory=dict)


class RegisterTableRequest(_Body):
    name: StrictStr
    metadata_location: StrictStr = Field(alias="metadata-location")
    overwrite: StrictBool = False


class CommitTableRequest(_Body):
    identifier: TableIdentifier | None = None
    requirements: list[Any]
    updates: list[Any]


class CommitTransactionRequest(_Body):
    table_changes: list[CommitTableRequest] = Field(alias="table-changes")


class RenameTableRequest(_Body):
    source: TableIdentifier
    destination: TableIdentifier


class ReportMetricsRequest(_Body):
    model_config = ConfigDict(extra="allow")
    report_type: StrictStr = Field(alias="report-type")


class CreateViewRequest(_Body):
    name: StrictStr
    location: StrictStr | None = None
    view_schema: Schema = Field(alias="schema")
    view_version: ViewVersion = Field(alias="view-version")
    properties: dict[StrictStr, StrictStr] = Field(default_factory=dict)


class CommitViewRequest(_Body):
    identifier: TableIdentifier | None = None
    requirements: list[Any] = Field(default_factory=list)
    updates: list[Any]


class RegisterViewRequest(_Body):
    name: StrictStr
    metadata_location: StrictStr = Field(alias="metadata-location")
