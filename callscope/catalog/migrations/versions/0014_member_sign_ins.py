"""member_sign_ins: when each person first and last signed in, so that Settings tells an invited member (never signed
in) from an active one. Nothing to fill: who signed in before is not known (their next sign-in records it)

Revision ID: 0014_member_sign_ins
Revises: 0013_live_transcripts
Create Date: 2026-12-04 14:00:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0014_member_sign_ins'
down_revision: str | Sequence[str] | None = '0013_live_transcripts'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('member_sign_ins',
    sa.Column('email', sa.String(length=320), nullable=False),
    sa.Column('first_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('email', name=op.f('pk_member_sign_ins'))
    )


def downgrade() -> None:
    op.drop_table('member_sign_ins')
