"""View commits with Iceberg Java's ``ViewMetadata.Builder`` semantics.

pyiceberg has view metadata models but no update machinery, so the rules live here as data plus
small functions: an identical version or schema reuses its id, ``-1`` means "last added",
``version.history.num-entries`` expires old versions, and a replace may not drop a dialect unless
``replace.drop-dialect.allowed=true``. (Appending the previous version's dialects on replace,
``replace.append-dialect.allowed``, is done by the client's builder, so a server replaying
updates does not do it, as in Iceberg Java.)
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, TypeAdapter, ValidationError
from pyiceberg.schema import Schema
from pyiceberg.view.metadata import SQLViewRepresentation, ViewHistoryEntry, ViewMetadata, ViewVersion

from irc_proxy.errors import BadRequest, CommitFailed, InvalidArgument
from irc_proxy.handling.input_errors import INPUT_ERRORS, clip, explain

LAST_ADDED = -1
HISTORY_SIZE = "version.history.num-entries"
HISTORY_SIZE_DEFAULT = 10
DROP_DIALECT_ALLOWED = "replace.drop-dialect.allowed"
APPEND_DIALECT_ALLOWED = "replace.append-dialect.allowed"


class _Update(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)


class AssignUUID(_Update):
    action: Literal["assign-uuid"]
    uuid: StrictStr


class UpgradeFormatVersion(_Update):
    action: Literal["upgrade-format-version"]
    format_version: StrictInt = Field(alias="format-version")


class AddSchema(_Update):
    action: Literal["add-schema"]
    view_schema: Schema = Field(alias="schema")
    last_column_id: StrictInt | None = Field(default=None, alias="last-column-id")


class SetLocation(_Update):
    action: Literal["set-location"]
    location: StrictStr


class SetProperties(_Update):
    action: Literal["set-properties"]
    updates: dict[StrictStr, StrictStr]


class RemoveProperties(_Update):
    action: Literal["remove-properties"]
    removals: list[StrictStr]


class AddViewVersion(_Update):
    action: Literal["add-view-version"]
    view_version: ViewVersion = Field(alias="view-version")


class SetCurrentViewVersion(_Update):
    action: Literal["set-current-view-version"]
    view_version_id: StrictInt = Field(alias="view-version-id")


class AssertViewUUID(_Update):
    type: Literal["assert-view-uuid"]
    uuid: StrictStr


ViewUpdate = Annotated[
    AssignUUID
    | UpgradeFormatVersion
    | AddSchema
    | SetLocation
    | SetProperties
    | RemoveProperties
    | AddViewVersion
    | SetCurrentViewVersion,
    Field(discriminator="action"),
]
_UPDATE = TypeAdapter(ViewUpdate)
_REQUIREMENT = TypeAdapter(Annotated[AssertViewUUID, Field(discriminator="type")])


def _parse_each(raw: Any, adapter: TypeAdapter[Any], kind: str, tag: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadRequest(f"Invalid view commit: {kind}s must be a list")
    parsed = []
    for item in raw:
        if not isinstance(item, dict):
            raise BadRequest(f"Invalid view {kind}: expected an object")
        name = clip(repr(item.get(tag)), 100)
        try:
            parsed.append(adapter.validate_python(item))
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            if first["type"] in ("union_tag_invalid", "union_tag_not_found", "literal_error"):
                raise BadRequest(f"Unsupported view {kind} {tag}: {name}") from None
            where = clip(".".join(str(p) for p in first["loc"][1:]), 100)
            raise BadRequest(f"Invalid view {kind} {name}: {where}: {clip(first['msg'])}") from None
        except INPUT_ERRORS as exc:  # pyiceberg's validators: ValidationError, KeyError for missing keys, ...
            raise BadRequest(f"Invalid view {kind} {name}: {explain(exc)}") from None
    return parsed


def parse_view_updates(raw: Any) -> list[ViewUpdate]:
    return _parse_each(raw, _UPDATE, "update", "action")


def parse_view_requirements(raw: Any) -> list[AssertViewUUID]:
    return _parse_each(raw, _REQUIREMENT, "requirement", "type")


def check_view_requirements(requirements: Sequence[AssertViewUUID], base: ViewMetadata) -> None:
    for requirement in requirements:
        if requirement.uuid != base.view_uuid:
            raise CommitFailed(
                f"Requirement failed: view UUID does not match: expected {base.view_uuid} != {requirement.uuid}"
            )


def representations(version: ViewVersion) -> list[SQLViewRepresentation]:
    return [rep.root for rep in version.representations]


def dialects(version: ViewVersion) -> set[str]:
    return {rep.dialect.lower() for rep in representations(version)}


def validate_version(version: ViewVersion) -> None:
    """Each representation needs SQL and a dialect; a dialect appears at most once."""
    seen: set[str] = set()
    for rep in representations(version):
        if not rep.sql or not rep.dialect:
            raise BadRequest("Invalid view version: a representation needs non-empty sql and dialect")
        key = rep.dialect.lower()
        if key in seen:
            raise InvalidArgument(f"Invalid view version: Cannot add multiple queries for dialect {key}")
        seen.add(key)
    if not seen:
        raise BadRequest("Invalid view version: at least one SQL representation is required")


def _same_version(a: ViewVersion, b: ViewVersion) -> bool:
    return (
        a.summary == b.summary
        and representations(a) == representations(b)
        and a.default_catalog == b.default_catalog
        and tuple(a.default_namespace) == tuple(b.default_namespace)
        and a.schema_id == b.schema_id
    )


def _bool(properties: dict[str, str], key: str) -> bool:
    return properties.get(key, "false").strip().lower() == "true"


class ViewBuilder:
    """Applies view updates to a base (None for a create) and builds the new ViewMetadata."""

    def __init__(self, base: ViewMetadata | None) -> None:
        self.uuid = base.view_uuid if base else None
        self.format_version: int = base.format_version if base else 1
        self.location = base.location if base else None
        self.schemas: list[Schema] = list(base.schemas) if base else []
        self.versions: list[ViewVersion] = list(base.versions) if base else []
        self.history: list[ViewHistoryEntry] = list(base.version_log) if base else []
        self.properties: dict[str, str] = dict(base.properties) if base else {}
        self.current_version_id = base.current_version_id if base else None
        self.previous = next((v for v in self.versions if v.version_id == self.current_version_id), None)
        self.last_schema_id: int | None = None
        self.last_version_id: int | None = None
        self.added_versions: set[int] = set()
        self.history_entry: ViewHistoryEntry | None = None

    def apply(self, update: ViewUpdate) -> None:
        if isinstance(update, AssignUUID):
            if self.uuid is not None and self.uuid != update.uuid:
                raise BadRequest("Cannot reassign uuid")
            self.uuid = update.uuid
        elif isinstance(update, UpgradeFormatVersion):
            if update.format_version < self.format_version:
                raise BadRequest(f"Cannot downgrade v{self.format_version} view to v{update.format_version}")
            if update.format_version != 1:
                raise BadRequest(f"Unsupported view format version: {update.format_version}")
            self.format_version = update.format_version
        elif isinstance(update, AddSchema):
            self.add_schema(update.view_schema)
        elif isinstance(update, SetLocation):
            self.location = update.location
        elif isinstance(update, SetProperties):
            self.properties.update(update.updates)
        elif isinstance(update, RemoveProperties):
            for key in update.removals:
                self.properties.pop(key, None)
        elif isinstance(update, AddViewVersion):
            self.add_version(update.view_version)
        elif isinstance(update, SetCurrentViewVersion):
            self.set_current_version(update.view_version_id)

    def add_schema(self, schema: Schema) -> int:
        next_id = 0
        for existing in self.schemas:
            if existing == schema and existing.identifier_field_ids == schema.identifier_field_ids:
                self.last_schema_id = existing.schema_id
                return existing.schema_id
            next_id = max(next_id, existing.schema_id + 1)
        self.schemas.append(schema.model_copy(update={"schema_id": next_id}))
        self.last_schema_id = next_id
        return next_id

    def add_version(self, version: ViewVersion) -> int:
        if version.schema_id == LAST_ADDED:
            if self.last_schema_id is None:
                raise BadRequest("Cannot set last added schema: no schema has been added")
            version = version.model_copy(update={"schema_id": self.last_schema_id})
        if not any(s.schema_id == version.schema_id for s in self.schemas):
            raise BadRequest(f"Cannot add version with unknown schema: {version.schema_id}")
        validate_version(version)
        new_id = version.version_id
        for existing in self.versions:
            if _same_version(existing, version):
                self.last_version_id = existing.version_id
                return existing.version_id
            if existing.version_id >= new_id:
                new_id = existing.version_id + 1
        self.versions.append(version.model_copy(update={"version_id": new_id}))
        self.added_versions.add(new_id)
        self.last_version_id = new_id
        return new_id

    def set_current_version(self, version_id: int) -> None:
        if version_id == LAST_ADDED:
            if self.last_version_id is None:
                raise BadRequest("Cannot set last version id: no current version id has been set")
            version_id = self.last_version_id
        version = next((v for v in self.versions if v.version_id == version_id), None)
        if version is None:
            raise BadRequest(f"Cannot set current version to unknown version: {version_id}")
        if version_id == self.current_version_id:
            return
        self.current_version_id = version.version_id
        timestamp = version.timestamp_ms if version_id in self.added_versions else int(time.time() * 1000)
        self.history_entry = ViewHistoryEntry.model_validate({"timestamp-ms": timestamp, "version-id": version_id})

    def build(self) -> ViewMetadata:
        if self.location is None:
            raise BadRequest("Invalid view: location is required")
        if not self.versions or self.current_version_id is None:
            raise BadRequest("Invalid view: no versions were added")
        history = self.history + ([self.history_entry] if self.history_entry else [])
        current = next(v for v in self.versions if v.version_id == self.current_version_id)
        drop_allowed = _bool(self.properties, DROP_DIALECT_ALLOWED)
        if drop_allowed and _bool(self.properties, APPEND_DIALECT_ALLOWED):
            raise BadRequest(f"Cannot set both {DROP_DIALECT_ALLOWED} and {APPEND_DIALECT_ALLOWED} to true")
        if self.previous is not None and not drop_allowed and not dialects(self.previous) <= dialects(current):
            raise BadRequest(
                f"Cannot replace view due to loss of view dialects ({DROP_DIALECT_ALLOWED}=false):\n"
                f"Previous dialects: {sorted(dialects(self.previous))}\nNew dialects: {sorted(dialects(current))}"
            )
        try:
            history_size = int(self.properties.get(HISTORY_SIZE, HISTORY_SIZE_DEFAULT))
        except ValueError:
            raise BadRequest(f"{HISTORY_SIZE} must be an integer") from None
        if history_size <= 0:
            raise BadRequest(f"{HISTORY_SIZE} must be positive but was {history_size}")
        versions = self.versions
        keep = max(len(self.added_versions | {current.version_id}), history_size)
        if len(versions) > keep:
            newest = sorted((v.version_id for v in versions if v.version_id != current.version_id), reverse=True)
            retained_ids = {current.version_id, *newest[: keep - 1]}
            versions = [v for v in versions if v.version_id in retained_ids]
            history = _retain_history(history, retained_ids)
        return ViewMetadata.model_validate(
            {
                "view-uuid": self.uuid or str(uuid.uuid4()),
                "format-version": self.format_version,
                "location": self.location,
                "schemas": [s.model_dump() for s in self.schemas],
                "current-version-id": current.version_id,
                "versions": [v.model_dump() for v in versions],
                "version-log": [e.model_dump() for e in history],
                "properties": self.properties,
            }
        )


def _retain_history(history: list[ViewHistoryEntry], ids: set[int]) -> list[ViewHistoryEntry]:
    retained: list[ViewHistoryEntry] = []
    for entry in history:
        if entry.version_id in ids:
            retained.append(entry)
        else:
            retained.clear()  # clear history past any expired version, as Java does
    return retained


def apply_view_updates(base: ViewMetadata | None, updates: Sequence[ViewUpdate]) -> ViewMetadata:
    builder = ViewBuilder(base)
    for update in updates:
        builder.apply(update)
    return builder.build()
