"""search_vectors: each analysed call's segment vectors in one row, as 8-bit codes (callscope/search/vectors.py), in
place of a float32 vector on each segment row: a quarter of the bytes, read in one row per call when a process first
searches an account by meaning, and no longer inside the rows the full-text search reads (on PostgreSQL a 1.5 KB
vector kept four segments to a heap page). The vectors already stored move over.

Revision ID: 0012_search_vectors
Revises: 0011_trackers
Create Date: 2026-12-04 11:00:00

"""
from collections.abc import Sequence
from itertools import groupby

import numpy as np
import sqlalchemy as sa
from alembic import op

revision: str = '0012_search_vectors'
down_revision: str | Sequence[str] | None = '0011_trackers'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# callscope/search/vectors.py at this revision: a byte a component, u standing for -1 + (u + 0.5) * STEP
STEP = 2 / 255
BATCH = 200  # calls per insert


def _codes(vectors: list[bytes]) -> bytes:
    matrix = np.frombuffer(b"".join(vectors), np.float32).reshape(len(vectors), -1)
    return np.clip(np.floor((matrix + 1) / STEP), 0, 255).astype(np.uint8).tobytes()


def upgrade() -> None:
    op.create_table('search_vectors',
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('codes', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'],
                            name=op.f('fk_search_vectors_recording_id_recordings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('recording_id', name=op.f('pk_search_vectors'))
    )
    conn = op.get_bind()
    segments = conn.execute(sa.text(
        "SELECT s.recording_id, s.vector, c.segments FROM search_segments AS s JOIN (SELECT recording_id, count(*)"
        " AS segments FROM search_segments GROUP BY recording_id) AS c ON c.recording_id = s.recording_id"
        " WHERE s.vector IS NOT NULL ORDER BY s.recording_id, s.id").execution_options(yield_per=10_000))
    rows = []
    for rid, group in groupby(segments, key=lambda row: row[0]):
        found = list(group)
        lengths = {len(row[1]) for row in found}
        if len(found) == found[0][2] and len(lengths) == 1:  # every segment has a vector, all of one model
            rows.append({"recording_id": rid, "codes": _codes([row[1] for row in found])})
        if len(rows) == BATCH:
            conn.execute(sa.text("INSERT INTO search_vectors (recording_id, codes) VALUES (:recording_id, :codes)"),
                         rows)
            rows = []
    if rows:
        conn.execute(sa.text("INSERT INTO search_vectors (recording_id, codes) VALUES (:recording_id, :codes)"), rows)
    op.drop_column('search_segments', 'vector')  # SQLite 3.35 and later drop it in place: its FTS5 triggers stay


def downgrade() -> None:
    op.add_column('search_segments', sa.Column('vector', sa.LargeBinary(), nullable=True))
    conn = op.get_bind()
    for rid, codes in conn.execute(sa.text("SELECT recording_id, codes FROM search_vectors")).all():
        ids = conn.execute(sa.text("SELECT id FROM search_segments WHERE recording_id = :rid ORDER BY id"),
                           {"rid": rid}).scalars().all()
        vectors = np.frombuffer(codes, np.uint8).reshape(len(ids), -1).astype(np.float32) * STEP + (STEP / 2 - 1)
        conn.execute(sa.text("UPDATE search_segments SET vector = :vector WHERE id = :id"),
                     [{"id": sid, "vector": vector.tobytes()} for sid, vector in zip(ids, vectors, strict=True)])
    op.drop_table('search_vectors')
