"""recordings, tags, jobs, shares

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 03:32:36.367622

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0002'
down_revision: str | Sequence[str] | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('recordings',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('public_id', sa.String(length=36), nullable=False),
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('project_id', sa.BigInteger(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('external_id', sa.String(length=255), nullable=True),
    sa.Column('operator_id', sa.BigInteger(), nullable=True),
    sa.Column('called_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('language', sa.String(length=16), nullable=False),
    sa.Column('recording_source', sa.String(length=64), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('status_reason', sa.Text(), nullable=True),
    sa.Column('stage', sa.String(length=32), nullable=True),
    sa.Column('progress', sa.Integer(), nullable=False),
    sa.Column('duration_ms', sa.BigInteger(), nullable=False),
    sa.Column('audio_format', sa.String(length=8), nullable=False),
    sa.Column('size_bytes', sa.BigInteger(), nullable=False),
    sa.Column('original_filename', sa.String(length=255), nullable=True),
    sa.Column('blob_key', sa.String(length=512), nullable=True),
    sa.Column('dialogues_count', sa.Integer(), nullable=False),
    sa.Column('goals_evaluated', sa.Boolean(), nullable=False),
    sa.Column('pauses_detected', sa.Integer(), nullable=False),
    sa.Column('processing_restricted', sa.Boolean(), nullable=False),
    sa.Column('quality_score', sa.Float(), nullable=True),
    sa.Column('conversation_id', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_recordings')),
    sa.UniqueConstraint('project_id', 'external_id', name='uq_recordings_project_id_external_id'),
    sa.UniqueConstraint('public_id', name=op.f('uq_recordings_public_id'))
    )
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.create_index('ix_recordings_account_called_at', ['account', 'called_at'], unique=False)
        batch_op.create_index('ix_recordings_account_created', ['account', 'created_at', 'id'], unique=False)
        batch_op.create_index('ix_recordings_account_operator', ['account', 'operator_id'], unique=False)
        batch_op.create_index('ix_recordings_account_project_created', ['account', 'project_id', 'created_at', 'id'],
                              unique=False)
        batch_op.create_index('ix_recordings_account_status_created', ['account', 'status', 'created_at', 'id'],
                              unique=False)
        batch_op.create_index('ix_recordings_conversation', ['conversation_id'], unique=False)

    op.create_table('shares',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('conversation_id', sa.String(length=36), nullable=False),
    sa.Column('everyone', sa.Boolean(), nullable=False),
    sa.Column('member_email', sa.String(length=320), nullable=False),
    sa.Column('shared_by_type', sa.String(length=16), nullable=False),
    sa.Column('shared_by_name', sa.String(length=255), nullable=False),
    sa.Column('shared_by_ref', sa.String(length=64), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_shares')),
    sa.UniqueConstraint('conversation_id', 'member_email', name='uq_shares_conversation_id_member_email')
    )
    with op.batch_alter_table('shares', schema=None) as batch_op:
        batch_op.create_index('ix_shares_conversation_id', ['conversation_id'], unique=False)

    op.create_table('jobs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('available_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('lease_owner', sa.String(length=128), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'], name=op.f('fk_jobs_recording_id_recordings'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs'))
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_jobs_recording_id'), ['recording_id'], unique=False)
        batch_op.create_index('ix_jobs_state_available_at', ['state', 'available_at'], unique=False)

    op.create_table('recording_tags',
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('tag_id', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'], name=op.f('fk_recording_tags_recording_id_recordings'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('recording_id', 'tag_id', name=op.f('pk_recording_tags'))
    )
    with op.batch_alter_table('recording_tags', schema=None) as batch_op:
        batch_op.create_index('ix_recording_tags_tag_id', ['tag_id'], unique=False)



def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('recording_tags', schema=None) as batch_op:
        batch_op.drop_index('ix_recording_tags_tag_id')

    op.drop_table('recording_tags')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index('ix_jobs_state_available_at')
        batch_op.drop_index(batch_op.f('ix_jobs_recording_id'))

    op.drop_table('jobs')
    with op.batch_alter_table('shares', schema=None) as batch_op:
        batch_op.drop_index('ix_shares_conversation_id')

    op.drop_table('shares')
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.drop_index('ix_recordings_conversation')
        batch_op.drop_index('ix_recordings_account_status_created')
        batch_op.drop_index('ix_recordings_account_project_created')
        batch_op.drop_index('ix_recordings_account_operator')
        batch_op.drop_index('ix_recordings_account_created')
        batch_op.drop_index('ix_recordings_account_called_at')

    op.drop_table('recordings')
