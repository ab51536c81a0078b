"""search_phrase_terms: on PostgreSQL, each segment's tsvector also holds a lexeme per pair of adjacent stems
('broken blender', without positions; no lexeme of a word holds a space), so that a phrase is first narrowed by its
pairs through the GIN index, which holds no positions, and only the segments holding every pair are read to check
the phrase itself. Without them a phrase of two common words that are never next to each other read every segment
holding both (76,686 at 100,000 calls: 330 to 620 ms, benchmarks/RESULTS.md). The stored vectors are rewritten in
batches (the table's old rows are autovacuum's to reclaim after); the trigger writes the pairs from then on. The
previous release reads the vectors as before (the pairs are lexemes it never asks for). SQLite's FTS5 index holds
positions: nothing changes there.

Revision ID: 0016_search_phrase_terms
Revises: 0015_scorecards
Create Date: 2026-12-04 16:00:00

"""
from collections.abc import Sequence

from alembic import op

revision: str = '0016_search_phrase_terms'
down_revision: str | Sequence[str] | None = '0015_scorecards'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 100_000  # segments rewritten per statement

FUNCTIONS = [
    # Every pair of lexemes at adjacent positions of `words`, as one lexeme of the two joined by a space, without
    # positions (a stop word between two words leaves a gap: no pair). Phrase matching reads the same positions.
    # A pair longer than a lexeme may be (2047 bytes) is left out, of a segment's terms and of a query's alike.
    """CREATE FUNCTION search_pairs(words tsvector) RETURNS tsvector LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
       SELECT coalesce(array_to_tsvector(array_agg(first.lexeme || ' ' || second.lexeme)), '')
       FROM (SELECT lexeme, unnest(positions) AS at FROM unnest(words)) AS first
       JOIN (SELECT lexeme, unnest(positions) AS at FROM unnest(words)) AS second ON second.at = first.at + 1
       WHERE octet_length(first.lexeme) + octet_length(second.lexeme) < 2047 $$""",
    # A segment's tsvector: its folded words stemmed by its configuration, and their pairs.
    """CREATE FUNCTION search_tsv(config regconfig, terms text) RETURNS tsvector LANGUAGE sql IMMUTABLE STRICT
       PARALLEL SAFE AS $$ SELECT words || search_pairs(words) FROM to_tsvector(config, terms) AS words $$""",
    # to_tsquery(config, query) and, for each group of `phrases` (a group's phrases one a line, any of which must
    # match), the pairs of one of them: a filter the GIN index reads exactly, implied by the query itself. A group
    # with a phrase of no pair (one word left by the stop words) narrows nothing. Made once per query where its
    # arguments are constants (150 µs); its cost keeps the planner from a generic plan that makes it for each row.
    r"""CREATE FUNCTION search_tsquery(config regconfig, query text, phrases text[]) RETURNS tsquery
       LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE COST 10000 AS $$
       DECLARE
         found tsquery := to_tsquery(config, query);
         phrase_group text;
         phrase text;
         alternatives text[];
         pairs text;
       BEGIN
         FOREACH phrase_group IN ARRAY phrases LOOP
           alternatives := '{}';
           FOREACH phrase IN ARRAY string_to_array(phrase_group, E'\n') LOOP
             SELECT string_agg('''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''', ' & ')
               INTO pairs FROM unnest(search_pairs(to_tsvector(config, phrase)));
             IF pairs IS NULL THEN
               alternatives := NULL;
               EXIT;
             END IF;
             alternatives := alternatives || ('(' || pairs || ')');
           END LOOP;
           IF alternatives IS NOT NULL THEN
             found := found && array_to_string(alternatives, ' | ')::tsquery;
           END IF;
         END LOOP;
         RETURN found;
       END $$""",
]


def _rewrite(tsv: str) -> None:
    """Every stored vector set to `tsv` (an expression of the row), in batches of ids. The GIN indexes stay (their
    pending lists take the new entries: 18 s a 300,000 segments against 16 s without them, and no rebuild after),
    so that the previous release goes on searching while this runs; a recording deleted meanwhile waits for it."""
    conn = op.get_bind()
    last = conn.exec_driver_sql("SELECT coalesce(max(id), 0) FROM search_segments").scalar() or 0
    for first in range(0, last, BATCH):
        conn.exec_driver_sql(f"UPDATE search_segments SET tsv = {tsv} WHERE id > {first} AND id <= {first + BATCH}")


def upgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        return
    for statement in FUNCTIONS:
        op.execute(statement)
    op.execute("""CREATE OR REPLACE FUNCTION search_segments_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN NEW.tsv := search_tsv(NEW.config::regconfig, NEW.terms); RETURN NEW; END $$""")
    _rewrite("tsv || search_pairs(tsv)")  # the stored vectors are their words' (migration 0010's trigger)
    # A call's segments lie together, so ANALYZE's sample guessed 16,902 calls among 110,000 (benchmarks/search.py,
    # 100,000 calls): 650 segments a call, and a window of calls 6.5 times its size, for which the planner read
    # every match of a word in the table (3.3 s) rather than AND the word's index with the window's segments
    # (0.3 s). About 100 segments a call, as a call of a few minutes has.
    op.execute("ALTER TABLE search_segments ALTER COLUMN recording_id SET (n_distinct = -0.01)")
    op.execute("ANALYZE search_segments")  # and the words' statistics, with the pairs


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        return
    op.execute("""CREATE OR REPLACE FUNCTION search_segments_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN NEW.tsv := to_tsvector(NEW.config::regconfig, NEW.terms); RETURN NEW; END $$""")
    _rewrite("to_tsvector(config::regconfig, terms)")
    op.execute("ALTER TABLE search_segments ALTER COLUMN recording_id RESET (n_distinct)")
    for function in ("search_tsquery(regconfig, text, text[])", "search_tsv(regconfig, text)",
                     "search_pairs(tsvector)"):
        op.execute(f"DROP FUNCTION {function}")
