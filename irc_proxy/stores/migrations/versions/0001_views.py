"""Views and their full version history.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _view_id() -> sa.Column:  # type: ignore[type-arg]
    return sa.Column("view_id", sa.Integer(), sa.ForeignKey("iceberg_view.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "iceberg_view",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("catalog", sa.String(255), nullable=False, index=True),
        sa.Column("namespace", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("view_uuid", sa.String(64), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("format_version", sa.Integer(), nullable=False),
        sa.Column("current_version_id", sa.Integer(), nullable=False),
        sa.Column("metadata_location", sa.Text(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("catalog", "namespace", "name", name="uq_iceberg_view_name"),
    )
    op.create_table(
        "iceberg_view_property",
        _view_id(),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("view_id", "key"),
    )
    op.create_table(
        "iceberg_view_version",
        _view_id(),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("timestamp_ms", sa.BigInteger(), nullable=False),
        sa.Column("schema_id", sa.Integer(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("default_catalog", sa.String(255), nullable=True),
        sa.Column("default_namespace", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("view_id", "version_id"),
    )
    op.create_table(
        "iceberg_view_representation",
        _view_id(),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("dialect", sa.String(255), nullable=False),
        sa.Column("dialect_key", sa.String(255), nullable=False),
        sa.Column("sql", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("view_id", "version_id", "position"),
        sa.UniqueConstraint("view_id", "version_id", "dialect_key", name="uq_view_representation_dialect"),
    )
    op.create_table(
        "iceberg_view_schema",
        _view_id(),
        sa.Column("schema_id", sa.Integer(), nullable=False),
        sa.Column("schema_text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("view_id", "schema_id"),
    )
    op.create_table(
        "iceberg_view_version_log",
        _view_id(),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("timestamp_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("view_id", "position"),
    )


def downgrade() -> None:
    for table in (
        "iceberg_view_version_log",
        "iceberg_view_schema",
        "iceberg_view_representation",
        "iceberg_view_version",
        "iceberg_view_property",
        "iceberg_view",
    ):
        op.drop_table(table)
