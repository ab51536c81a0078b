"""Search's catalog queries on SQLite and PostgreSQL (the `catalog` fixture): whatever a person types, each engine
gets only its rendered query (fuzzed here, never an error); a recording's deletion takes its entries out of the
engine's own index in the same transaction; another account's entries are never matched; keyword ranks the newest
matches; the vectors are stored per call, in the order of the segments, and those held in memory follow re-analyses
and filters, the nearest first."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, func, select, text

from callscope.catalog import search as rows
from callscope.catalog import search_postgres
from callscope.catalog.recordings import Scope
from callscope.catalog.search import SearchFilters
from callscope.catalog.tables import Recording, SearchSegment, SearchVectors
from callscope.errors import ValidationFailed
from callscope.search import vectors as vectors_module
from callscope.search.entries import CallEntries, Entry
from callscope.search.syntax import parse
from callscope.search.vectors import AccountVectors, CallVectors, decode, encode
from callscope.search.words import CONFIGURATIONS
from tests.queue.rows import add_recording

SYNTAX = "'&|!:*()<>\"\\-_^~+{}[];,.%$#@`= \t"


def index(catalog, rid: int, lines: list[str], config: str = "english", vectors=None) -> None:
    call = CallEntries(config, [Entry(n, n * 1000, n * 1000 + 900, "speaker-1", "customer", None, "calm", line)
                                for n, line in enumerate(lines)], ["billing"])
    catalog.change(rows.index, rid, call, vectors)


def found(catalog, q: str, account: str = "acme") -> list[str]:
    with catalog.session() as session:
        scope = Scope(account)
        ranked, total = rows.keyword(session, scope, SearchFilters(), parse(q), rows.configs(session, scope), 0, 100)
        assert total == len(ranked)
        return [row.text for row in rows.hits(session, [r.segment_id for r in ranked]).values()]


def test_whatever_is_typed_each_engine_gets_only_its_rendering(catalog) -> None:
    rid = add_recording(catalog, status="completed")
    index(catalog, rid, ["I want a refund today", "Ünïcode wörds and 42 numbers", "cancel it -now"])
    alphabet = st.sampled_from([*SYNTAX, "a", "é", "ß", "OR", "NOT", "AND", "NEAR", "refund", "today", "42", "😀"])

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(alphabet, max_size=12).map("".join))
    def typed(q: str) -> None:
        try:
            query = parse(q)
        except ValidationFailed:
            return
        with catalog.session() as session:
            scope = Scope("acme")
            configs = rows.configs(session, scope)
            rows.keyword(session, scope, SearchFilters(role="customer"), query, configs, 0, 10)
            rows.keyword(session, scope, SearchFilters(), query, configs, 5, 10)
            rows.matching_ids(session, scope, SearchFilters(), query.groups[0], configs)

    typed()
    assert found(catalog, "refund' OR '1'='1") == ["I want a refund today"]  # refund, or the phrase "1 1"
    assert found(catalog, "refund' AND '1'='1") == []  # refund, and, and the phrase "1 1": not in one segment
    assert found(catalog, "wordS -'NOW'") == ["Ünïcode wörds and 42 numbers"]


def test_a_deleted_recording_leaves_the_engines_index_in_the_same_transaction(catalog) -> None:
    rid = add_recording(catalog, status="completed")
    kept = add_recording(catalog, status="completed")
    index(catalog, rid, ["refund the kettle"])
    index(catalog, kept, ["refund the toaster"])
    with catalog.session() as session:
        session.execute(delete(Recording).where(Recording.id == rid))  # as recordings.delete_rows does
        assert session.scalar(select(func.count()).select_from(SearchSegment)) == 1
    assert found(catalog, "refund") == ["refund the toaster"]
    with catalog.session() as session:
        if catalog.dialect == "sqlite":
            indexed = "SELECT count(*) FROM search_fts WHERE search_fts MATCH 'english_kettl'"
        else:
            indexed = "SELECT count(*) FROM search_segments WHERE tsv @@ to_tsquery('english', 'kettle')"
        assert session.execute(text(indexed)).scalar() == 0
        if catalog.dialect == "sqlite":  # FTS5's own check of its index against its content
            session.execute(text("INSERT INTO search_fts(search_fts, rank) VALUES ('integrity-check', 1)"))


def test_another_accounts_entries_are_never_matched(catalog) -> None:
    mine = add_recording(catalog, status="completed", account="acme")
    theirs = add_recording(catalog, status="completed", account="other", language="es")
    index(catalog, mine, ["refund the kettle"])
    index(catalog, theirs, ["refund the kettle", "reembolso del pedido"], config="spanish")
    assert found(catalog, "refund") == ["refund the kettle"]
    assert found(catalog, "reembolso") == []
    with catalog.session() as session:
        assert rows.configs(session, Scope("acme")) == ["english"]
        assert [rid for rid, _ in rows.calls(session, Scope("acme"), SearchFilters())] == []  # no analysis row yet


def test_every_language_has_its_own_index_on_postgresql(catalog) -> None:
    if catalog.dialect != "postgresql":
        pytest.skip("PostgreSQL's indexes (SQLite's words carry their language in one FTS5 index)")
    with catalog.session() as session:
        names = set(session.scalars(text("SELECT indexname FROM pg_indexes WHERE tablename = 'search_segments'")))
    assert {f"ix_search_segments_tsv_{config}" for config in CONFIGURATIONS} <= names


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, np.float32)
    return vector / np.linalg.norm(vector)


def call(rid: int, *segments: tuple[int, str, str | None, np.ndarray]) -> CallVectors:
    return CallVectors(rid, [s[0] for s in segments], [s[1] for s in segments], [s[2] for s in segments],
                       encode(np.array([s[3] for s in segments])))


def test_codes_keep_a_cosine_within_a_rounding() -> None:
    vectors = np.random.default_rng(1).normal(size=(200, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    decoded = decode(encode(vectors), 384)
    assert np.abs(decoded - vectors).max() <= 1 / 255 + 1e-6
    assert np.abs(decoded @ vectors[0] - vectors @ vectors[0]).max() < 0.01


def test_the_vectors_held_follow_reanalyses_and_filters() -> None:
    held = AccountVectors()
    stored = {1: call(1, (10, "agent", "calm", unit(1, 0)), (11, "customer", "angry", unit(0, 1))),
              2: call(2, (20, "customer", "calm", unit(1, 1)))}

    def load(rids):
        return [stored[rid] for rid in rids]

    held.sync([(1, 1), (2, 1)], load)
    query = np.array([1, 0], np.float32)
    result = held.search(query, [1, 2], None, None, 0.5, set())
    assert list(result.ids) == [10, 20] and np.allclose(result.scores, [1, 2 ** -0.5], atol=0.01)
    assert list(held.search(query, [2], None, None, 0.5, set()).ids) == [20]  # only the calls allowed
    assert list(held.search(query, [1, 2], "customer", None, 0.5, set()).ids) == [20]
    assert list(held.search(query, [1, 2], None, "angry", -1, set()).ids) == [11]
    assert list(held.search(query, [1, 2], None, None, 0.5, {10}).ids) == [20]
    assert list(held.search(query, [1, 2], None, "bored", -1, set()).ids) == []
    assert list(held.search(query, [1, 2], None, None, 0.99, set()).ids) == [10]

    stored[1] = call(1, (12, "agent", "calm", unit(0, 1)))  # re-analysed: version 2
    held.sync([(1, 2), (2, 1)], load)
    assert list(held.search(query, [1, 2], None, None, -1, set()).ids) == [20, 12]
    stored[1] = call(1, (13, "agent", "calm", unit(1, 0)))
    held.sync([(1, 3), (2, 1)], load)  # more rows dead than alive: compacted
    assert held.size == 2 and held.dead == 0 and held.index.ntotal == 2
    assert list(held.search(query, [1, 2], None, None, -1, set()).ids) == [13, 20]
    assert list(held.search(query, [1, 2], "customer", None, -1, set()).ids) == [20]  # roles moved with their rows
    held.sync([(1, 3), (2, 1)], lambda rids: [] if not rids else 1 / 0)  # nothing new: nothing read
    asked: list[list[int]] = []
    held.sync([(3, 1)], lambda rids: asked.append(rids) or [])
    held.sync([(3, 1)], lambda rids: asked.append(rids) or [call(3, (30, "agent", None, unit(1, 0)))])
    assert asked == [[3], [3]]  # a call held without vectors is read again (reindex may have written them)
    assert list(held.search(query, [3], None, None, 0.5, set()).ids) == [30]
    held.sync([(4, 1)], lambda rids: [call(4, (40, "agent", None, unit(1, 0, 0)))])  # another model's: left out
    assert list(held.search(query, [1, 2, 3, 4], None, None, 0.5, set()).ids) == [13, 30, 20]


def test_meaning_finds_the_nearest_only_best_first_and_the_oldest_of_equals(monkeypatch) -> None:
    monkeypatch.setattr(vectors_module, "NEAREST", 3)
    held = AccountVectors()
    held.sync([(1, 1), (2, 1)], lambda rids: [
        call(1, (10, "agent", None, unit(1, 1)), (11, "agent", None, unit(1, 0)), (12, "customer", None, unit(1, 0))),
        call(2, (20, "agent", None, unit(1, 0)), (21, "customer", None, unit(1, 0.2)),
             (22, "agent", None, unit(0, 1)))])
    query = np.array([1, 0], np.float32)
    assert list(held.search(query, [1, 2], None, None, 0.3, set()).ids) == [11, 12, 20]
    assert list(held.search(query, [1, 2], "customer", None, 0.3, set()).ids) == [12, 21]  # the filter inside
    assert list(held.search(query, [2], None, None, 0.3, {20}).ids) == [21]


def test_vectors_are_stored_per_call_in_the_order_of_the_segments_and_go_with_the_recording(catalog) -> None:
    rid = add_recording(catalog, status="completed")
    sent = [unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)]
    index(catalog, rid, ["one", "two", "three"], vectors=[v.tobytes() for v in sent])
    with catalog.session() as session:
        [held] = rows.vectors(session, [rid])
        texts = dict(session.execute(select(SearchSegment.id, SearchSegment.text)).all())
        assert [texts[sid] for sid in held.segment_ids] == ["one", "two", "three"]
        assert held.roles == ["customer"] * 3 and held.emotions == ["calm"] * 3
        assert np.allclose(decode(held.codes, 3), sent, atol=0.01)
        assert {texts[sid] for sid in rows.similar(session, [rid], unit(0, 1, 0), 0.9)} == {"two"}
    index(catalog, rid, ["four"])  # re-indexed without the text embedder: no vectors left
    with catalog.session() as session:
        assert rows.vectors(session, [rid]) == []
    index(catalog, rid, ["five"], vectors=[unit(1, 0, 0).tobytes()])
    with catalog.session() as session:
        session.execute(delete(Recording).where(Recording.id == rid))
        assert session.scalar(select(func.count()).select_from(SearchVectors)) == 0


@pytest.mark.parametrize("largest_window", [64, 1])  # PostgreSQL: windows of calls, or one then the word's index
def test_keyword_ranks_the_newest_matches_only(catalog, monkeypatch, largest_window: int) -> None:
    monkeypatch.setattr(rows, "KEYWORD_CANDIDATES", 3)
    monkeypatch.setattr(search_postgres, "FIRST_CALLS", 1)
    monkeypatch.setattr(search_postgres, "LARGEST_WINDOW", largest_window)
    old = add_recording(catalog, status="completed")
    index(catalog, old, ["refund refund refund", *["nothing here"] * 20])  # the best match, but the oldest
    new = add_recording(catalog, status="completed")
    index(catalog, new, ["a refund", "nothing", "refund it", "refund now please", "refund", "something else"])
    with catalog.session() as session:
        scope = Scope("acme")
        ranked, total = rows.keyword(session, scope, SearchFilters(), parse("refund"), ["english"], 0, 10)
        texts = rows.hits(session, [r.segment_id for r in ranked])
        assert total == 3 and {texts[r.segment_id].text for r in ranked} == {"refund it", "refund now please", "refund"}
        assert [r.score for r in ranked] == sorted((r.score for r in ranked), reverse=True)
        ranked, total = rows.keyword(session, scope, SearchFilters(), parse("refund"), ["english"], 2, 10)
        assert total == 3 and len(ranked) == 1
        ranked, total = rows.keyword(session, scope, SearchFilters(), parse("refund refund"), ["english"], 0, 10)
        assert total == 3
        ranked, total = rows.keyword(session, Scope("acme"), SearchFilters(), parse("three"), ["english"], 0, 10)
        assert (ranked, total) == ([], 0)
    monkeypatch.setattr(rows, "KEYWORD_CANDIDATES", 100)  # a rare word: every window down to the first call
    assert sorted(found(catalog, "refund")) == sorted(["refund refund refund", "a refund", "refund it",
                                                       "refund now please", "refund"])
