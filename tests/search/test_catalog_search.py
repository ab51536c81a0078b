"""Search's catalog queries on SQLite and PostgreSQL (the `catalog` fixture): whatever a person types, each engine
gets only its rendered query (fuzzed here, never an error); a recording's deletion takes its entries out of the
engine's own index in the same transaction; another account's entries are never matched; and the vectors held in
memory follow re-analyses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, func, select, text

from callscope.catalog import search as rows
from callscope.catalog.recordings import Scope
from callscope.catalog.search import SearchFilters
from callscope.catalog.tables import Recording, SearchSegment
from callscope.errors import ValidationFailed
from callscope.search.entries import CallEntries, Entry
from callscope.search.syntax import parse
from callscope.search.vectors import AccountVectors
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


def unit(*values: float) -> bytes:
    vector = np.array(values, np.float32)
    return (vector / np.linalg.norm(vector)).tobytes()


def test_the_vectors_held_follow_reanalyses_and_filters() -> None:
    held = AccountVectors()
    stored = {1: [(10, 1, "agent", "calm", unit(1, 0)), (11, 1, "customer", "angry", unit(0, 1))],
              2: [(20, 2, "customer", "calm", unit(1, 1))]}

    def load(rids):
        return [row for rid in rids for row in stored[rid]]

    held.sync([(1, 1), (2, 1)], load)
    query = np.array([1, 0], np.float32)
    result = held.search(query, [1, 2], None, None, 0.5, set())
    assert list(result.ids) == [10, 20] and np.allclose(result.scores, [1, 2 ** -0.5])
    assert list(held.search(query, [2], None, None, 0.5, set()).ids) == [20]  # only the calls allowed
    assert list(held.search(query, [1, 2], "customer", None, 0.5, set()).ids) == [20]
    assert list(held.search(query, [1, 2], None, "angry", -1, set()).ids) == [11]
    assert list(held.search(query, [1, 2], None, None, 0.5, {10}).ids) == [20]
    assert list(held.search(query, [1, 2], None, "bored", -1, set()).ids) == []

    stored[1] = [(12, 1, "agent", "calm", unit(0, 1))]  # re-analysed: version 2
    held.sync([(1, 2), (2, 1)], load)
    assert list(held.search(query, [1, 2], None, None, -1, set()).ids) == [20, 12]
    stored[1] = [(13, 1, "agent", "calm", unit(1, 0))]
    held.sync([(1, 3), (2, 1)], load)  # more rows dead than alive: compacted
    assert held.size == 2 and held.dead == 0
    assert list(held.search(query, [1, 2], None, None, -1, set()).ids) == [13, 20]
    held.sync([(1, 3), (2, 1)], lambda rids: [] if not rids else 1 / 0)  # nothing new: nothing read
    asked: list[list[int]] = []
    held.sync([(3, 1)], lambda rids: asked.append(rids) or [])
    held.sync([(3, 1)], lambda rids: asked.append(rids) or [(30, 3, "agent", None, unit(1, 0))])
    assert asked == [[3], [3]]  # a call held without vectors is read again (reindex may have written them)
    assert list(held.search(query, [3], None, None, 0.5, set()).ids) == [30]
