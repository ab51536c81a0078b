"""The account's trends (callscope/services/trends.py): the figures of completed calls added up per day, read from
the recordings' trend columns and their goals met (tables ``recordings``, ``recording_goals``), and the writes that
keep those in step with each stored analysis.

A trend reads exactly the recordings the list (callscope/catalog/recordings.py) shows for the same filters: it
starts from the list's own query, so a chart's point and the list it links to count the same calls. The indexes
``ix_recordings_trends_*`` hold every column read here: both databases answer from an index alone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date
from typing import Any

from sqlalchemy import Date, Select, case, cast, delete, func, literal_column
from sqlalchemy.orm import Session

from callscope.catalog.recordings import Filters, Scope, filtered
from callscope.catalog.tables import Recording, RecordingGoal
from callscope.figures import CallFigures


@dataclass(frozen=True)
class Day:
    """The completed calls added on one day (UTC) that share a prevailing emotion."""

    day: date
    emotion: str | None
    calls: int
    pause_compliance_sum: float  # over the calls that have the figure
    pause_compliance_calls: int
    agent_talk_ms: int
    customer_talk_ms: int


@dataclass(frozen=True)
class GoalDay:
    """Of one project's goal, the calls added on one day (UTC) that evaluated it and how many met it."""

    day: date
    project_id: int
    goal_id: int
    calls: int
    met: int


def _day(session: Session):
    """The UTC day of a recording's created_at, grouped on as the index holds it."""
    if session.get_bind().dialect.name == "sqlite":
        return func.substr(Recording.created_at, 1, 10)  # stored as UTC text, 'YYYY-MM-DD HH:MM:SS...'
    # a literal, not a parameter: PostgreSQL takes two parameters for two expressions, and the GROUP BY's would not
    # be the SELECT's
    return cast(func.timezone(literal_column("'UTC'"), Recording.created_at), Date)


def _as_date(value: Any) -> date:
    return value if isinstance(value, date) else date.fromisoformat(value)


def days_query(session: Session, scope: Scope, f: Filters) -> Select:
    """The statement of :func:`days` (benchmarks/trends.py shows its plan)."""
    day = _day(session)
    return filtered(scope, f).with_only_columns(
        day, Recording.emotion, func.count(), func.coalesce(func.sum(Recording.pause_compliance), 0.0),
        func.count(Recording.pause_compliance), func.coalesce(func.sum(Recording.agent_talk_ms), 0),
        func.coalesce(func.sum(Recording.customer_talk_ms), 0), maintain_column_froms=True,
    ).group_by(day, Recording.emotion)


def days(session: Session, scope: Scope, f: Filters) -> list[Day]:
    """The filtered recordings' figures per day and prevailing emotion."""
    return [Day(_as_date(row[0]), row[1], row[2], float(row[3]), row[4], int(row[5]), int(row[6]))
            for row in session.execute(days_query(session, scope, f))]


def goal_days(session: Session, scope: Scope, f: Filters) -> list[GoalDay]:
    """Of the filtered recordings, per day and goal of a project: the calls that evaluated it and those that met
    it."""
    day = _day(session)
    query = filtered(scope, f).with_only_columns(
        day, Recording.project_id, RecordingGoal.goal_id, func.count(),
        func.sum(case((RecordingGoal.met, 1), else_=0)),
    ).join(RecordingGoal, RecordingGoal.recording_id == Recording.id).group_by(
        day, Recording.project_id, RecordingGoal.goal_id)
    return [GoalDay(_as_date(row[0]), row[1], row[2], row[3], int(row[4] or 0)) for row in session.execute(query)]


def figure_columns(found: CallFigures) -> dict[str, Any]:
    """The recording's trend columns for an analysis' figures (its goals go to :func:`record_goals`)."""
    values = asdict(found)
    values.pop("goals")
    return values


def record_goals(session: Session, recording_id: int, goals: dict[int, bool]) -> None:
    """Replace the recording's goals met with those of its new analysis, in the caller's transaction."""
    session.execute(delete(RecordingGoal).where(RecordingGoal.recording_id == recording_id))
    session.add_all(RecordingGoal(recording_id=recording_id, goal_id=goal, met=met) for goal, met in goals.items())
