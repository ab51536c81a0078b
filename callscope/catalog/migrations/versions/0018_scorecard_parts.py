"""scorecard_parts: each recording's score on each section and question of the QA forms it was scored on, and whether
a reviewer changed the automatic answer, for the team's figures on Trends (averages per section and question, and
how often reviewers agree with each automatic answer); and the form's version each call was scored with, so that the
rescoring pass finds the calls a changed form must score again. Nothing to fill: the calls scored before have no
version, so the rescoring pass scores them again and writes their parts (docs/api.md, "Scorecards").

Revision ID: 0018_scorecard_parts
Revises: 0017_trace_parents
Create Date: 2026-12-04 20:30:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0018_scorecard_parts'
down_revision: str | Sequence[str] | None = '0017_trace_parents'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('recording_scorecards', sa.Column('version', sa.Integer(), nullable=True))
    op.create_table('recording_scorecard_parts',
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('scorecard_id', sa.BigInteger(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('name', sa.String(length=400), nullable=False),
    sa.Column('score', sa.Float(), nullable=True),
    sa.Column('changed', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'],
                            name=op.f('fk_recording_scorecard_parts_recording_id_recordings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('recording_id', 'scorecard_id', 'kind', 'name', name=op.f('pk_recording_scorecard_parts'))
    )


def downgrade() -> None:
    op.drop_table('recording_scorecard_parts')
    with op.batch_alter_table('recording_scorecards') as batch:
        batch.drop_column('version')
