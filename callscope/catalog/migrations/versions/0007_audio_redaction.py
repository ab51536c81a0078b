"""audio redaction: whether a recording's stored audio is redacted, and the unredacted audio where it is kept

Revision ID: 0007_audio_redaction
Revises: 0006_phone_calls
Create Date: 2026-11-27 08:10:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0007_audio_redaction'
down_revision: str | Sequence[str] | None = '0006_phone_calls'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('audio_redaction', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('original_blob_key', sa.String(length=512), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('recordings', schema=None) as batch_op:
        batch_op.drop_column('original_blob_key')
        batch_op.drop_column('audio_redaction')
