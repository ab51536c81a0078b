"""The account's trends (callscope/services/trends.py), read from the sums of the analysed calls' figures per UTC
day (tables ``trend_days``, ``trend_goal_days``, ``trend_tracker_days``; callscope/catalog/trend_sums.py keeps them):
a few rows per day however many calls there were, and exactly the calls the list shows for the same filters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.orm import Session

from callscope.catalog.recordings import Filters, Scope, filtered, in_scope
from callscope.catalog.tables import (
    Recording,
    RecordingScorecard,
    RecordingScorecardPart,
    TrendDay,
    TrendGoalDay,
    TrendTrackerDay,
)
from callscope.catalog.trend_sums import EVERY


@dataclass(frozen=True)
class Day:
    """The analysed calls added on one day (UTC) that share a prevailing emotion (None: not known)."""

    day: date
    emotion: str | None
    calls: int
    pause_compliance_sum: float
    agent_talk_ms: int
    customer_talk_ms: int


@dataclass(frozen=True)
class GoalDay:
    """Of one project's goal, the analysed calls added on one day (UTC) that evaluated it and how many met it."""

    day: date
    project_id: int
    goal_id: int
    calls: int
    met: int


@dataclass(frozen=True)
class TrackerDay:
    """Of one project's tracker, the analysed calls added on one day (UTC) that matched it."""

    day: date
    project_id: int
    tracker: str
    calls: int


@dataclass(frozen=True)
class ProjectDay:
    """A project's analysed calls added on one day (UTC): what a tracker's share is of."""

    day: date
    project_id: int
    calls: int


def _keys(f: Filters) -> tuple[int, int, date, date]:
    """The sums' project and operator for the filters, and the days of their created range (whole UTC days, as the
    service sets it)."""
    return (f.project_id or EVERY, f.operator_id or EVERY, f.created_from.date() if f.created_from else date.min,
            f.created_to.date() if f.created_to else date.max)


def days(session: Session, scope: Scope, f: Filters) -> list[Day]:
    """The figures per day and prevailing emotion of the recordings the filters (project, operator, created range)
    find in the scope."""
    project, operator, first, last = _keys(f)
    t = TrendDay
    query = in_scope(select(t.day, t.emotion, t.calls, t.pause_compliance_sum, t.agent_talk_ms, t.customer_talk_ms),
                     scope, t.account, t.project_id).where(
        t.project_id == project, t.operator_id == operator, t.day.between(first, last), t.calls > 0)
    # rows, not ORM objects: a year is thousands of them
    return [Day(day, emotion or None, *sums) for day, emotion, *sums in session.execute(query)]


def goal_days(session: Session, scope: Scope, f: Filters) -> list[GoalDay]:
    """Per day and goal, the calls of :func:`days` that evaluated it and those that met it."""
    project, operator, first, last = _keys(f)
    t = TrendGoalDay
    query = in_scope(select(t.day, t.project_id, t.goal_id, t.calls, t.met), scope, t.account, t.project_id).where(
        t.operator_id == operator, t.day.between(first, last), t.calls > 0)
    if project != EVERY:
        query = query.where(t.project_id == project)
    return [GoalDay(*row) for row in session.execute(query)]


def tracker_days(session: Session, scope: Scope, f: Filters) -> list[TrackerDay]:
    """Per day and tracker, the calls of :func:`days` that matched it."""
    project, operator, first, last = _keys(f)
    t = TrendTrackerDay
    query = in_scope(select(t.day, t.project_id, t.tracker, t.calls), scope, t.account, t.project_id).where(
        t.operator_id == operator, t.day.between(first, last), t.calls > 0)
    if project != EVERY:
        query = query.where(t.project_id == project)
    return [TrackerDay(*row) for row in session.execute(query)]


def project_days(session: Session, scope: Scope, f: Filters, project_ids: list[int]) -> list[ProjectDay]:
    """Per day, the calls of :func:`days` of each of `project_ids` (the projects the filters allow)."""
    _, operator, first, last = _keys(f)
    t = TrendDay
    query = in_scope(select(t.day, t.project_id, func.sum(t.calls)), scope, t.account, t.project_id).where(
        t.project_id.in_(project_ids), t.operator_id == operator, t.day.between(first, last), t.calls > 0
    ).group_by(t.day, t.project_id)
    return [ProjectDay(day, project_id, int(calls)) for day, project_id, calls in session.execute(query)]


# ----- scorecards: read from the calls' stored scores (recording_scorecards, recording_scorecard_parts), joined by
# their primary keys to exactly the calls the list shows for the same filters

@dataclass(frozen=True)
class AgentScore:
    """Of one form, the calls of one operator (None: no agent identified) scored on it, and their average score."""

    scorecard_id: int
    operator_id: int | None
    calls: int  # with a score (a call where no question applied has none)
    average: float | None


@dataclass(frozen=True)
class PartScores:
    """Of one section or question of a form: the calls that scored it and their average, and of its answers those a
    reviewer saw (the call marked reviewed, or the answer changed) and those a reviewer changed."""

    scorecard_id: int
    kind: str  # "section" or "question" (callscope/catalog/scorecards.py)
    name: str
    calls: int
    average: float | None
    reviewed: int
    changed: int


@dataclass(frozen=True)
class CallScore:
    """One call's score on a form, and when it was added (what a bucket of the form's chart adds up)."""

    scorecard_id: int
    created_at: datetime
    score: float


def call_scores(session: Session, scope: Scope, f: Filters) -> list[CallScore]:
    """The scores of the calls the filters find in the scope, on each form (a call where no question applied has
    none and is left out); rows, not objects: one per call and form."""
    rs = RecordingScorecard
    query = (filtered(scope, f)
             .with_only_columns(rs.scorecard_id, Recording.created_at, rs.score, maintain_column_froms=True)
             .join(rs, rs.recording_id == Recording.id).where(rs.score.is_not(None)))
    return [CallScore(*row) for row in session.execute(query)]


def agent_scores(session: Session, scope: Scope, f: Filters) -> list[AgentScore]:
    """Per form and operator, the average score of the calls the filters find in the scope."""
    rs = RecordingScorecard
    query = (filtered(scope, f)
             .with_only_columns(rs.scorecard_id, Recording.operator_id, func.count(rs.score), func.avg(rs.score),
                                maintain_column_froms=True)
             .join(rs, rs.recording_id == Recording.id).group_by(rs.scorecard_id, Recording.operator_id))
    return [AgentScore(form, operator, int(calls), average)
            for form, operator, calls, average in session.execute(query)]


def part_scores(session: Session, scope: Scope, f: Filters) -> list[PartScores]:
    """Per form, section and question, the average score of the calls the filters find in the scope, and how many of
    its answers reviewers saw and changed."""
    rs, part = RecordingScorecard, RecordingScorecardPart
    reviewed = case((or_(rs.reviewed_at.is_not(None), part.changed), 1), else_=0)
    query = (filtered(scope, f)
             .with_only_columns(part.scorecard_id, part.kind, part.name, func.count(part.score), func.avg(part.score),
                                func.sum(reviewed), func.sum(case((part.changed, 1), else_=0)),
                                maintain_column_froms=True)
             .join(rs, rs.recording_id == Recording.id)
             .join(part, and_(part.recording_id == rs.recording_id, part.scorecard_id == rs.scorecard_id))
             .group_by(part.scorecard_id, part.kind, part.name))
    return [PartScores(form, kind, name, int(calls), average, int(seen or 0), int(changed or 0))
            for form, kind, name, calls, average, seen, changed in session.execute(query)]
