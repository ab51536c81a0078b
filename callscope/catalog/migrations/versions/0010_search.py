"""search: each analysed call's transcript segments with their words and vectors, the categories found in it, and
each engine's full-text index of the words (SQLite: an FTS5 table its triggers keep; PostgreSQL: a tsvector column
filled by a trigger, with a GIN index per language)

Revision ID: 0010_search
Revises: 0009_api_key_usage_hourly
Create Date: 2026-12-04 06:00:00

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0010_search'
down_revision: str | Sequence[str] | None = '0009_api_key_usage_hourly'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The words arrive folded and stemmed, each prefixed with its language's stemmer (callscope/catalog/search_sqlite.py):
# the tokenizer only splits them; remove_diacritics also folds what a hand may have written.
SQLITE = [
    """CREATE VIRTUAL TABLE search_fts USING fts5(terms, content='search_segments', content_rowid='id',
       tokenize="unicode61 remove_diacritics 2 tokenchars '_'")""",
    """CREATE TRIGGER search_segments_fts_insert AFTER INSERT ON search_segments BEGIN
       INSERT INTO search_fts(rowid, terms) VALUES (new.id, new.terms); END""",
    # a recording's deletion cascades to its segments, and SQLite runs this trigger for each of them
    """CREATE TRIGGER search_segments_fts_delete AFTER DELETE ON search_segments BEGIN
       INSERT INTO search_fts(search_fts, rowid, terms) VALUES ('delete', old.id, old.terms); END""",
]
# callscope/search/words.py CONFIGURATIONS at this revision: each language's words get a GIN index of their own, so
# that a query looks up one language's segments only (a word is indexed alike in several languages' segments).
CONFIGURATIONS = ('simple', 'arabic', 'danish', 'dutch', 'english', 'finnish', 'french', 'german', 'greek', 'hungarian',
                  'indonesian', 'irish', 'italian', 'lithuanian', 'nepali', 'norwegian', 'portuguese', 'romanian',
                  'russian', 'spanish', 'swedish', 'tamil', 'turkish')
# The words arrive folded (callscope/catalog/search_postgres.py); the segment's text-search configuration stems them.
POSTGRES = [
    "ALTER TABLE search_segments ADD COLUMN tsv tsvector",
    *(f"CREATE INDEX ix_search_segments_tsv_{config} ON search_segments USING gin (tsv) WHERE config = '{config}'"
      for config in CONFIGURATIONS),
    """CREATE FUNCTION search_segments_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN NEW.tsv := to_tsvector(NEW.config::regconfig, NEW.terms); RETURN NEW; END $$""",
    """CREATE TRIGGER search_segments_tsv BEFORE INSERT ON search_segments
       FOR EACH ROW EXECUTE FUNCTION search_segments_tsv()""",
]


def upgrade() -> None:
    op.create_table('search_segments',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('start_ms', sa.BigInteger(), nullable=False),
    sa.Column('end_ms', sa.BigInteger(), nullable=False),
    sa.Column('speaker', sa.String(length=64), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('operator_id', sa.BigInteger(), nullable=True),
    sa.Column('emotion', sa.String(length=16), nullable=True),
    sa.Column('config', sa.String(length=16), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('terms', sa.Text(), nullable=False),
    sa.Column('vector', sa.LargeBinary(), nullable=True),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'],
                            name=op.f('fk_search_segments_recording_id_recordings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_search_segments'))
    )
    op.create_index(op.f('ix_search_segments_recording_id'), 'search_segments', ['recording_id'], unique=False)
    op.create_table('recording_categories',
    sa.Column('recording_id', sa.BigInteger(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.ForeignKeyConstraint(['recording_id'], ['recordings.id'],
                            name=op.f('fk_recording_categories_recording_id_recordings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('recording_id', 'name', name=op.f('pk_recording_categories')),
    sqlite_with_rowid=False
    )
    for statement in SQLITE if op.get_bind().dialect.name == 'sqlite' else POSTGRES:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        op.execute("DROP TABLE search_fts")
    else:
        op.execute("DROP FUNCTION search_segments_tsv() CASCADE")
    op.drop_table('recording_categories')
    op.drop_index(op.f('ix_search_segments_recording_id'), table_name='search_segments')
    op.drop_table('search_segments')
