"""Every table of the proxy's state database, declared once (SQLModel on ``SQLModel.metadata``).

This module is the schema's one source: Alembic's environment (``migrations/env.py``) compares these
declarations with a database, and ``tests/unit/stores/test_schema.py`` fails when a freshly migrated
database differs from them (tables, columns, types, nullability, indexes, keys). A change here needs an
Alembic migration that makes the same change. Stores that speak SQLAlchemy Core use a model's table
(``table_of``). A local catalog's tables (``iceberg_tables``, ``iceberg_namespace_properties``) are
pyiceberg's, not ours: ``irc_proxy.backends.local`` creates them, and Alembic leaves them alone.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    Table,
    Text,
    UniqueConstraint,
)
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


MAX_LOGIN_KEY = 255
"""The length of ``auth_login_failure.key`` (a longer key is stored as its digest)."""


def table_of(model: type[SQLModel]) -> Table:
    """A model's table, for stores that build SQLAlchemy Core statements."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


def _moment(**kwargs: Any) -> Any:
    """A ``timestamp with time zone`` column read and written as it comes (the stores that use SQLAlchemy Core
    add the zone on reading: ``db.as_utc``). A plain ``datetime`` field is the same column in the database, but
    SQLModel's ``UTCDateTime`` refuses naive values and adds UTC on reading."""
    return Field(sa_type=DateTime(timezone=True), **kwargs)


class ViewRow(SQLModel, table=True):
    """One Iceberg view: identity, pointer to its current state, and a revision for compare-and-swap."""

    __tablename__ = "iceberg_view"
    __table_args__ = (UniqueConstraint("catalog", "namespace", "name", name="uq_iceberg_view_name"),)

    id: int | None = Field(default=None, primary_key=True)
    catalog: str = Field(max_length=255, index=True)
    namespace: str = Field(max_length=255)
    name: str = Field(max_length=255)
    view_uuid: str = Field(max_length=64)
    location: str = Field(sa_type=Text)
    format_version: int
    current_version_id: int
    metadata_location: str = Field(sa_type=Text)
    revision: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


def _view_fk() -> Column[int]:
    return Column(Integer, ForeignKey("iceberg_view.id", ondelete="CASCADE"), primary_key=True)


class ViewPropertyRow(SQLModel, table=True):
    __tablename__ = "iceberg_view_property"

    view_id: int = Field(sa_column=_view_fk())
    key: str = Field(primary_key=True, max_length=255)
    value: str = Field(sa_type=Text)


class ViewVersionRow(SQLModel, table=True):
    """One version of a view, with who created it and when (audit columns)."""

    __tablename__ = "iceberg_view_version"

    view_id: int = Field(sa_column=_view_fk())
    version_id: int = Field(primary_key=True)
    timestamp_ms: int = Field(sa_type=BigInteger)
    schema_id: int
    summary: str = Field(sa_type=Text)  # JSON object of strings
    default_catalog: str | None = Field(default=None, max_length=255)
    default_namespace: str = Field(sa_type=Text)  # JSON array of levels
    created_by: str = Field(max_length=255)
    created_at: datetime = Field(default_factory=utcnow)


class ViewRepresentationRow(SQLModel, table=True):
    """One SQL text of a version: at most one per dialect (case-insensitive) per version."""

    __tablename__ = "iceberg_view_representation"
    __table_args__ = (UniqueConstraint("view_id", "version_id", "dialect_key", name="uq_view_representation_dialect"),)

    view_id: int = Field(sa_column=_view_fk())
    version_id: int = Field(primary_key=True)
    position: int = Field(primary_key=True)
    type: str = Field(max_length=32)
    dialect: str = Field(max_length=255)
    dialect_key: str = Field(max_length=255)
    sql: str = Field(sa_type=Text)


class ViewSchemaRow(SQLModel, table=True):
    __tablename__ = "iceberg_view_schema"

    view_id: int = Field(sa_column=_view_fk())
    schema_id: int = Field(primary_key=True)
    schema_text: str = Field(sa_type=Text)  # the Iceberg schema JSON


class ViewVersionLogRow(SQLModel, table=True):
    __tablename__ = "iceberg_view_version_log"

    view_id: int = Field(sa_column=_view_fk())
    position: int = Field(primary_key=True)
    version_id: int
    timestamp_ms: int = Field(sa_type=BigInteger)


class SigningKeyRow(SQLModel, table=True):
    """A private key the ``oauth2`` mode signs tokens with, shared by every replica (the oldest is used)."""

    __tablename__ = "auth_signing_key"

    kid: str = Field(primary_key=True, max_length=128)
    algorithm: str = Field(max_length=16)
    private_pem: str = Field(sa_type=Text)
    created_at: datetime = Field(default_factory=utcnow)


