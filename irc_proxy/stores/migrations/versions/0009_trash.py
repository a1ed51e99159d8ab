"""Dropped tables kept for a retention period (the trash), so a drop can be undone.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trash_entry",
        sa.Column("entry_id", sa.String(64), primary_key=True),
        sa.Column("catalog", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("metadata_location", sa.Text(), nullable=False),
        sa.Column("dropped_by", sa.String(255), nullable=False),
        sa.Column("dropped_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("purge_requested", sa.Boolean(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("claimed_by", sa.String(64), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_trash_entry_catalog", "trash_entry", ["catalog", "dropped_at"])
    op.create_index("ix_trash_entry_expires_at", "trash_entry", ["expires_at"])
    op.create_index("ix_trash_entry_location", "trash_entry", ["catalog", "metadata_location"])


def downgrade() -> None:
    op.drop_table("trash_entry")
