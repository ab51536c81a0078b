"""api key usage per hour: the requests and errors of each key by the hour, for its usage over time

Revision ID: 0009_api_key_usage_hourly
Revises: 0008_trend_figures
Create Date: 2026-11-27 12:30:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0009_api_key_usage_hourly'
down_revision: str | Sequence[str] | None = '0008_trend_figures'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'api_key_usage_hourly',
        sa.Column('key_uid', sa.String(length=64), nullable=False),
        sa.Column('hour', sa.DateTime(timezone=True), nullable=False),
        sa.Column('account', sa.String(length=128), nullable=False),
        sa.Column('requests', sa.BigInteger(), nullable=False),
        sa.Column('errors', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('key_uid', 'hour'),
    )


def downgrade() -> None:
    op.drop_table('api_key_usage_hourly')
