"""Recordings' scorecards in the catalog: each recording's score on each form (``recording_scorecards``, with who
reviewed it) and reviewers' changes to its answers (``scorecard_answer_changes``). Called only with a recording
already found in the caller's scope (or being stored by its analysis). The automatic answers are in the analysis
document; callscope/services/scorecards.py puts the two together."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from callscope.catalog.tables import Recording, RecordingScorecard, ScorecardAnswerChange


@dataclass(frozen=True)
class Score:
    """A recording's score on one form, as its answers stand."""

    scorecard_id: int
    score: float | None
    auto_failed: bool


def of_recording(session: Session, recording_id: int) -> dict[int, RecordingScorecard]:
    """The recording's scorecard rows by form id."""
    rows = session.scalars(select(RecordingScorecard).where(RecordingScorecard.recording_id == recording_id))
    return {row.scorecard_id: row for row in rows}


def changes(session: Session, recording_id: int) -> list[ScorecardAnswerChange]:
    """Every change reviewers made to the recording's answers, oldest first."""
    return list(session.scalars(select(ScorecardAnswerChange).where(ScorecardAnswerChange.recording_id == recording_id)
                                .order_by(ScorecardAnswerChange.id)))


def record_scores(session: Session, recording_id: int, scores: Iterable[Score]) -> None:
    """The recording's scores after an analysis: one row per form it was scored on (a review mark stays); the rows
    of forms it no longer is scored on go (their answers' history stays)."""
    current = of_recording(session, recording_id)
    wanted = {s.scorecard_id: s for s in scores}
    gone = [form for form in current if form not in wanted]
    if gone:
        session.execute(delete(RecordingScorecard).where(RecordingScorecard.recording_id == recording_id,
                                                         RecordingScorecard.scorecard_id.in_(gone)))
    for form, score in wanted.items():
        row = current.get(form)
        if row is None:
            session.add(RecordingScorecard(recording_id=recording_id, scorecard_id=form, score=score.score,
                                           auto_failed=score.auto_failed))
        else:
            row.score, row.auto_failed = score.score, score.auto_failed
    session.flush()


def review(session: Session, recording_id: int, score: Score, added: list[ScorecardAnswerChange],
           reviewed_by: str | None, now: datetime) -> None:
    """A review of the recording's scorecard in one transaction: the answers' changes, the score they make, and the
    reviewed mark where the reviewer set it."""
    session.add_all(added)
    row = session.get(RecordingScorecard, (recording_id, score.scorecard_id))
    if row is None:
        row = RecordingScorecard(recording_id=recording_id, scorecard_id=score.scorecard_id)
        session.add(row)
    row.score, row.auto_failed = score.score, score.auto_failed
    if reviewed_by is not None:
        row.reviewed_by, row.reviewed_at = reviewed_by, now
    session.flush()


@dataclass(frozen=True)
class Scored:
    """A call scored on a form, as the review queue reads it."""

    recording_id: int
    public_id: str
    project_id: int
    operator_id: int | None
    called_at: datetime  # when the call was made (its upload, where the call's time is unknown)
    score: float | None
    auto_failed: bool
    reviewed_by: str | None
    reviewed_at: datetime | None


def scored_between(session: Session, account: str, project_ids: list[int], scorecard_id: int, start: datetime,
                   end: datetime) -> list[Scored]:
    """The account's calls of those projects scored on the form, made from `start` (included) to `end`."""
    when = func.coalesce(Recording.called_at, Recording.created_at)
    found = session.execute(
        select(Recording.id, Recording.public_id, Recording.project_id, Recording.operator_id, when,
               RecordingScorecard.score, RecordingScorecard.auto_failed, RecordingScorecard.reviewed_by,
               RecordingScorecard.reviewed_at)
        .join(RecordingScorecard, RecordingScorecard.recording_id == Recording.id)
        .where(RecordingScorecard.scorecard_id == scorecard_id, Recording.account == account,
               Recording.project_id.in_(project_ids), when >= start, when < end)
        .order_by(when, Recording.id))
    return [Scored(*row) for row in found]
