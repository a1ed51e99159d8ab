"""Request bodies of the REST spec as pydantic models (unknown fields are ignored, as the spec allows).

A body its operation's authorization rule reads says what the rule reads in it (``facts``: fields of
``irc_proxy.handling.operations.policy.Requested``); the dispatcher parses it once, and the handler reads the
same model.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder
from pyiceberg.view.metadata import ViewVersion

from irc_proxy.handling.maintenance.policy import PREFIX as MAINTENANCE_PREFIX
from irc_proxy.handling.naming import TableIdent


class _Body(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)

    def facts(self) -> dict[str, Any]:
        """What the operation's authorization rule reads in this body (``policy.Requested`` fields)."""
        return {}


class CreateNamespaceRequest(_Body):
    namespace: list[StrictStr]
    properties: dict[StrictStr, StrictStr] = Field(default_factory=dict)

    def facts(self) -> dict[str, Any]:
        overrides = any(key.startswith(MAINTENANCE_PREFIX) for key in self.properties)
        return {"new_namespace": tuple(self.namespace), "maintenance_overrides": overrides}


class UpdateNamespacePropertiesRequest(_Body):
    removals: list[StrictStr] = Field(default_factory=list)
    updates: dict[StrictStr, StrictStr] = Field(default_factory=dict)

    def facts(self) -> dict[str, Any]:
        keys = [*self.removals, *self.updates]
        return {"maintenance_overrides": any(key.startswith(MAINTENANCE_PREFIX) for key in keys)}


class TableIdentifier(_Body):
    namespace: list[StrictStr]
    name: StrictStr

    @property
    def ident(self) -> TableIdent:
        """As given (``handling.operations.commit_bodies.body_ident`` validates it for the handler)."""
        return TableIdent(tuple(self.namespace), self.name)


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

    def facts(self) -> dict[str, Any]:
        return {"name": self.name, "overwrite": self.overwrite}


class CommitTableRequest(_Body):
    identifier: TableIdentifier | None = None
    requirements: list[Any]
    updates: list[Any]

    @property
    def creates(self) -> bool:
        """Whether the commit creates the table (a staged create: ``assert-create``)."""
        return any(isinstance(r, dict) and r.get("type") == "assert-create" for r in self.requirements)

    def facts(self) -> dict[str, Any]:
        return {"creates": self.creates}


class CommitTransactionRequest(_Body):
    table_changes: list[CommitTableRequest] = Field(alias="table-changes")

    def facts(self) -> dict[str, Any]:
        changes = ((change.identifier, change.creates) for change in self.table_changes)
        return {"changes": tuple((i.ident, creates) for i, creates in changes if i is not None)}  # None: a 400


class RenameTableRequest(_Body):
    source: TableIdentifier
    destination: TableIdentifier

    def facts(self) -> dict[str, Any]:
        return {"source": self.source.ident, "destination": tuple(self.destination.namespace)}


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
