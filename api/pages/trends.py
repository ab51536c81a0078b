"""The Trends page: over a chosen period, the account's (or a project's, or an operator's) analysed calls per day,
week or month, their goals met, the share that matched each tracker, pause compliance, talk-time share and
prevailing emotions, a chart each; every bar links to the list of the recordings it counts (the list's own filters,
so the list shows exactly those), a tracker's bar to the search page of its query over the bar's calls, which opens
the moments they matched. Below, the team's scorecard figures over the period: per QA form the average score per
agent, section and question (each linked to its calls), and per question how often reviewers agreed with the
automatic answer."""

from __future__ import annotations

from datetime import date
from functools import partial

from pydantic import BaseModel

from callscope.analysis.result import EMOTIONS
from callscope.api.body import parse_fields
from callscope.api.pages import trend_charts, web
from callscope.api.pages.listing import filter_form, list_url
from callscope.api.pages.search import search_url
from callscope.api.pages.trend_charts import Chart, Slot
from callscope.api.pages.views import EMOTION_COLOURS
from callscope.api.schemas import text_int
from callscope.services import recordings, trends
from callscope.services.context import Context
from callscope.services.trends import Bucket, GoalPoint, TrackerPoint, TrackerSeries, Trends, Unit

PATH = "/trends"


class TrendsQuery(BaseModel):
    project_id: text_int(1) = None  # type: ignore[valid-type]  # an Annotated type text_int builds at run time
    operator_id: text_int(1) = None  # type: ignore[valid-type]
    start: date | None = None  # the period's first day; blank: DEFAULT_DAYS before its last
    end: date | None = None  # its last day (included); blank: today


def _slot(bucket: Bucket, unit: Unit, href: str) -> Slot:
    first = bucket.first
    tick = first.strftime("%b %Y") if unit is Unit.MONTH else f"{first.day} {first:%b}"
    name = {Unit.DAY: f"{first:%a} {first.day} {first:%b %Y}", Unit.WEEK: f"Week of {first.day} {first:%b %Y}",
            Unit.MONTH: f"{first:%B %Y}"}[unit]
    return Slot(tick, href, name)


def _list_slot(bucket: Bucket, unit: Unit, query: TrendsQuery) -> Slot:
    return _slot(bucket, unit, list_url(project_id=query.project_id, operator_id=query.operator_id,
                                        analysed=True, added_from=bucket.first, added_to=bucket.last))


def _search_slot(bucket: Bucket, unit: Unit, series: TrackerSeries, query: TrendsQuery) -> Slot:
    """The bar's moments: the tracker's query in its mode over the calls the bar counts (its project, the
    operator filtered on, the bar's days)."""
    tracker = series.tracker
    return _slot(bucket, unit, search_url(tracker.query, tracker.mode, project_id=series.project_id,
                                          operator_id=query.operator_id, created_from=bucket.first,
                                          created_to=bucket.last))


def count_top(peak: int) -> int:
    """The top of a count's axis: the smallest 2, 4, 6 or 10 times a power of ten at least `peak`, so that its middle
    tick is a whole number too (a top of 5 read "0, 2, 5")."""
    step = 1
    while True:
        for m in (2, 4, 6, 10):
            if m * step >= peak:
                return m * step
        step *= 10


def _calls(n: int) -> str:
    return f"{n} call{'' if n == 1 else 's'}"


def _percent(value: float | None, of: str) -> str:
    return f"{value:.0%} {of}" if value is not None else "no call to measure"


def _goal_met(goal: list[GoalPoint], i: int) -> str:
    return _percent(goal[i].attainment, f"met, {goal[i].met} of {_calls(goal[i].calls)}")


def _tracked(points: list[TrackerPoint], i: int) -> str:
    return _percent(points[i].share, f"matched, {points[i].matched} of {_calls(points[i].calls)}")


def _tracker_charts(t: Trends, query: TrendsQuery) -> list[Chart]:
    """A chart per tracker: the share of its project's analysed calls that matched it."""
    return [trend_charts.bars(
        f"tracker-{n}", f"Tracker: {series.tracker.name} ({series.project})",
        [_search_slot(p.bucket, t.unit, series, query) for p in series.points], [p.share for p in series.points], 1,
        lambda v: f"{v:.0%}", partial(_tracked, series.points)) for n, series in enumerate(t.trackers)]


