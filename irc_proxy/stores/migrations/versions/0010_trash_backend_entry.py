"""A dropped table's backend attributes (Glue: parameters, description, owner), given back on restore.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("trash_entry") as batch:
        batch.add_column(sa.Column("backend_entry", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trash_entry") as batch:
        batch.drop_column("backend_entry")
