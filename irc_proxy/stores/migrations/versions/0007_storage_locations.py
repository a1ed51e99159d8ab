"""Storage roots of live tables and views, for the overlap check.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "storage_location",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("catalog", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_storage_location_catalog_location", "storage_location", ["catalog", "location"])
    op.create_table(
        "storage_location_index",
        sa.Column("catalog", sa.String(255), primary_key=True),
        sa.Column("indexed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_storage_location_owner", "storage_location", ["catalog", "kind", "namespace", "name"])


def downgrade() -> None:
    op.drop_table("storage_location_index")
    op.drop_table("storage_location")
