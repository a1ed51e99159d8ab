"""Revoked tokens (console sign-out) and used one-time values (OIDC sign-in flows), shared by replicas.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "auth_revoked",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_auth_revoked_kind_digest", "auth_revoked", ["kind", "digest"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_auth_revoked_kind_digest", "auth_revoked")
    op.drop_table("auth_revoked")
