"""The account's trends (callscope/services/trends.py), read from the sums of the analysed calls' figures per UTC
day (tables ``trend_days``, ``trend_goal_days``, ``trend_tracker_days``, ``trend_score_days``;
callscope/catalog/trend_sums.py keeps them):
a few rows per day however many calls there were, and exactly the calls the list shows for the same filters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from callscope.catalog.recordings import Filters, Scope, in_scope
from callscope.catalog.scorecards import QUESTION, SECTION
from callscope.catalog.tables import TrendDay, TrendGoalDay, TrendScoreDay, TrendTrackerDay
from callscope.catalog.trend_sums import EVERY, NO_OPERATOR, TOTAL


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


# ----- scorecards: read from their sums per day (trend_score_days), which count exactly the calls the list shows for
# the same filters: a few rows per day, form and part however many calls were scored

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
class ScoreDay:
    """Of one form, the calls added on one day (UTC) with a score on it, and the sum of their scores (what a bucket of
    the form's chart adds up)."""

    scorecard_id: int
    day: date
    calls: int
    score_sum: float


def _average(score_sum: float, scored: int) -> float | None:
    return float(score_sum) / int(scored) if scored else None  # PostgreSQL sums bigints as numeric


def _score_sums(scope: Scope, f: Filters, *columns, kinds: tuple[str, ...], every_operator: bool = True):
    """The sums of the scores of `kinds` of the calls the filters find in the scope, by `columns`; `every_operator`
    False: per operator (the filter's, or each, those of no operator as NO_OPERATOR), not over every one."""
    project, operator, first, last = _keys(f)
    t = TrendScoreDay
    query = in_scope(select(*columns, func.sum(t.scored), func.sum(t.score_sum), func.sum(t.reviewed),
                            func.sum(t.changed)), scope, t.account, t.project_id).where(
        t.project_id == project, t.day.between(first, last), t.kind.in_(kinds), t.calls > 0)
    if every_operator or operator != EVERY:
        query = query.where(t.operator_id == operator)
    else:
        query = query.where(t.operator_id != EVERY)
    return query.group_by(*columns)


def score_days(session: Session, scope: Scope, f: Filters) -> list[ScoreDay]:
    """Per form and day, the calls the filters find in the scope that have a score on it, and their scores' sum."""
    t = TrendScoreDay
    query = _score_sums(scope, f, t.scorecard_id, t.day, kinds=(TOTAL,))
    return [ScoreDay(form, day, int(scored), float(score_sum or 0.0))
            for form, day, scored, score_sum, _, _ in session.execute(query) if scored]


def agent_scores(session: Session, scope: Scope, f: Filters) -> list[AgentScore]:
    """Per form and operator, the average score of the calls the filters find in the scope."""
    t = TrendScoreDay
    query = _score_sums(scope, f, t.scorecard_id, t.operator_id, kinds=(TOTAL,), every_operator=False)
    return [AgentScore(form, None if operator == NO_OPERATOR else operator, int(scored), _average(score_sum, scored))
            for form, operator, scored, score_sum, _, _ in session.execute(query)]


def part_scores(session: Session, scope: Scope, f: Filters) -> list[PartScores]:
    """Per form, section and question, the average score of the calls the filters find in the scope, and how many of
    its answers reviewers saw and changed."""
    t = TrendScoreDay
    query = _score_sums(scope, f, t.scorecard_id, t.kind, t.name, kinds=(SECTION, QUESTION))
    return [PartScores(form, kind, name, int(scored), _average(score_sum, scored), int(seen), int(changed))
            for form, kind, name, scored, score_sum, seen, changed in session.execute(query)]
