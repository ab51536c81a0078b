"""Phrases on PostgreSQL (migration 0016): each segment's tsvector holds a lexeme per pair of adjacent stems, written
by the trigger for new rows and by the migration for those stored before it; a phrase is narrowed by its pairs
through the GIN index, finds exactly the segments saying it, and no segment holding its words apart; the pairs
change neither ts_rank nor what is matched. SQLite (FTS5 holds positions) finds the same."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import text

from callscope.catalog import search as rows
from callscope.catalog import search_postgres
from callscope.catalog.recordings import Scope
from callscope.catalog.search import SearchFilters
from callscope.search.syntax import parse
from tests.queue.rows import add_recording
from tests.search.test_catalog_search import found, index

LINES = ["my blender arrived broken", "the broken blender again", "a broken, blender!", "broken is the blender",
         "Broken blenders everywhere", "blender broken broken blender", "I would like a refund today"]
SAID = ["the broken blender again", "a broken, blender!", "Broken blenders everywhere", "blender broken broken blender"]


def _migrate(catalog, revision: str) -> None:
    cfg = catalog.alembic_config()
    with catalog.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        if revision == "head":
            command.upgrade(cfg, revision)
        else:
            command.downgrade(cfg, revision)


def _pairs(catalog) -> int:
    """How many segments the GIN index finds holding the pair lexeme of `broken blender`."""
    with catalog.session() as session:
        return session.scalar(text("SELECT count(*) FROM search_segments WHERE config = 'english' "
                                   "AND tsv @@ CAST('''broken blender''' AS tsquery)"))


def test_a_phrase_finds_exactly_the_segments_saying_it(catalog) -> None:
    rid = add_recording(catalog, status="completed")
    index(catalog, rid, LINES)
    assert sorted(found(catalog, '"broken blender"')) == sorted(SAID)
    assert found(catalog, '"blender broken"') == ["blender broken broken blender"]  # in this order
    assert found(catalog, '"refund broken"') == []  # both words common, never side by side
    assert found(catalog, '"like refund"') == []  # a stop word between them
    assert sorted(found(catalog, '"like a refund" OR "arrived broken"')) == ["I would like a refund today",
                                                                           "my blender arrived broken"]
    assert sorted(found(catalog, '"broken blender" -everywhere')) == sorted(SAID[:2] + SAID[3:])
    if catalog.dialect == "postgresql":
        assert _pairs(catalog) == 4  # the trigger wrote the pairs
    long_words = "a kettle " + "k" * 1100 + " " + "l" * 1100  # their pair is longer than a lexeme may be: left out
    index(catalog, add_recording(catalog, status="completed"), [long_words])
    assert found(catalog, '"a kettle"') == [long_words]


def test_the_migration_rewrites_the_stored_vectors_with_their_pairs(catalog) -> None:
    if catalog.dialect != "postgresql":
        pytest.skip("PostgreSQL's tsvector (SQLite's FTS5 index holds positions)")
    rid = add_recording(catalog, status="completed")
    index(catalog, rid, LINES)
    try:
        _migrate(catalog, "0015_scorecards")
        assert _pairs(catalog) == 0  # the vectors as migration 0010's trigger wrote them
        with catalog.session() as session:
            # a search before the upgrade: its vectors hold no pair, so a phrase narrowed by them finds nothing
            assert session.scalar(text("SELECT to_regproc('search_tsquery')")) is None
    finally:
        _migrate(catalog, "head")
    assert _pairs(catalog) == 4
    assert sorted(found(catalog, '"broken blender"')) == sorted(SAID)
    assert found(catalog, '"refund broken"') == []
    with catalog.session() as session:  # each stored vector is its words' and their pairs', as the trigger writes it
        assert session.scalar(text("SELECT count(*) FROM search_segments "
                                   "WHERE tsv <> search_tsv(config::regconfig, terms)")) == 0


def test_pairs_change_neither_the_rank_nor_the_match(catalog) -> None:
    if catalog.dialect != "postgresql":
        pytest.skip("PostgreSQL's ts_rank")
    rid = add_recording(catalog, status="completed")
    index(catalog, rid, LINES)
    scope = Scope("acme")
    for q in ['"broken blender"', "broken blender", '"broken blender" OR refund', "blender -\"broken blender\""]:
        query = parse(q)
        with catalog.session() as session:
            ranked, _ = rows.keyword(session, scope, SearchFilters(), query, ["english"], 0, 100)
            # the rank and the match of the words alone: to_tsvector as migration 0010 wrote it
            plain = dict(session.execute(text(
                "SELECT id, ts_rank(to_tsvector('english', terms), to_tsquery('english', :q)) FROM search_segments "
                "WHERE to_tsvector('english', terms) @@ to_tsquery('english', :q)"),
                {"q": search_postgres.render(query)}).all())
        assert {r.segment_id: pytest.approx(r.score) for r in ranked} == plain, q
