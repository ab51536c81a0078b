"""Search's queries (tables ``search_segments``, ``search_vectors``, ``recording_categories``, and each engine's
full-text index beside them): a call's entries written with its analysis, the words matched and ranked by the engine,
the calls and segment vectors meaning search compares, and the rows of the hits shown. One interface for both
engines; each engine's own syntax, ranking and way to the newest matches are in search_sqlite.py and
search_postgres.py.

Every query narrows by the caller's Scope (recordings.in_scope) and by the filters inside the query itself, before
any ranking or limit, so that a filter never shortens a page of hits that exist.

Keyword search ranks the newest KEYWORD_CANDIDATES matches, not every match: ranking reads each match it ranks, and a
common word is in tens of thousands of segments per 1,000 calls (0.3 to 1 s at 10,000 calls to rank them all, 13 s
at 100,000, benchmarks/RESULTS.md); the newest thousand cost the same at any size. The newest: on PostgreSQL those of
the calls added last, on SQLite those indexed last (the same calls where calls are analysed as they come; a call
analysed again comes first)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

import numpy as np
from sqlalchemy import delete, exists, insert, select
from sqlalchemy.orm import Session

from callscope.catalog import search_postgres, search_sqlite
from callscope.catalog.recordings import Scope, in_scope
from callscope.catalog.search_narrowing import Narrowing, SearchFilters
from callscope.catalog.tables import Analysis, Recording, RecordingCategory, SearchSegment, SearchVectors
from callscope.search.entries import CallEntries
from callscope.search.syntax import Match, Query
from callscope.search.vectors import CallVectors, decode, encode
from callscope.search.words import configuration

KEYWORD_CANDIDATES = 1000  # the newest matches keyword search ranks (and counts): its pages end there


@dataclass(frozen=True)
class Ranked:
    segment_id: int
    score: float


@dataclass(frozen=True)
class HitRow:
    """A segment found, with its recording's public id and name."""

    segment_id: int
    public_id: str
    name: str
    start_ms: int
    end_ms: int
    speaker: str
    role: str
    operator_id: int | None
    emotion: str | None
    config: str
    text: str


def engine(session: Session):
    """The catalog's full-text engine module: FTS5 on SQLite, tsvector on PostgreSQL."""
    return search_sqlite if session.get_bind().dialect.name == "sqlite" else search_postgres


# ----- the index ----------------------------------------------------------------------------------

def index(session: Session, recording_id: int, call: CallEntries, vectors: Sequence[bytes] | None) -> None:
    """Replace the recording's entries with `call`'s (`vectors`: one per segment, float32 bytes; None without the
    text embedder), in the caller's transaction: the analysis and its entries are stored together."""
    for table in (SearchSegment, SearchVectors, RecordingCategory):
        session.execute(delete(table).where(table.recording_id == recording_id))
    terms = engine(session).terms
    if call.segments:
        ids = session.scalars(insert(SearchSegment).returning(SearchSegment.id, sort_by_parameter_order=True), [
            {"recording_id": recording_id, "position": e.position, "start_ms": e.start_ms, "end_ms": e.end_ms,
             "speaker": e.speaker, "role": e.role, "operator_id": e.operator_id, "emotion": e.emotion,
             "config": call.config, "text": e.text, "terms": terms(call.config, e.text)}
            for e in call.segments]).all()
        if vectors is not None:  # the codes' rows in the order of the segments' ids, as meaning search reads them
            matrix = np.frombuffer(b"".join(vectors), np.float32).reshape(len(vectors), -1)
            session.execute(insert(SearchVectors).values(recording_id=recording_id,
                                                         codes=encode(matrix[np.argsort(ids)])))
    if call.categories:
        session.execute(insert(RecordingCategory),
                        [{"recording_id": recording_id, "name": name} for name in call.categories])


def index_version(session: Session, recording_id: int, version: int, call: CallEntries,
                  vectors: Sequence[bytes] | None) -> bool:
    """:func:`index` while the recording's analysis is still `version` (a newer one indexed itself); whether it did."""
    current = session.scalar(select(Analysis.version).where(Analysis.recording_id == recording_id).with_for_update())
    if current != version:
        return False
    index(session, recording_id, call, vectors)
    return True


