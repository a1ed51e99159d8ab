"""Authorization: principals, roles, role assignments and grants.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "authz_principal",
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("secret_hash", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "authz_role",
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "authz_principal_role",
        sa.Column(
            "principal", sa.String(255), sa.ForeignKey("authz_principal.name", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("role", sa.String(255), sa.ForeignKey("authz_role.name", ondelete="CASCADE"), primary_key=True),
    )
    op.create_table(
        "authz_grant",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("role", sa.String(255), sa.ForeignKey("authz_role.name", ondelete="CASCADE"), nullable=False),
        sa.Column("catalog", sa.String(255), nullable=False),
        sa.Column("securable_type", sa.String(16), nullable=False),
        sa.Column("namespace", sa.String(1024), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("privilege", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint(
            "role", "catalog", "securable_type", "namespace", "name", "privilege", name="uq_authz_grant"
        ),
        sqlite_autoincrement=True,  # a revoked grant's id is never handed to a new grant
    )
    op.create_index("ix_authz_grant_role", "authz_grant", ["role"])


def downgrade() -> None:
    op.drop_index("ix_authz_grant_role", "authz_grant")
    op.drop_table("authz_grant")
    op.drop_table("authz_principal_role")
    op.drop_table("authz_role")
    op.drop_table("authz_principal")
