"""analyses, webhooks, voiceprints, job leases

Analyses of recordings, the webhook outbox and its attempts, disabled webhook endpoints, operator voiceprints;
job heartbeat/finish times and at most one queued-or-running job per recording (a partial unique index).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 17:48:58.649271

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0003'
down_revision: str | Sequence[str] | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('voiceprints',
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('operator_id', sa.BigInteger(), nullable=False),
    sa.Column('model', sa.String(length=128), nullable=False),
    sa.Column('embedding', sa.LargeBinary(), nullable=False),
    sa.Column('speech_ms', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('account', 'operator_id', name=op.f('pk_voiceprints'))
    )
    op.create_table('webhook_endpoints',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('project_id', sa.BigInteger(), nullable=False),
    sa.Column('url', sa.String(length=2048), nullable=False),
    sa.Column('disabled_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('disabled_reason', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_endpoints')),
    sa.UniqueConstraint('account', 'project_id', 'url', name='uq_webhook_endpoints_account')
    )
    op.create_table('webhook_events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('message_id', sa.String(length=64), nullable=False),
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('project_id', sa.BigInteger(), nullable=False),
    sa.Column('recording_id', sa.BigInteger(), nullable=True),
    sa.Column('event_type', sa.String(length=64), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('payload', sa.Text(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('lease_owner', sa.String(length=128), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_status_code', sa.Integer(), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_events')),
    sa.UniqueConstraint('message_id', name=op.f('uq_webhook_events_message_id'))
    )
    with op.batch_alter_table('webhook_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_webhook_events_recording_id'), ['recording_id'], unique=False)
        batch_op.create_index('ix_webhook_events_state_next_attempt_at', ['state', 'next_attempt_at'], unique=False)

    op.create_table('analyses',
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('transcript_key', sa.String(length=512), nullable=False),
    sa.Column('results', sa.Text(), nullable=False),
    sa.Column('summary', sa.Text(), nullable=True),
    sa.Column('language', sa.String(length=16), nullable=True),
    sa.Column('completed_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'], name=op.f('fk_analyses_recording_id_recordings'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('recording_id', name=op.f('pk_analyses'))
    )
    op.create_table('webhook_attempts',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('event_id', sa.BigInteger(), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('duration_ms', sa.Integer(), nullable=False),
    sa.Column('status_code', sa.Integer(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('response_excerpt', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['event_id'], ['webhook_events.id'],
                            name=op.f('fk_webhook_attempts_event_id_webhook_events'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_attempts'))
    )
    with op.batch_alter_table('webhook_attempts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_webhook_attempts_event_id'), ['event_id'], unique=False)

    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index('uq_jobs_active_recording', ['recording_id'], unique=True,
                              sqlite_where=sa.text("state IN ('queued', 'running')"),
                              postgresql_where=sa.text("state IN ('queued', 'running')"))



def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index('uq_jobs_active_recording', sqlite_where=sa.text("state IN ('queued', 'running')"),
                            postgresql_where=sa.text("state IN ('queued', 'running')"))
        batch_op.drop_column('finished_at')
        batch_op.drop_column('heartbeat_at')

    with op.batch_alter_table('webhook_attempts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_webhook_attempts_event_id'))

    op.drop_table('webhook_attempts')
    op.drop_table('analyses')
    with op.batch_alter_table('webhook_events', schema=None) as batch_op:
        batch_op.drop_index('ix_webhook_events_state_next_attempt_at')
        batch_op.drop_index(batch_op.f('ix_webhook_events_recording_id'))

    op.drop_table('webhook_events')
    op.drop_table('webhook_endpoints')
    op.drop_table('voiceprints')
