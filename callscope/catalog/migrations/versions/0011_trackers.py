"""trackers: the segments of each analysed call that matched its project's trackers (saved searches), which trackers
each call was matched against, and the trends' sums per day of the calls that matched each tracker. Nothing to fill:
the tracker pass (callscope/services/trackers.py) matches the calls analysed before

Revision ID: 0011_trackers
Revises: 0010_search
Create Date: 2026-12-04 10:00:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0011_trackers'
down_revision: str | Sequence[str] | None = '0010_search'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('recording_trackers',
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('tracker', sa.String(length=100), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('start_ms', sa.BigInteger(), nullable=False),
    sa.Column('end_ms', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'],
                            name=op.f('fk_recording_trackers_recording_id_recordings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('recording_id', 'tracker', 'position', name=op.f('pk_recording_trackers')),
    sqlite_with_rowid=False
    )
    op.create_table('tracker_sets',
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('project_id', sa.BigInteger(), nullable=False),
    sa.Column('digest', sa.String(length=32), nullable=False),
    sa.PrimaryKeyConstraint('account', 'project_id', name=op.f('pk_tracker_sets'))
    )
    op.create_table('trend_tracker_days',
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('operator_id', sa.BigInteger(), nullable=False),
    sa.Column('project_id', sa.BigInteger(), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('tracker', sa.String(length=100), nullable=False),
    sa.Column('calls', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('account', 'operator_id', 'project_id', 'day', 'tracker',
                            name=op.f('pk_trend_tracker_days'))
    )
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('trackers_digest', sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.drop_column('trackers_digest')
    op.drop_table('trend_tracker_days')
    op.drop_table('tracker_sets')
    op.drop_table('recording_trackers')
