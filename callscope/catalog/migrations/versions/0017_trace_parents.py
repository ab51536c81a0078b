"""trace_parents: the W3C traceparent of the span that queued each job and wrote each webhook event
(callscope/tracing.py), so that the dispatcher and the webhook delivery continue the call's trace in whichever process
takes the row. Nullable, nothing to fill: rows written before (or with tracing off) start no trace of their own.

Revision ID: 0017_trace_parents
Revises: 0016_search_phrase_terms
Create Date: 2026-12-04 18:00:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0017_trace_parents'
down_revision: str | Sequence[str] | None = '0016_search_phrase_terms'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('jobs', sa.Column('trace_parent', sa.String(length=128), nullable=True))
    op.add_column('webhook_events', sa.Column('trace_parent', sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('webhook_events') as batch:
        batch.drop_column('trace_parent')
    with op.batch_alter_table('jobs') as batch:
        batch.drop_column('trace_parent')
