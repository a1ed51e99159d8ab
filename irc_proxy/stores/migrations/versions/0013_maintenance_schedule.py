"""Scheduled maintenance: tables marked by commits, one sweep lease per catalog, and a run's checkpoint.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("maintenance_run", sa.Column("checkpoint", sa.Text(), nullable=True))
    op.create_table(
        "maintenance_mark",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("catalog", sa.String(255), nullable=False),
        sa.Column("namespace", sa.String(1024), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("marked_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_maintenance_mark_catalog", "maintenance_mark", ["catalog", "marked_at"])
    op.create_table(
        "maintenance_sweep",
        sa.Column("catalog", sa.String(255), primary_key=True),
        sa.Column("holder", sa.String(64), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("cursor", sa.Text(), nullable=True),
        sa.Column("swept_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("maintenance_sweep")
    op.drop_table("maintenance_mark")
    with op.batch_alter_table("maintenance_run") as batch:
        batch.drop_column("checkpoint")
