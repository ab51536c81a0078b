"""scorecards: each recording's score on each QA form it was scored against (with who reviewed it), and the history
of reviewers' changes to its answers. Nothing to fill: calls analysed before are scored by their next analysis

Revision ID: 0015_scorecards
Revises: 0014_member_sign_ins
Create Date: 2026-12-04 16:00:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0015_scorecards'
down_revision: str | Sequence[str] | None = '0014_member_sign_ins'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('recording_scorecards',
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('scorecard_id', sa.BigInteger(), nullable=False),
    sa.Column('score', sa.Float(), nullable=True),
    sa.Column('auto_failed', sa.Boolean(), nullable=False),
    sa.Column('reviewed_by', sa.String(length=400), nullable=True),
    sa.Column('reviewed_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'],
                            name=op.f('fk_recording_scorecards_recording_id_recordings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('recording_id', 'scorecard_id', name=op.f('pk_recording_scorecards'))
    )
    op.create_index('ix_recording_scorecards_scorecard', 'recording_scorecards', ['scorecard_id', 'score'],
                    unique=False)
    op.create_table('scorecard_answer_changes',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('scorecard_id', sa.BigInteger(), nullable=False),
    sa.Column('question_id', sa.String(length=100), nullable=False),
    sa.Column('from_answer', sa.Text(), nullable=False),
    sa.Column('to_answer', sa.Text(), nullable=False),
    sa.Column('comment', sa.Text(), nullable=True),
    sa.Column('changed_by', sa.String(length=400), nullable=False),
    sa.Column('changed_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'],
                            name=op.f('fk_scorecard_answer_changes_recording_id_recordings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_scorecard_answer_changes'))
    )
    op.create_index('ix_scorecard_answer_changes_recording', 'scorecard_answer_changes',
                    ['recording_id', 'scorecard_id', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_scorecard_answer_changes_recording', table_name='scorecard_answer_changes')
    op.drop_table('scorecard_answer_changes')
    op.drop_index('ix_recording_scorecards_scorecard', table_name='recording_scorecards')
    op.drop_table('recording_scorecards')