class AuditRecordRow(SQLModel, table=True):
    """One catalog operation: who, what, on which object, the decision and the outcome. Append-only."""

    __tablename__ = "audit_record"
    __table_args__ = (
        Index("ix_audit_record_principal", "principal", "time"),
        Index("ix_audit_record_object", "catalog", "object"),
    )

    id: int | None = Field(
        default=None, sa_column=Column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True)
    )
    time: datetime = _moment(index=True)
    principal: str = Field(max_length=255)
    operation: str = Field(max_length=64)
    catalog: str | None = Field(default=None, max_length=255)
    object: str | None = Field(default=None, max_length=1024)
    decision: str = Field(max_length=16)
    reason: str | None = Field(default=None, sa_type=Text)
    status: int
    request_id: str = Field(max_length=128)
    latency_ms: float


class PrincipalRow(SQLModel, table=True):
    """A principal the admin API manages; with a secret hash it is also an ``oauth2`` client."""

    __tablename__ = "authz_principal"

    name: str = Field(primary_key=True, max_length=255)
    secret_hash: str | None = Field(default=None, max_length=255)
    created_at: datetime = Field(default_factory=utcnow)


class RoleRow(SQLModel, table=True):
    __tablename__ = "authz_role"

    name: str = Field(primary_key=True, max_length=255)
    created_at: datetime = Field(default_factory=utcnow)


class PrincipalRoleRow(SQLModel, table=True):
    """``principal`` holds ``role`` (in addition to the roles its token carries)."""

    __tablename__ = "authz_principal_role"

    principal: str = Field(primary_key=True, max_length=255, foreign_key="authz_principal.name", ondelete="CASCADE")
    role: str = Field(primary_key=True, max_length=255, foreign_key="authz_role.name", ondelete="CASCADE")


class GrantRow(SQLModel, table=True):
    """``role`` holds ``privilege`` on a securable (namespace levels joined with 0x1F; ``name`` for tables/views)."""

    __tablename__ = "authz_grant"
    __table_args__ = (
        UniqueConstraint("role", "catalog", "securable_type", "namespace", "name", "privilege", name="uq_authz_grant"),
        {"sqlite_autoincrement": True},
    )

    id: int | None = Field(default=None, primary_key=True)
    role: str = Field(max_length=255, foreign_key="authz_role.name", ondelete="CASCADE", index=True)
    catalog: str = Field(max_length=255)
    securable_type: str = Field(max_length=16)
    namespace: str = Field(default="", max_length=1024)
    name: str = Field(default="", max_length=255)
    privilege: str = Field(max_length=32)
    created_at: datetime = Field(default_factory=utcnow)


class IdempotencyRecordRow(SQLModel, table=True):
    """An Idempotency-Key's claim or finished outcome (``irc_proxy.stores.idempotency``)."""

    __tablename__ = "idempotency_record"

    principal: str = Field(primary_key=True, max_length=255)
    key: str = Field(primary_key=True, max_length=64)
    fingerprint: str = Field(max_length=64)
    owner: str = Field(max_length=32)
    claimed_at: datetime = _moment()
    expires_at: datetime = _moment(index=True)
    status: int | None = None
    headers: str | None = Field(default=None, sa_type=Text)
    body: bytes | None = Field(default=None, sa_type=LargeBinary)


