"""id claims, external_id unique per account

Which object each allocated integer id belongs to (the reconciler adopts an id label only when its claim
names that object), and the upload idempotency key (project_id, external_id) widened by the account, so two
accounts can never meet on one row even if their project ids once collided.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 09:30:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0004'
down_revision: str | Sequence[str] | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('id_claims',
    sa.Column('kind', sa.String(length=64), nullable=False),
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('account', sa.String(length=128), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.PrimaryKeyConstraint('kind', 'id', name=op.f('pk_id_claims'))
    )
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.drop_constraint('uq_recordings_project_id_external_id', type_='unique')
        batch_op.create_unique_constraint('uq_recordings_account_project_id_external_id',
                                          ['account', 'project_id', 'external_id'])


def downgrade() -> None:
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.drop_constraint('uq_recordings_account_project_id_external_id', type_='unique')
        batch_op.create_unique_constraint('uq_recordings_project_id_external_id', ['project_id', 'external_id'])
    op.drop_table('id_claims')
