"""A form's review queue for one period (a week from Monday, or a month, UTC; the form's `review` says which and how
many): per project and agent, a random sample of their calls scored on the form, plus every call that failed
automatically or scored below the form's `below_score`.

The sample is random but the same all the period: each call's place is a hash of the form, the period and the call,
and an agent's sample is their calls of the period already reviewed (they were picked) topped up with the unreviewed
ones of the lowest places; a call made later in the period can take a place not yet reviewed, never one reviewed."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from callscope.catalog import scorecards as rows
from callscope.errors import NotFound
from callscope.resources import Scorecard
from callscope.services import scope
from callscope.services.context import Context, Principal
from callscope.services.scorecards import get_scorecard


@dataclass(frozen=True)
class Waiting:
    """A call of the queue and why it is there: `sample`, `auto_failed`, `low_score` (one or more)."""

    call: rows.Scored
    reasons: list[str]


def period_of(day: date, period: str) -> tuple[datetime, datetime]:
    """The period holding `day`: its first instant and the first of the next (UTC)."""
    if period == "week":
        start = day - timedelta(days=day.weekday())
        first = datetime(start.year, start.month, start.day, tzinfo=UTC)
        return first, first + timedelta(days=7)
    first = datetime(day.year, day.month, 1, tzinfo=UTC)
    return first, datetime(day.year + day.month // 12, day.month % 12 + 1, 1, tzinfo=UTC)


def _place(scorecard_id: int, start: datetime, public_id: str) -> str:
    return hashlib.sha256(f"{scorecard_id}:{start.date().isoformat()}:{public_id}".encode()).hexdigest()


async def queue(ctx: Context, principal: Principal, scorecard_id: int, day: date | None = None,
                project_id: int | None = None) -> tuple[datetime, datetime, list[Waiting]]:
    """The form's queue for the period holding `day` (default today), of its projects the key can see (or the one
    `project_id` names): (period start, period end, the calls in time order)."""
    form: Scorecard = get_scorecard(ctx, principal, scorecard_id)
    ids = [pid for name in form.spec.projects if scope.project_visible(principal, name)
           and (pid := scope.project_id_of(ctx, principal.account, name)) is not None]
    if project_id is not None:
        if project_id not in ids:
            raise NotFound("Project not found")
        ids = [project_id]
    start, end = period_of(day or ctx.clock().date(), form.spec.review.period)
    found = await ctx.catalog.read(rows.scored_between, principal.account, ids, scorecard_id, start, end)
    return start, end, picked(found, form, start)


def picked(calls: list[rows.Scored], form: Scorecard, start: datetime) -> list[Waiting]:
    review = form.spec.review
    by_agent: dict[tuple[int, int | None], list[rows.Scored]] = defaultdict(list)
    for call in calls:
        by_agent[(call.project_id, call.operator_id)].append(call)
    sampled: set[int] = set()
    for agent_calls in by_agent.values():
        reviewed = [c for c in agent_calls if c.reviewed_at is not None]
        rest = sorted((c for c in agent_calls if c not in reviewed),
                      key=lambda c: _place(form.status.id or 0, start, c.public_id))
        sampled.update(c.recording_id for c in (reviewed + rest)[:review.calls_per_agent])
    out = []
    for call in calls:
        reasons = (["sample"] if call.recording_id in sampled else []) + (["auto_failed"] if call.auto_failed else [])
        if review.below_score is not None and call.score is not None and call.score < review.below_score:
            reasons.append("low_score")
        if reasons:
            out.append(Waiting(call, reasons))
    return out