class LoginFailureRow(SQLModel, table=True):
    """One failed login at the token endpoint (``irc_proxy.stores.login_failures``)."""

    __tablename__ = "auth_login_failure"
    __table_args__ = (Index("ix_auth_login_failure_key", "kind", "key", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=8)
    key: str = Field(max_length=MAX_LOGIN_KEY)
    at: float = Field(sa_type=Float)


class StorageLocationRow(SQLModel, table=True):
    """One storage root (location or write path) of one live table or view (``irc_proxy.stores.locations``)."""

    __tablename__ = "storage_location"
    __table_args__ = (
        Index("ix_storage_location_catalog_location", "catalog", "location"),
        Index("ix_storage_location_owner", "catalog", "kind", "namespace", "name"),
    )

    id: int | None = Field(default=None, primary_key=True)
    catalog: str = Field(max_length=255)
    kind: str = Field(max_length=8)
    namespace: str = Field(sa_type=Text)
    name: str = Field(max_length=255)
    location: str = Field(sa_type=Text)
    created_at: datetime = Field(default_factory=utcnow)


class StorageIndexRow(SQLModel, table=True):
    """A catalog whose pre-existing tables and views were recorded (the backfill ran to its end)."""

    __tablename__ = "storage_location_index"

    catalog: str = Field(max_length=255, primary_key=True)
    indexed_at: datetime = Field(default_factory=utcnow)


class ScanPlanRow(SQLModel, table=True):
    """A server-side scan plan any replica can answer for (``irc_proxy.stores.scan_plans``)."""

    __tablename__ = "scan_plan"

    plan_id: str = Field(primary_key=True, max_length=64)
    principal: str = Field(max_length=255)
    catalog: str = Field(max_length=255)
    namespace: str = Field(sa_type=Text)
    name: str = Field(max_length=255)
    status: str = Field(max_length=16)
    metadata_location: str = Field(sa_type=Text)
    request: str = Field(sa_type=Text)
    chunks: str | None = Field(default=None, sa_type=Text)
    error: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = _moment()
    updated_at: datetime = _moment()
    expires_at: datetime = _moment(index=True)


class TrashEntryRow(SQLModel, table=True):
    """A dropped table or view kept until its retention ends (``irc_proxy.stores.trash``)."""

    __tablename__ = "trash_entry"
    __table_args__ = (
        Index("ix_trash_entry_catalog", "catalog", "dropped_at"),
        Index("ix_trash_entry_location", "catalog", "metadata_location"),
    )

    entry_id: str = Field(primary_key=True, max_length=64)
    catalog: str = Field(max_length=255)
    kind: str = Field(max_length=8)
    namespace: str = Field(sa_type=Text)
    name: str = Field(max_length=255)
    metadata_location: str = Field(sa_type=Text)
    dropped_by: str = Field(max_length=255)
    dropped_at: datetime = _moment()
    purge_requested: bool
    expires_at: datetime = _moment(index=True)
    state: str = Field(max_length=16)
    claimed_by: str | None = Field(default=None, max_length=64)
    claimed_at: datetime | None = _moment(default=None)
    backend_entry: str | None = Field(default=None, sa_type=Text)


class RevokedRow(SQLModel, table=True):
    """A revoked token's or used one-time value's digest (``irc_proxy.stores.revocations``)."""

    __tablename__ = "auth_revoked"
    __table_args__ = (Index("ix_auth_revoked_kind_digest", "kind", "digest", unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=16)
    digest: str = Field(max_length=64)
    expires_at: float = Field(sa_type=Float)


class MaintenanceRunRow(SQLModel, table=True):
    """One requested maintenance run of one table (``irc_proxy.stores.maintenance``).

    ``lease_key`` (a digest of catalog, namespace and table) is set only while the run is ``running``: its
    unique constraint lets at most one run per table run at a time across replicas; a lease past
    ``lease_expires_at`` (its replica died) is taken over by another."""

    __tablename__ = "maintenance_run"
    __table_args__ = (
        UniqueConstraint("lease_key", name="uq_maintenance_run_lease_key"),
        Index("ix_maintenance_run_table", "catalog", "namespace", "name", "created_at"),
        Index("ix_maintenance_run_status", "status", "created_at"),
    )

    id: str = Field(primary_key=True, max_length=64)
    catalog: str = Field(max_length=255)
    namespace: str = Field(max_length=1024)  # JSON array of levels
    name: str = Field(max_length=255)
    jobs: str = Field(sa_type=Text)  # JSON array of job names
    dry_run: bool
    status: str = Field(max_length=16)
    results: str | None = Field(default=None, sa_type=Text)  # JSON object: job -> its result
    requested_by: str = Field(max_length=255)
    created_at: datetime = _moment()
    started_at: datetime | None = _moment(default=None)
    finished_at: datetime | None = _moment(default=None)
    error: str | None = Field(default=None, sa_type=Text)
    holder: str | None = Field(default=None, max_length=64)
    lease_key: str | None = Field(default=None, max_length=64)
    lease_expires_at: datetime | None = _moment(default=None)
    checkpoint: str | None = Field(default=None, sa_type=Text)  # JSON object: job -> what a takeover must finish


class MaintenanceMarkRow(SQLModel, table=True):
    """A table a commit changed, to be evaluated by the next sweep (``irc_proxy.stores.maintenance_schedule``).
    One row per table (``key``: a digest of catalog, namespace and table), written again by each commit."""

    __tablename__ = "maintenance_mark"
    __table_args__ = (Index("ix_maintenance_mark_catalog", "catalog", "marked_at"),)

    key: str = Field(primary_key=True, max_length=64)
    catalog: str = Field(max_length=255)
    namespace: str = Field(max_length=1024)  # JSON array of levels
    name: str = Field(max_length=255)
    marked_at: datetime = _moment()


class MaintenanceSweepRow(SQLModel, table=True):
    """One catalog's sweep: which replica holds it until when, where the walk through its tables goes on, and
    when it last finished (``irc_proxy.stores.maintenance_schedule``)."""

    __tablename__ = "maintenance_sweep"

    catalog: str = Field(primary_key=True, max_length=255)
    holder: str | None = Field(default=None, max_length=64)
    lease_expires_at: datetime | None = _moment(default=None)
    cursor: str | None = Field(default=None, sa_type=Text)  # JSON: the last table walked
    swept_at: datetime | None = _moment(default=None)
