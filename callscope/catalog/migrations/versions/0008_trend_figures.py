"""trend figures: each recording's call figures and goals met, and their sums per day that the trends read, filled
from the stored results

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

BATCH = 1000

recordings = sa.table('recordings', sa.column('id', sa.BigInteger), sa.column('account', sa.String),
                      sa.column('project_id', sa.BigInteger), sa.column('operator_id', sa.BigInteger),
                      sa.column('created_at', sa.DateTime), sa.column('pause_compliance', sa.Float),
                      sa.column('agent_talk_ms', sa.BigInteger), sa.column('customer_talk_ms', sa.BigInteger),
                      sa.column('emotion', sa.String))
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
    op.create_table('trend_days',
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('project_id', sa.BigInteger(), nullable=False),
    sa.Column('operator_id', sa.BigInteger(), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('emotion', sa.String(length=16), nullable=False),
    sa.Column('calls', sa.BigInteger(), nullable=False),
    sa.Column('pause_compliance_sum', sa.Float(), nullable=False),
    sa.Column('agent_talk_ms', sa.BigInteger(), nullable=False),
    sa.Column('customer_talk_ms', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('account', 'project_id', 'operator_id', 'day', 'emotion', name=op.f('pk_trend_days'))
    )
    op.create_table('trend_goal_days',
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('operator_id', sa.BigInteger(), nullable=False),
    sa.Column('project_id', sa.BigInteger(), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('goal_id', sa.BigInteger(), nullable=False),
    sa.Column('calls', sa.BigInteger(), nullable=False),
    sa.Column('met', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('account', 'operator_id', 'project_id', 'day', 'goal_id', name=op.f('pk_trend_goal_days'))
    )
    _backfill()
    _sum()


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


def _sum() -> None:
    """The sums per day of the figures just filled, as callscope/catalog/trend_sums.py keeps them: each recording
    counted for every project and operator (0), its project, its operator and both."""
    conn = op.get_bind()
    r, g = recordings, recording_goals
    day = (sa.func.substr(r.c.created_at, 1, 10) if conn.dialect.name == 'sqlite'  # stored as UTC text
           else sa.cast(sa.func.timezone(sa.literal_column("'UTC'"), r.c.created_at), sa.Date))
    every = sa.literal(0, sa.BigInteger)
    emotion = sa.func.coalesce(r.c.emotion, '')
    sums = [sa.func.count(), sa.func.sum(r.c.pause_compliance), sa.func.coalesce(sa.func.sum(r.c.agent_talk_ms), 0),
            sa.func.coalesce(sa.func.sum(r.c.customer_talk_ms), 0)]
    analysed = r.c.pause_compliance.is_not(None)
    has_operator = r.c.operator_id.is_not(None)
    for project, operator, where in ((every, every, analysed), (r.c.project_id, every, analysed),
                                     (every, r.c.operator_id, sa.and_(analysed, has_operator)),
                                     (r.c.project_id, r.c.operator_id, sa.and_(analysed, has_operator))):
        conn.execute(sa.table('trend_days', *map(sa.column, (
            'account', 'project_id', 'operator_id', 'day', 'emotion', 'calls', 'pause_compliance_sum',
            'agent_talk_ms', 'customer_talk_ms'))).insert().from_select(
            ['account', 'project_id', 'operator_id', 'day', 'emotion', 'calls', 'pause_compliance_sum',
             'agent_talk_ms', 'customer_talk_ms'],
            sa.select(r.c.account, project, operator, day, emotion, *sums).where(where)
            .group_by(r.c.account, project, operator, day, emotion)))
    joined = r.join(g, g.c.recording_id == r.c.id)
    for operator, where in ((every, analysed), (r.c.operator_id, sa.and_(analysed, has_operator))):
        conn.execute(sa.table('trend_goal_days', *map(sa.column, (
            'account', 'operator_id', 'project_id', 'day', 'goal_id', 'calls', 'met'))).insert().from_select(
            ['account', 'operator_id', 'project_id', 'day', 'goal_id', 'calls', 'met'],
            sa.select(r.c.account, operator, r.c.project_id, day, g.c.goal_id, sa.func.count(),
                      sa.func.sum(sa.case((g.c.met, 1), else_=0))).select_from(joined).where(where)
            .group_by(r.c.account, operator, r.c.project_id, day, g.c.goal_id)))


def downgrade() -> None:
    op.drop_table('trend_goal_days')
    op.drop_table('trend_days')
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.drop_column('emotion')
        batch_op.drop_column('customer_talk_ms')
        batch_op.drop_column('agent_talk_ms')
        batch_op.drop_column('pause_compliance')
    op.drop_table('recording_goals')
