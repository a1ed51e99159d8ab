"""Failed logins at the token endpoint, counted across replicas (sessions end; logins are throttled).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "auth_login_failure",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
    )
    op.create_index("ix_auth_login_failure_key", "auth_login_failure", ["kind", "key", "at"])


def downgrade() -> None:
    op.drop_index("ix_auth_login_failure_key", "auth_login_failure")
    op.drop_table("auth_login_failure")
