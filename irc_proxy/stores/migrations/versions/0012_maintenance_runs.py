"""Table maintenance runs (expire snapshots, remove orphan files, ...), claimed by one replica at a time.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "maintenance_run",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("catalog", sa.String(255), nullable=False),
        sa.Column("namespace", sa.String(1024), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("jobs", sa.Text(), nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("results", sa.Text(), nullable=True),
        sa.Column("requested_by", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("holder", sa.String(64), nullable=True),
        sa.Column("lease_key", sa.String(64), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("lease_key", name="uq_maintenance_run_lease_key"),
    )
    op.create_index("ix_maintenance_run_table", "maintenance_run", ["catalog", "namespace", "name", "created_at"])
    op.create_index("ix_maintenance_run_status", "maintenance_run", ["status", "created_at"])


def downgrade() -> None:
    op.drop_table("maintenance_run")
