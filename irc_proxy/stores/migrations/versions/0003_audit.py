"""The append-only audit trail.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-15
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_record",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("principal", sa.String(255), nullable=False),
        sa.Column("operation", sa.String(64), nullable=False),
        sa.Column("catalog", sa.String(255), nullable=True),
        sa.Column("object", sa.String(1024), nullable=True),
        sa.Column("decision", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.String(128), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
    )
    op.create_index("ix_audit_record_time", "audit_record", ["time"])
    op.create_index("ix_audit_record_principal", "audit_record", ["principal", "time"])
    op.create_index("ix_audit_record_object", "audit_record", ["catalog", "object"])


def downgrade() -> None:
    op.drop_table("audit_record")
