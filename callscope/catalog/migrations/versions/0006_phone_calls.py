"""phone calls: the carrier's call id, routing state, answering operator and recording of a call; round-robin cursors;
the agent's channel of a recording whose source knows it

Revision ID: 0006_phone_calls
Revises: 0005_member_sign_in
Create Date: 2026-11-24 14:00:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006_phone_calls'
down_revision: str | Sequence[str] | None = '0005_member_sign_in'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('calls', schema=None) as batch_op:
        batch_op.add_column(sa.Column('provider_call_id', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('dial_order', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('dial_attempt', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('operator_id', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('recording_id', sa.BigInteger(), nullable=True))
        batch_op.create_unique_constraint('uq_calls_account_provider_call_id', ['account', 'provider_call_id'])
        batch_op.create_index('ix_calls_provider_call_id', ['provider_call_id'], unique=False)
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('agent_channel', sa.Integer(), nullable=True))
    op.create_table('routing_cursors',
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('virtual_number_id', sa.BigInteger(), nullable=False),
    sa.Column('operator_id', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('account', 'virtual_number_id', name=op.f('pk_routing_cursors'))
    )


def downgrade() -> None:
    op.drop_table('routing_cursors')
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.drop_column('agent_channel')
    with op.batch_alter_table('calls', schema=None) as batch_op:
        batch_op.drop_index('ix_calls_provider_call_id')
        batch_op.drop_constraint('uq_calls_account_provider_call_id', type_='unique')
        batch_op.drop_column('recording_id')
        batch_op.drop_column('operator_id')
        batch_op.drop_column('dial_attempt')
        batch_op.drop_column('dial_order')
        batch_op.drop_column('provider_call_id')
