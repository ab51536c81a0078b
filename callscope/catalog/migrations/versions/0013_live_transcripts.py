"""live_transcripts: the finals of a recording that was a live call, kept beside its analysis. Nothing to fill: the
calls recorded before had no live transcript

Revision ID: 0013_live_transcripts
Revises: 0012_search_vectors
Create Date: 2026-12-04 13:10:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0013_live_transcripts'
down_revision: str | Sequence[str] | None = '0012_search_vectors'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('live_transcripts',
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('document', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'],
                            name=op.f('fk_live_transcripts_recording_id_recordings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('recording_id', name=op.f('pk_live_transcripts'))
    )


def downgrade() -> None:
    op.drop_table('live_transcripts')
