"""recording_notes: the notes members (and API keys) write on a recording, each with its author and time, deleted with
the recording. Nothing to fill.

Revision ID: 0019_recording_notes
Revises: 0018_scorecard_parts
Create Date: 2026-12-04 20:30:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0019_recording_notes'
down_revision: str | Sequence[str] | None = '0018_scorecard_parts'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('recording_notes',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('author_type', sa.String(length=16), nullable=False),
    sa.Column('author_ref', sa.String(length=320), nullable=False),
    sa.Column('author_name', sa.String(length=255), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'],
                            name=op.f('fk_recording_notes_recording_id_recordings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_recording_notes'))
    )
    op.create_index('ix_recording_notes_recording', 'recording_notes', ['recording_id', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_recording_notes_recording', table_name='recording_notes')
    op.drop_table('recording_notes')
