"""Initial catalog schema: id sequences, API key usage, rate-limit windows, calls.

Revision ID: 0001
Revises:
Create Date: 2025-01-01 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "id_sequences",
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("last_value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("kind", name="pk_id_sequences"),
    )
    op.create_table(
        "api_key_usage",
        sa.Column("key_uid", sa.String(64), nullable=False),
        sa.Column("endpoint", sa.String(200), nullable=False),
        sa.Column("account", sa.String(128), nullable=False),
        sa.Column("key_name", sa.String(255), nullable=False),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key_uid", "endpoint", name="pk_api_key_usage"),
    )
    op.create_table(
        "rate_limit_windows",
        sa.Column("bucket", sa.String(255), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("bucket", "window_start", name="pk_rate_limit_windows"),
    )
    op.create_index("ix_rate_limit_windows_window_start", "rate_limit_windows", ["window_start"])
    op.create_table(
        "calls",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("account", sa.String(128), nullable=False),
        sa.Column("virtual_number_id", sa.BigInteger(), nullable=False),
        sa.Column("phone_number", sa.String(32), nullable=False),
        sa.Column("caller_name", sa.String(255), nullable=False),
        sa.Column("call_status", sa.String(32), nullable=False),
        sa.Column("call_duration", sa.Integer(), nullable=False),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.Column("ai_handled", sa.Boolean(), nullable=False),
        sa.Column("transcript_summary", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_calls"),
    )
    op.create_index("ix_calls_virtual_number_id_created_at", "calls", ["virtual_number_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_calls_virtual_number_id_created_at", table_name="calls")
    op.drop_table("calls")
    op.drop_index("ix_rate_limit_windows_window_start", table_name="rate_limit_windows")
    op.drop_table("rate_limit_windows")
    op.drop_table("api_key_usage")
    op.drop_table("id_sequences")