def unindexed(session: Session, after_id: int, limit: int) -> list[int]:
    """Ids of analysed recordings (of every account) above `after_id` that have no entries, in order: those analysed
    before search existed (and those whose transcript said nothing)."""
    return list(session.scalars(
        select(Analysis.recording_id).where(Analysis.recording_id > after_id,
                                            ~exists().where(SearchSegment.recording_id == Analysis.recording_id))
        .order_by(Analysis.recording_id).limit(limit)))


# ----- words --------------------------------------------------------------------------------------

def configs(session: Session, scope: Scope) -> list[str]:
    """The stemmers of the languages of the scope's recordings: those a query is rendered in."""
    languages = session.scalars(in_scope(select(Recording.language).distinct(), scope))
    return sorted({configuration(language) for language in languages})


def keyword(session: Session, scope: Scope, f: SearchFilters, query: Query, in_configs: list[str], offset: int,
            limit: int) -> tuple[list[Ranked], int]:
    """A page of the newest KEYWORD_CANDIDATES segments matching `query`, best first (ties: in the order they were
    indexed), and how many of them there are."""
    if not in_configs:
        return [], 0
    found = engine(session).newest(session, query, in_configs, Narrowing(scope, f), KEYWORD_CANDIDATES)
    ranked = sorted((Ranked(segment_id, score) for segment_id, score in found), key=lambda r: (-r.score, r.segment_id))
    return ranked[offset : offset + limit], len(ranked)


def matching_ids(session: Session, scope: Scope, f: SearchFilters, matches: tuple[Match, ...],
                 in_configs: list[str]) -> set[int]:
    """The segments holding any of `matches` (the words a meaning search leaves out)."""
    if not matches or not in_configs:
        return set()
    ranked = engine(session).ranked(Query((matches,), ()), in_configs, Narrowing(scope, f)).subquery()
    return set(session.scalars(select(ranked.c.id)))


# ----- meaning --------------------------------------------------------------------------------------

def calls(session: Session, scope: Scope, f: SearchFilters) -> list[tuple[int, int]]:
    """(recording id, analysis version) of the analysed calls the scope and the call's filters allow."""
    statement = select(Recording.id, Analysis.version).join(Analysis, Analysis.recording_id == Recording.id)
    return [(int(rid), int(version)) for rid, version in session.execute(Narrowing(scope, f).calls(statement))]


def vectors(session: Session, recording_ids: list[int]) -> list[CallVectors]:
    """The segment vectors of those of the recordings (found in a scope by :func:`calls`) that have them."""
    codes = dict(session.execute(select(SearchVectors.recording_id, SearchVectors.codes)
                                 .where(SearchVectors.recording_id.in_(recording_ids))).all())
    s = SearchSegment
    segments = session.execute(select(s.recording_id, s.id, s.role, s.emotion)
                               .where(s.recording_id.in_(list(codes))).order_by(s.recording_id, s.id))
    calls = []
    for rid, group in groupby(segments, key=lambda row: row[0]):
        rows = list(group)
        if codes[rid] and len(codes[rid]) % len(rows) == 0:  # written with its segments: one row of codes each
            calls.append(CallVectors(rid, [row[1] for row in rows], [row[2] for row in rows],
                                     [row[3] for row in rows], codes[rid]))
    return calls


def similar(session: Session, recording_ids: list[int], vector: np.ndarray, min_similarity: float) -> set[int]:
    """Ids of the recordings' segments at least `min_similarity` to `vector`: the cosine meaning search compares,
    for a few calls (a tracker's)."""
    close: set[int] = set()
    for call in vectors(session, recording_ids):
        if call.dim == len(vector):  # another model's vectors: not comparable
            found = decode(call.codes, call.dim) @ vector.astype(np.float32) >= min_similarity
            close.update(np.asarray(call.segment_ids)[found].tolist())
    return close


# ----- hits -----------------------------------------------------------------------------------------

def hits(session: Session, segment_ids: list[int]) -> dict[int, HitRow]:
    """The rows of segments found in a scope (by :func:`keyword` or by meaning), by id."""
    s, r = SearchSegment, Recording
    rows = session.execute(select(s.id, r.public_id, r.name, s.start_ms, s.end_ms, s.speaker, s.role, s.operator_id,
                                  s.emotion, s.config, s.text)
                           .join(r, r.id == s.recording_id).where(s.id.in_(segment_ids)))
    return {row[0]: HitRow(*row) for row in rows}
