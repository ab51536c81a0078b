"""The account's trends: over a period, per bucket of days, the analysed calls of the account, a project or an
operator, their goals met, the share that matched each tracker of their project, pause compliance, talk-time share
and prevailing emotions (the Trends page); and the team's scorecard figures over the period (`scorecard_figures`): the
average score per agent, per section and per question of each QA form, and per question how often reviewers agreed
with its automatic answer.

The rules live here: the period (its default and its longest), the bucket its length calls for, and what the caller
may see, which is the recording list's rule (callscope.services.recordings.filters_visible and the catalog's scope):
a trend counts exactly the calls the list shows for the same filters. The catalog adds up days
(callscope/catalog/trends.py); this module folds them into the buckets.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum

from callscope.catalog import trends as trend_rows
from callscope.catalog.recordings import Filters
from callscope.catalog.scorecards import QUESTION, SECTION, section_name
from callscope.errors import ValidationFailed
from callscope.resources.kinds import Tracker
from callscope.services import recordings, scorecards
from callscope.services.context import Context, Principal

DEFAULT_DAYS = 30
MAX_DAYS = 3 * 366  # three years: 37 monthly bars at most


class Unit(StrEnum):
    DAY = "day"
    WEEK = "week"  # Monday to Sunday
    MONTH = "month"


@dataclass(frozen=True)
class Period:
    first: date
    last: date  # included

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1


# Far enough from the calendar's ends that a period's default bound and its buckets' weeks and months exist.
EARLIEST, LATEST = date.min + timedelta(days=MAX_DAYS + 31), date.max - timedelta(days=MAX_DAYS + 31)


def period(first: date | None, last: date | None, today: date) -> Period:
    """The period asked for: up to today and the DEFAULT_DAYS before it where a bound is left out."""
    if any(d is not None and not EARLIEST <= d <= LATEST for d in (first, last)):
        raise ValidationFailed(f"Dates go from {EARLIEST} to {LATEST}")
    last = last or (today if first is None else min(today, first + timedelta(days=DEFAULT_DAYS - 1)))
    first = first or last - timedelta(days=DEFAULT_DAYS - 1)
    if first > last:
        raise ValidationFailed("The period's first day is after its last")
    if (last - first).days + 1 > MAX_DAYS:
        raise ValidationFailed(f"A period is at most {MAX_DAYS} days long")
    return Period(first, last)


def unit_for(p: Period) -> Unit:
    """Days for up to a month, weeks for up to half a year, months beyond: between 1 and 37 bars."""
    return Unit.DAY if p.days <= 31 else Unit.WEEK if p.days <= 183 else Unit.MONTH


def _bucket_start(day: date, unit: Unit) -> date:
    if unit is Unit.WEEK:
        return day - timedelta(days=day.weekday())
    return day.replace(day=1) if unit is Unit.MONTH else day


def _next_start(start: date, unit: Unit) -> date:
    if unit is Unit.MONTH:
        return (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    return start + timedelta(days=7 if unit is Unit.WEEK else 1)


@dataclass(frozen=True)
class Bucket:
    first: date  # the period's first day for the first bucket, which may start inside a week or a month
    last: date  # included; the period's last day for the last bucket


def _placer(p: Period, unit: Unit) -> Callable[[date], int]:
    """Which of the period's buckets (by index) a day falls in."""
    index = {b.first: i for i, b in enumerate(buckets(p, unit))}
    return lambda day: index[max(_bucket_start(day, unit), p.first)]


def buckets(p: Period, unit: Unit) -> list[Bucket]:
    out, start = [], _bucket_start(p.first, unit)
    while start <= p.last:
        following = _next_start(start, unit)
        out.append(Bucket(max(start, p.first), min(following - timedelta(days=1), p.last)))
        start = following
    return out


@dataclass
class Point:
    """The analysed calls of one bucket."""

    bucket: Bucket
    calls: int = 0
    pause_compliance_sum: float = 0.0
    agent_talk_ms: int = 0
    customer_talk_ms: int = 0
    emotions: dict[str, int] = field(default_factory=dict)  # calls per prevailing emotion (the known ones)

    @property
    def pause_compliance(self) -> float | None:
        """The calls' mean share of compliant pauses, 0 to 1."""
        return self.pause_compliance_sum / self.calls if self.calls else None

    @property
    def agent_talk_share(self) -> float | None:
        """The agents' share of the time agents and customers talked, 0 to 1."""
        talk = self.agent_talk_ms + self.customer_talk_ms
        return self.agent_talk_ms / talk if talk else None


