"""Trackers' matches (table ``recording_trackers``): which segments of analysed calls match their project's
trackers, found as search finds them (a keyword tracker through the same engine query as `GET /search?mode=keyword`,
a meaning tracker by the same cosine over the same stored vectors: catalog/search.py `similar`), written in the
caller's transaction with the trends' sums (trend_sums.regrouping), each call stamped with the trackers it was
matched against (tracker_stamps.py says which calls are still to be matched)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import delete, insert, select, update
from sqlalchemy.orm import Session

from callscope.catalog import search as search_rows
from callscope.catalog import trend_sums
from callscope.catalog.tables import Analysis, Recording, RecordingTracker, SearchSegment, TrackerSet
from callscope.catalog.tracker_stamps import NONE, hold_project
from callscope.search.syntax import Query


@dataclass(frozen=True)
class Matcher:
    """A tracker ready to match: its name, its parsed query and, for a meaning tracker, the query's vector (None
    without the text embedding model: it then matches nothing)."""

    name: str
    query: Query
    meaning: bool
    vector: np.ndarray | None = None


@dataclass(frozen=True)
class Moment:
    """A segment of a call that matched a tracker."""

    tracker: str
    position: int
    start_ms: int
    end_ms: int


def _words(session: Session, recording_ids: list[int], query: Query) -> set[int]:
    """Ids of the recordings' segments holding `query`'s words (the engine's own query, as search runs it)."""
    configs = sorted(set(session.scalars(select(SearchSegment.config).distinct()
                                         .where(SearchSegment.recording_id.in_(recording_ids)))))
    if not configs:
        return set()
    ranked = search_rows.engine(session).ranked(query, configs,
                           lambda statement: statement.where(SearchSegment.recording_id.in_(recording_ids)))
    return set(session.scalars(select(ranked.subquery().c.id)))


def _meaning(session: Session, recording_ids: list[int], m: Matcher, min_similarity: float) -> set[int]:
    """Ids of the recordings' segments at least `min_similarity` to the tracker's vector, none holding a word it
    leaves out (as meaning search counts its hits)."""
    if m.vector is None:
        return set()
    close = search_rows.similar(session, recording_ids, m.vector, min_similarity)  # the vectors as search holds them
    if close and m.query.excluded:
        close -= _words(session, recording_ids, Query((m.query.excluded,), ()))
    return close


def moments(session: Session, recording_ids: list[int], matchers: Sequence[Matcher], min_similarity: float
            ) -> dict[int, list[Moment]]:
    """The segments of the recordings' current entries that match each tracker, by recording."""
    found: dict[int, list[Moment]] = {}
    for m in matchers:
        ids = _meaning(session, recording_ids, m, min_similarity) if m.meaning else _words(session, recording_ids,
                                                                                            m.query)
        if not ids:
            continue
        s = SearchSegment
        for rid, position, start_ms, end_ms in session.execute(
                select(s.recording_id, s.position, s.start_ms, s.end_ms).where(s.id.in_(ids))
                .order_by(s.recording_id, s.start_ms, s.position)):
            found.setdefault(rid, []).append(Moment(m.name, position, start_ms, end_ms))
    return found


def record(session: Session, recording_ids: list[int], matchers: Sequence[Matcher], digest: str | None,
           min_similarity: float) -> list[int]:
    """Match the recordings (those still analysed; locked against a concurrent analysis) against `matchers`: their
    moments replaced, the trends' sums with them, each stamped with `digest` (None: no tracker). The recordings
    matched."""
    locked = sorted(session.scalars(select(Analysis.recording_id).where(Analysis.recording_id.in_(recording_ids))
                                    .with_for_update()))
    if not locked:
        return []
    found = moments(session, locked, matchers, min_similarity)
    with trend_sums.regrouping(session, locked):
        session.execute(delete(RecordingTracker).where(RecordingTracker.recording_id.in_(locked)))
        rows = [{"recording_id": rid, "tracker": m.tracker, "position": m.position, "start_ms": m.start_ms,
                 "end_ms": m.end_ms} for rid, found_in in found.items() for m in found_in]
        if rows:
            session.execute(insert(RecordingTracker), rows)
        session.execute(update(Recording).where(Recording.id.in_(locked)).values(trackers_digest=digest))
    return locked


def record_call(session: Session, recording_id: int, account: str, project_id: int, matchers: Sequence[Matcher],
                digest: str | None, min_similarity: float) -> None:
    """:func:`record` for a call just analysed, in its analysis' transaction; if its project's trackers changed while
    it was analysed, the project is left for the tracker pass to look at again."""
    record(session, [recording_id], matchers, digest, min_similarity)
    hold_project(session, account, project_id)
    session.execute(delete(TrackerSet).where(TrackerSet.account == account, TrackerSet.project_id == project_id,
                                             TrackerSet.digest != (digest or NONE)))


def of_recording(session: Session, recording_id: int) -> list[Moment]:
    """The recording's moments that matched a tracker, by tracker and time."""
    t = RecordingTracker
    return [Moment(*row) for row in session.execute(
        select(t.tracker, t.position, t.start_ms, t.end_ms).where(t.recording_id == recording_id)
        .order_by(t.tracker, t.start_ms, t.position))]
