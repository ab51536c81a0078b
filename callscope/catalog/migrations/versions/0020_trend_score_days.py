"""trend_score_days: the scorecard figures' sums per day that the trends read (the average score per form, agent,
section and question, and the reviewers' changes per question), kept as callscope/catalog/trend_sums.py keeps them
and filled from the calls' stored scores (recording_scorecards, recording_scorecard_parts).

Revision ID: 0020_trend_score_days
Revises: 0019_recording_notes
Create Date: 2026-12-05 00:10:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0020_trend_score_days'
down_revision: str | Sequence[str] | None = '0019_recording_notes'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ['account', 'operator_id', 'project_id', 'day', 'scorecard_id', 'kind', 'name', 'calls', 'scored',
           'score_sum', 'reviewed', 'changed']

recordings = sa.table('recordings', sa.column('id', sa.BigInteger), sa.column('account', sa.String),
                      sa.column('project_id', sa.BigInteger), sa.column('operator_id', sa.BigInteger),
                      sa.column('created_at', sa.DateTime), sa.column('pause_compliance', sa.Float))
scores = sa.table('recording_scorecards', sa.column('recording_id', sa.BigInteger),
                  sa.column('scorecard_id', sa.BigInteger), sa.column('score', sa.Float),
                  sa.column('reviewed_at', sa.DateTime))
parts = sa.table('recording_scorecard_parts', sa.column('recording_id', sa.BigInteger),
                 sa.column('scorecard_id', sa.BigInteger), sa.column('kind', sa.String), sa.column('name', sa.String),
                 sa.column('score', sa.Float), sa.column('changed', sa.Boolean))


def upgrade() -> None:
    op.create_table('trend_score_days',
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('operator_id', sa.BigInteger(), nullable=False),
    sa.Column('project_id', sa.BigInteger(), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('scorecard_id', sa.BigInteger(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('name', sa.String(length=400), nullable=False),
    sa.Column('calls', sa.BigInteger(), nullable=False),
    sa.Column('scored', sa.BigInteger(), nullable=False),
    sa.Column('score_sum', sa.Float(), nullable=False),
    sa.Column('reviewed', sa.BigInteger(), nullable=False),
    sa.Column('changed', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('account', 'operator_id', 'project_id', 'day', 'scorecard_id', 'kind', 'name',
                            name=op.f('pk_trend_score_days'))
    )
    _sum()


def _sum() -> None:
    """The sums of the analysed calls' scores, as callscope/catalog/trend_sums.py keeps them: each call counted for
    every project and operator (0), its project, its operator (-1: none) and both; a form's own score as kind
    "total" (name "")."""
    conn = op.get_bind()
    r, rs, p = recordings, scores, parts
    day = (sa.func.substr(r.c.created_at, 1, 10) if conn.dialect.name == 'sqlite'  # stored as UTC text
           else sa.cast(sa.func.timezone(sa.literal_column("'UTC'"), r.c.created_at), sa.Date))
    every = sa.literal(0, sa.BigInteger)
    operator_of = sa.func.coalesce(r.c.operator_id, -1)
    analysed = r.c.pause_compliance.is_not(None)
    total = (sa.literal('total'), sa.literal(''), rs.c.score, sa.literal(0), sa.literal(0))
    reviewed = sa.case((sa.or_(rs.c.reviewed_at.is_not(None), p.c.changed), 1), else_=0)
    part = (p.c.kind, p.c.name, p.c.score, reviewed, sa.case((p.c.changed, 1), else_=0))
    scored_calls = r.join(rs, rs.c.recording_id == r.c.id)
    scored_parts = scored_calls.join(p, sa.and_(p.c.recording_id == rs.c.recording_id,
                                                p.c.scorecard_id == rs.c.scorecard_id))
    target = sa.table('trend_score_days', *map(sa.column, COLUMNS))
    for joined, (kind, name, score, seen, changed) in ((scored_calls, total), (scored_parts, part)):
        for project, operator in ((every, every), (r.c.project_id, every), (every, operator_of),
                                  (r.c.project_id, operator_of)):
            keys = (r.c.account, operator, project, day, rs.c.scorecard_id, kind, name)
            conn.execute(target.insert().from_select(COLUMNS, sa.select(
                *keys, sa.func.count(), sa.func.count(score), sa.func.coalesce(sa.func.sum(score), 0.0),
                sa.func.sum(seen), sa.func.sum(changed)).select_from(joined).where(analysed).group_by(*keys)))


def downgrade() -> None:
    op.drop_table('trend_score_days')
