"""The account's trends (callscope/services/trends.py), read from the sums of the analysed calls' figures per UTC
day (tables ``trend_days``, ``trend_goal_days``, ``trend_tracker_days``; callscope/catalog/trend_sums.py keeps them):
a few rows per day however many calls there were, and exactly the calls the list shows for the same filters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from callscope.catalog.recordings import Filters, Scope, in_scope
from callscope.catalog.tables import TrendDay, TrendGoalDay, TrendTrackerDay
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
