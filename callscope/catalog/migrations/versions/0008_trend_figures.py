"""trend figures: each recording's call figures and goals met, indexed for the account's trends, backfilled from
the stored results

Revision ID: 0008_trend_figures
Revises: 0007_audio_redaction
Create Date: 2026-11-27 12:00:00

"""
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callscope.figures import figures

revision: str = '0008_trend_figures'
down_revision: str | Sequence[str] | None = '0007_audio_redaction'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FIGURES = ['pause_compliance', 'agent_talk_ms', 'customer_talk_ms', 'emotion']
BATCH = 1000

recordings = sa.table('recordings', sa.column('id', sa.BigInteger), sa.column('pause_compliance', sa.Float),
                      sa.column('agent_talk_ms', sa.BigInteger), sa.column('customer_talk_ms', sa.BigInteger))
analyses = sa.table('analyses', sa.column('recording_id', sa.BigInteger), sa.column('results', sa.Text))
recording_goals = sa.table('recording_goals', sa.column('recording_id', sa.BigInteger),
                           sa.column('goal_id', sa.BigInteger), sa.column('met', sa.Boolean))


def upgrade() -> None:
    op.create_table('recording_goals',
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('goal_id', sa.BigInteger(), nullable=False),
    sa.Column('met', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'],
                            name=op.f('fk_recording_goals_recording_id_recordings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('recording_id', 'goal_id', 'met', name=op.f('pk_recording_goals')),
    sqlite_with_rowid=False
    )
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pause_compliance', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('agent_talk_ms', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('customer_talk_ms', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('emotion', sa.String(length=16), nullable=True))
    _backfill()
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        # the trends' indexes take over the two they start with
        batch_op.drop_index('ix_recordings_account_status_created')
        batch_op.drop_index('ix_recordings_account_operator')
        batch_op.create_index('ix_recordings_trends_account', ['account', 'status', 'created_at', *FIGURES, 'id'])
        batch_op.create_index('ix_recordings_trends_project',
                              ['account', 'project_id', 'status', 'created_at', *FIGURES, 'id'])
        batch_op.create_index('ix_recordings_trends_operator',
                              ['account', 'operator_id', 'status', 'created_at', *FIGURES, 'id'])


def _backfill() -> None:
    """The figures of every stored analysis, from its results document, a batch at a time (before the indexes, which
    the updates would otherwise keep rewriting). The emotion needs the transcript, a blob the migration does not
    read: it stays None until the call is analysed again."""
    conn = op.get_bind()
    after = -1
    while batch := conn.execute(sa.select(analyses.c.recording_id, analyses.c.results)
                                .where(analyses.c.recording_id > after)
                                .order_by(analyses.c.recording_id).limit(BATCH)).all():
        after = batch[-1][0]
        found = {recording_id: figures(json.loads(results), None) for recording_id, results in batch}
        conn.execute(recordings.update().where(recordings.c.id == sa.bindparam('rid')).values(
            pause_compliance=sa.bindparam('pc'), agent_talk_ms=sa.bindparam('agent'),
            customer_talk_ms=sa.bindparam('customer')),
            [{'rid': rid, 'pc': f.pause_compliance, 'agent': f.agent_talk_ms, 'customer': f.customer_talk_ms}
             for rid, f in found.items()])
        goals = [{'recording_id': rid, 'goal_id': goal, 'met': met}
                 for rid, f in found.items() for goal, met in f.goals.items()]
        if goals:
            conn.execute(recording_goals.insert(), goals)


def downgrade() -> None:
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.drop_index('ix_recordings_trends_operator')
        batch_op.drop_index('ix_recordings_trends_project')
        batch_op.drop_index('ix_recordings_trends_account')
        batch_op.create_index('ix_recordings_account_operator', ['account', 'operator_id'], unique=False)
        batch_op.create_index('ix_recordings_account_status_created', ['account', 'status', 'created_at', 'id'],
                              unique=False)
        batch_op.drop_column('emotion')
        batch_op.drop_column('customer_talk_ms')
        batch_op.drop_column('agent_talk_ms')
        batch_op.drop_column('pause_compliance')
    op.drop_table('recording_goals')