@dataclass
class GoalPoint:
    bucket: Bucket
    calls: int = 0  # that evaluated the goal
    met: int = 0

    @property
    def attainment(self) -> float | None:
        return self.met / self.calls if self.calls else None


@dataclass(frozen=True)
class GoalSeries:
    project: str
    goal: str
    points: list[GoalPoint]


@dataclass
class TrackerPoint:
    bucket: Bucket
    calls: int = 0  # the project's analysed calls
    matched: int = 0  # of them, those that matched the tracker

    @property
    def share(self) -> float | None:
        return self.matched / self.calls if self.calls else None


@dataclass(frozen=True)
class TrackerSeries:
    project: str
    project_id: int
    tracker: Tracker
    points: list[TrackerPoint]


@dataclass(frozen=True)
class Trends:
    period: Period
    unit: Unit
    points: list[Point]
    goals: list[GoalSeries]  # the goals of the projects shown, in their project's order
    trackers: list[TrackerSeries]  # the trackers of the projects shown, in their project's order


def trend_filters(project_id: int | None, operator_id: int | None, bucket: Bucket | Period) -> Filters:
    """The list's filters of the calls a trend adds up over `bucket`: the page links each point to these."""
    created_from, created_to = recordings.whole_days(bucket.first, bucket.last)
    return Filters(project_id=project_id, operator_id=operator_id, analysed=True, created_from=created_from,
                   created_to=created_to)


async def trends(ctx: Context, principal: Principal, project_id: int | None, operator_id: int | None,
                 p: Period) -> Trends:
    unit = unit_for(p)
    points = [Point(b) for b in buckets(p, unit)]
    f = trend_filters(project_id or principal.project_id, operator_id, p)  # a project-scoped key: its project's
    if not recordings.filters_visible(ctx, principal, f):
        return Trends(p, unit, points, [], [])
    days = await ctx.catalog.read(trend_rows.days, principal.scope, f)
    goal_days = await ctx.catalog.read(trend_rows.goal_days, principal.scope, f)
    point_of = _placer(p, unit)
    for d in days:
        point = points[point_of(d.day)]
        point.calls += d.calls
        point.pause_compliance_sum += d.pause_compliance_sum
        point.agent_talk_ms += d.agent_talk_ms
        point.customer_talk_ms += d.customer_talk_ms
        if d.emotion is not None:
            point.emotions[d.emotion] = point.emotions.get(d.emotion, 0) + d.calls
    per_goal: dict[tuple[int | None, int], list[GoalPoint]] = defaultdict(lambda: [GoalPoint(b.bucket) for b in points])
    for g in goal_days:
        goal_point = per_goal[(g.project_id, g.goal_id)][point_of(g.day)]
        goal_point.calls += g.calls
        goal_point.met += g.met
    return Trends(p, unit, points, _goal_series(ctx, principal, per_goal),
                  await _tracker_series(ctx, principal, f, point_of, points))


async def _tracker_series(ctx: Context, principal: Principal, f: Filters, point_of: Callable[[date], int],
                          points: list[Point]) -> list[TrackerSeries]:
    """A series per tracker of the projects shown (those the caller sees; the one filtered on), each bucket the
    share of the project's analysed calls that matched it. Read only where a project has trackers."""
    shown = {project.status.id: project for project in recordings.visible_projects(ctx, principal)
             if project.status.id is not None and project.spec.trackers and f.project_id in (None, project.status.id)}
    if not shown:
        return []
    totals: dict[int, list[int]] = defaultdict(lambda: [0] * len(points))
    for d in await ctx.catalog.read(trend_rows.project_days, principal.scope, f, list(shown)):
        totals[d.project_id][point_of(d.day)] += d.calls
    matched: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0] * len(points))
    for t in await ctx.catalog.read(trend_rows.tracker_days, principal.scope, f):
        matched[(t.project_id, t.tracker)][point_of(t.day)] += t.calls
    return [TrackerSeries(project.spec.name, pid, tracker, [
        TrackerPoint(point.bucket, totals[pid][i], matched[(pid, tracker.name)][i]) for i, point in enumerate(points)])
        for pid, project in shown.items() for tracker in project.spec.trackers]


