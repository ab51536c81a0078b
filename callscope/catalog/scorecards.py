"""Recordings' scorecards in the catalog: each recording's score on each form (``recording_scorecards``, with who
reviewed it and the form's version), its score on each of their sections and questions
(``recording_scorecard_parts``, for Trends, whose daily sums callscope/catalog/trend_sums.py keeps in the same
transaction), and reviewers' changes to its answers (``scorecard_answer_changes``).
Called only with a recording already found in the caller's scope (or being stored by its analysis). The automatic
answers are in the analysis document; api/scorecard_reviews.py puts the two together."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from callscope.catalog import trend_sums
from callscope.catalog.tables import (
    Analysis,
    Recording,
    RecordingScorecard,
    RecordingScorecardPart,
    ScorecardAnswerChange,
)

SECTION, QUESTION = "section", "question"


def section_name(section: str, subsection: str | None = None) -> str:
    """The name a section's (or a subsection's) scores are kept under: a subsection's "section › subsection"."""
    return section if subsection is None else f"{section} › {subsection}"


@dataclass(frozen=True)
class PartScore:
    """A recording's score on one section or question of a form (percent; None: n/a or unanswered), and whether a
    reviewer changed the automatic answer (a question's)."""

    kind: str  # SECTION or QUESTION
    name: str  # the section's name, the question's id
    score: float | None
    changed: bool = False


@dataclass(frozen=True)
class Score:
    """A recording's score on one form, as its answers stand."""

    scorecard_id: int
    score: float | None
    auto_failed: bool
    version: int | None = None  # the form's the call was scored with
    parts: tuple[PartScore, ...] = ()


# What score_of reads of a card (analysis/result.py ScorecardResult), read-only: the catalog imports no analysis.
class _Answer(Protocol):
    @property
    def question_id(self) -> str: ...
    @property
    def answer(self) -> object: ...
    @property
    def automatic(self) -> object: ...
    @property
    def points(self) -> float | None: ...
    @property
    def max_points(self) -> float: ...
    @property
    def overridden(self) -> bool: ...


class _Section(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def score(self) -> float | None: ...


class _TopSection(_Section, Protocol):
    @property
    def sections(self) -> Sequence[_Section]: ...


class Card(Protocol):
    @property
    def scorecard_id(self) -> int: ...
    @property
    def score(self) -> float | None: ...
    @property
    def auto_failed(self) -> bool: ...
    @property
    def version(self) -> int: ...
    @property
    def sections(self) -> Sequence[_TopSection]: ...
    @property
    def answers(self) -> Sequence[_Answer]: ...


def score_of(card: Card) -> Score:
    """A card's scores as the catalog keeps them: the form's, each section's and subsection's, and each question's
    (its points over its full points), and which answers a reviewer changed."""
    sections = [PartScore(SECTION, name, score) for s in card.sections
                for name, score in ((s.name, s.score), *((section_name(s.name, u.name), u.score) for u in s.sections))]
    questions = [PartScore(QUESTION, a.question_id,
                           None if a.points is None or not a.max_points else 100 * a.points / a.max_points,
                           a.overridden and a.answer != a.automatic) for a in card.answers]
    return Score(card.scorecard_id, card.score, card.auto_failed, card.version, tuple(sections + questions))


def _store_parts(session: Session, recording_id: int, forms: list[int], scores: Iterable[Score]) -> None:
    """The recording's parts' scores on `forms` replaced by those of `scores`."""
    session.execute(delete(RecordingScorecardPart).where(RecordingScorecardPart.recording_id == recording_id,
                                                         RecordingScorecardPart.scorecard_id.in_(forms)))
    session.add_all(RecordingScorecardPart(recording_id=recording_id, scorecard_id=s.scorecard_id, kind=p.kind,
                                           name=p.name, score=p.score, changed=p.changed)
                    for s in scores for p in s.parts)


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
    with trend_sums.regrouping(session, [recording_id], figures=False):
        current = of_recording(session, recording_id)
        wanted = {s.scorecard_id: s for s in scores}
        gone = [form for form in current if form not in wanted]
        if gone:
            session.execute(delete(RecordingScorecard).where(RecordingScorecard.recording_id == recording_id,
                                                             RecordingScorecard.scorecard_id.in_(gone)))
        _store_parts(session, recording_id, [*current, *wanted], wanted.values())
        for form, score in wanted.items():
            row = current.get(form)
            if row is None:
                session.add(RecordingScorecard(recording_id=recording_id, scorecard_id=form, score=score.score,
                                               auto_failed=score.auto_failed, version=score.version))
            else:
                row.score, row.auto_failed, row.version = score.score, score.auto_failed, score.version
    session.flush()


def review(session: Session, recording_id: int, score: Score, added: list[ScorecardAnswerChange],
           reviewed_by: str | None, now: datetime) -> None:
    """A review of the recording's scorecard in one transaction: the answers' changes, the score they make, and the
    reviewed mark where the reviewer set it; the call's part of the trends' sums as it was out, as it is in."""
    session.add_all(added)
    with trend_sums.regrouping(session, [recording_id], figures=False):
        row = session.get(RecordingScorecard, (recording_id, score.scorecard_id))
        if row is None:
            row = RecordingScorecard(recording_id=recording_id, scorecard_id=score.scorecard_id)
            session.add(row)
        row.score, row.auto_failed, row.version = score.score, score.auto_failed, score.version
        _store_parts(session, recording_id, [score.scorecard_id], [score])
        if reviewed_by is not None:
            row.reviewed_by, row.reviewed_at = reviewed_by, now
    session.flush()


def stale(session: Session, account: str, project_ids: list[int], scorecard_id: int, version: int,
          limit: int) -> list[int]:
    """Up to `limit` of the account's recordings of those projects, by id, scored on the form with a version older
    than `version` (or before versions were kept): those a rescoring pass scores again."""
    rs = RecordingScorecard
    return list(session.scalars(
        select(rs.recording_id).join(Recording, Recording.id == rs.recording_id)
        .where(rs.scorecard_id == scorecard_id, or_(rs.version.is_(None), rs.version < version),
               Recording.account == account, Recording.project_id.in_(project_ids))
        .order_by(rs.recording_id).limit(limit)))


def replace_cards(session: Session, recording_id: int, analysis_version: int, results: dict[str, Any]) -> bool:
    """The analysis's results document rescored (its ``scorecards`` replaced) in the caller's transaction, where
    the analysis is still the version that was rescored; False where a re-analysis replaced it meanwhile (its own
    scoring stands)."""
    return session.scalar(update(Analysis).where(Analysis.recording_id == recording_id,
                                                 Analysis.version == analysis_version)
                          .values(results=json.dumps(results, separators=(",", ":")))
                          .returning(Analysis.recording_id)) is not None


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
