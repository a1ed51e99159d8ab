"""SQLModel tables of the proxy's state database. Changes here need an Alembic migration."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import BigInteger, Column, DateTime, ForeignKey, Integer, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


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

    id: int | None = Field(
        default=None, sa_column=Column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True)
    )
    time: datetime = Field(sa_type=DateTime(timezone=True))
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
