"""member sign-in: one-time links and sessions of the members' web pages

Revision ID: 0005_member_sign_in
Revises: 0004
Create Date: 2026-11-24 13:45:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0005_member_sign_in'
down_revision: str | Sequence[str] | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('sign_in_links',
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('email', sa.String(length=320), nullable=False),
    sa.Column('next_path', sa.String(length=2048), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('used_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('token_hash', name=op.f('pk_sign_in_links'))
    )
    op.create_index(op.f('ix_sign_in_links_expires_at'), 'sign_in_links', ['expires_at'], unique=False)
    op.create_table('member_sessions',
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('email', sa.String(length=320), nullable=False),
    sa.Column('account', sa.String(length=128), nullable=True),
    sa.Column('csrf_token', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('token_hash', name=op.f('pk_member_sessions'))
    )
    op.create_index(op.f('ix_member_sessions_email'), 'member_sessions', ['email'], unique=False)
    op.create_index(op.f('ix_member_sessions_expires_at'), 'member_sessions', ['expires_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_member_sessions_expires_at'), table_name='member_sessions')
    op.drop_index(op.f('ix_member_sessions_email'), table_name='member_sessions')
    op.drop_table('member_sessions')
    op.drop_index(op.f('ix_sign_in_links_expires_at'), table_name='sign_in_links')
    op.drop_table('sign_in_links')