def _goal_series(ctx: Context, principal: Principal,
                 per_goal: dict[tuple[int | None, int], list[GoalPoint]]) -> list[GoalSeries]:
    """A series per goal that its project (one the caller sees) still has; a goal since removed is left out."""
    series = []
    for project in recordings.visible_projects(ctx, principal):
        for goal in project.spec.goals:
            if (found := per_goal.get((project.status.id, goal.id))) is not None:
                series.append(GoalSeries(project.spec.name, goal.name, found))
    return series


# ----- scorecards ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Figure:
    """The calls scored on an agent, a section or a question over the period, and their average score (0 to 100)."""

    calls: int
    average: float | None


@dataclass(frozen=True)
class AgentFigure(Figure):
    operator_id: int | None  # None: the calls where no agent was identified
    name: str


@dataclass(frozen=True)
class SectionFigure(Figure):
    name: str


@dataclass(frozen=True)
class QuestionFigure(Figure):
    question_id: str
    text: str
    section: str
    reviewed: int  # answers a reviewer saw: the call marked reviewed, or the answer changed
    changed: int  # of them, those a reviewer changed

    @property
    def agreement(self) -> float | None:
        """The share of the reviewed answers no reviewer changed (0 to 1): how far the automatic answer is trusted."""
        return (self.reviewed - self.changed) / self.reviewed if self.reviewed else None


@dataclass
class ScorePoint:
    """A form's scored calls of one bucket."""

    bucket: Bucket
    calls: int = 0
    score_sum: float = 0.0

    @property
    def average(self) -> float | None:
        return self.score_sum / self.calls if self.calls else None


@dataclass(frozen=True)
class FormFigures:
    scorecard_id: int
    name: str
    project_id: int | None  # the form's project where it has one (the calls' links filter on it)
    points: list[ScorePoint]  # the average score per bucket of the period (the unit of the other charts)
    agents: list[AgentFigure]
    sections: list[SectionFigure]
    questions: list[QuestionFigure]


NO_AGENT = "No agent identified"


async def scorecard_figures(ctx: Context, principal: Principal, project_id: int | None, operator_id: int | None,
                            p: Period) -> list[FormFigures]:
    """Per QA form the caller sees, over the calls the list shows for the same filters: the average score per agent,
    per section and per question (in the form's order; those it no longer has left out), and per question the
    reviewers' agreement. A form no call of the period was scored on is left out."""
    f = trend_filters(project_id or principal.project_id, operator_id, p)
    forms = scorecards.list_scorecards(ctx, principal)
    if not forms or not recordings.filters_visible(ctx, principal, f):
        return []
    agents = await ctx.catalog.read(trend_rows.agent_scores, principal.scope, f)
    unit = unit_for(p)
    points: dict[int, list[ScorePoint]] = defaultdict(lambda: [ScorePoint(b) for b in buckets(p, unit)])
    point_of = _placer(p, unit)
    for d in await ctx.catalog.read(trend_rows.score_days, principal.scope, f):
        point = points[d.scorecard_id][point_of(d.day)]
        point.calls += d.calls
        point.score_sum += d.score_sum
    parts = {(r.scorecard_id, r.kind, r.name): r for r in await ctx.catalog.read(trend_rows.part_scores,
                                                                                principal.scope, f)}
    names = {o.status.id: o.spec.name for o in recordings.visible_operators(ctx, principal)}
    projects = {o.name: o.status.id for o in recordings.visible_projects(ctx, principal)}  # as forms name them
    out = []
    for form in forms:
        form_id = form.status.id
        if form_id is None:  # not numbered yet: no call was scored on it
            continue
        scored = sorted((a for a in agents if a.scorecard_id == form_id),
                        key=lambda a: (a.operator_id is None, names.get(a.operator_id, "").casefold()))
        if not scored:
            continue
        spec = form.spec
        section_names = [name for s in spec.sections
                         for name in (s.name, *(section_name(s.name, u.name) for u in s.sections))]
        sections = [SectionFigure(r.calls, r.average, name) for name in section_names
                    if (r := parts.get((form_id, SECTION, name))) is not None]
        questions = [QuestionFigure(r.calls, r.average, q.question.id, q.question.text, spec.sections[q.section].name,
                                    r.reviewed, r.changed) for q in spec.placed()
                     if (r := parts.get((form_id, QUESTION, q.question.id))) is not None]
        own = [projects[name] for name in spec.projects if name in projects]
        out.append(FormFigures(form_id, spec.name, own[0] if len(own) == 1 else None, points[form_id], [
            AgentFigure(a.calls, a.average, a.operator_id, names.get(a.operator_id, NO_AGENT)) for a in scored],
            sections, questions))
    return out