def _scored(points: list[trends.ScorePoint], i: int) -> str:
    average = points[i].average
    return _percent(None if average is None else average / 100, f"on average, over {_calls(points[i].calls)} scored")


def score_chart(form: trends.FormFigures, unit: Unit, query: TrendsQuery) -> Chart:
    """A form's average score per bucket, each bar linked to the calls it counts (the form's project)."""
    slots = [_slot(p.bucket, unit, _calls_url(query, p.bucket, form)) for p in form.points]
    return trend_charts.bars(f"score-{form.scorecard_id}", f"Average score: {form.name}", slots,
                             [None if p.average is None else p.average / 100 for p in form.points], 1,
                             lambda v: f"{v:.0%}", partial(_scored, form.points))


def charts(t: Trends, query: TrendsQuery) -> list[Chart]:
    slots = [_list_slot(p.bucket, t.unit, query) for p in t.points]
    points = t.points

    def emotions(i: int) -> str:
        mix = ", ".join(f"{name} {points[i].emotions[name]}" for name in EMOTIONS if points[i].emotions.get(name))
        unknown = points[i].calls - sum(points[i].emotions.values())
        return (mix or "no emotion known") + (f" ({_calls(unknown)} without one)" if mix and unknown else "")

    out = [trend_charts.bars("calls", "Calls analysed", slots, [p.calls for p in points],
                             count_top(max((p.calls for p in points), default=0)), lambda v: f"{v:.0f}",
                             lambda i: f"{_calls(points[i].calls)} analysed")]
    for n, series in enumerate(t.goals):
        goal = series.points
        out.append(trend_charts.bars(
            f"goal-{n}", f"Goal met: {series.goal} ({series.project})", slots, [g.attainment for g in goal], 1,
            lambda v: f"{v:.0%}", partial(_goal_met, goal)))
    out.extend(_tracker_charts(t, query))
    out.append(trend_charts.bars(
        "pauses", "Average pause compliance", slots, [p.pause_compliance for p in points], 1, lambda v: f"{v:.0%}",
        lambda i: _percent(points[i].pause_compliance, f"of pauses compliant, over {_calls(points[i].calls)}")))
    out.append(trend_charts.bars(
        "talk", "Agents' share of the talk time", slots, [p.agent_talk_share for p in points], 1,
        lambda v: f"{v:.0%}", lambda i: _percent(points[i].agent_talk_share, "of the talk time by agents")))
    out.append(trend_charts.stacks("emotions", "Prevailing emotion of the calls", slots,
                                   [p.emotions for p in points], EMOTIONS, EMOTION_COLOURS, emotions))
    return out


class TrendsPage:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp):
        person, account = await web.require_account(self.ctx, req)
        query = parse_fields(TrendsQuery, filter_form(req))
        principal = person.principal(account)
        period = trends.period(query.start, query.end, self.ctx.clock().date())
        found = await trends.trends(self.ctx, principal, query.project_id, query.operator_id, period)
        figures = await trends.scorecard_figures(self.ctx, principal, query.project_id, query.operator_id, period)
        web.render(req, resp, "trends.html", person=person, account=principal.account, query=query, t=found,
                   charts=charts(found, query), total=sum(p.calls for p in found.points),
                   projects=recordings.visible_projects(self.ctx, principal),
                   operators=recordings.visible_operators(self.ctx, principal),
                   period_url=list_url(project_id=query.project_id, operator_id=query.operator_id,
                                       analysed=True, added_from=period.first, added_to=period.last),
                   scorecards=[(form, score_chart(form, found.unit, query)) for form in figures],
                   calls_url=partial(_calls_url, query, period))


def _calls_url(query: TrendsQuery, days: Bucket | trends.Period, form: trends.FormFigures,
               operator_id: int | None = None) -> str:
    """The list of the calls a form's figure counts over `days`: the form's project (where it has one), the operator
    filtered on or the agent's row."""
    return list_url(project_id=query.project_id or form.project_id, operator_id=operator_id or query.operator_id,
                    analysed=True, added_from=days.first, added_to=days.last)
