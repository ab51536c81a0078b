"""What the job queue and the webhook outbox hold now, for the metrics read at scrape time
(callscope/metrics_catalog.py): a few aggregate queries over the ``state`` indexes, never a row per job."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from callscope.catalog.jobs import ACTIVE, ANALYZE
from callscope.catalog.tables import Job, Recording, WebhookEvent

# The spec's indicative analysis time by call length: (calls shorter than this many seconds, the upper end of their
# indicative time in seconds); the last band takes every longer call. benchmarks/call_lengths.py measures against
# the same figures.
INDICATIVE = (("under_5m", 5 * 60, 60), ("5m_to_15m", 15 * 60, 3 * 60), ("15m_to_60m", 60 * 60, 10 * 60),
              ("over_60m", None, 20 * 60))
UNDELIVERED = ("pending", "delivering")


@dataclass(frozen=True)
class QueueFigures:
    queued: dict[tuple[str, int], int]  # (account, project id) -> queued jobs: the `top` deepest
    queued_total: int
    running: int
    oldest_queued: datetime | None
    overdue: dict[str, int]  # INDICATIVE band -> unfinished first analyses older than the band's indicative time
    webhooks_undelivered: int
    oldest_undelivered: datetime | None


def _overdue(session: Session, now: datetime) -> dict[str, int]:
    """First analyses still queued or running whose recording was uploaded longer ago than the indicative time for
    its length (re-analyses are left out: their upload is old by nature)."""
    counts, shorter_than = [], 0
    for name, below, upper in INDICATIVE:
        seconds = Recording.duration_ms / 1000
        band = seconds >= shorter_than if below is None else and_(seconds >= shorter_than, seconds < below)
        late = and_(band, Recording.created_at < now - timedelta(seconds=upper))
        counts.append(func.coalesce(func.sum(case((late, 1), else_=0)), 0).label(name))
        shorter_than = below or 0
    row = session.execute(select(*counts).select_from(Job).join(Recording, Recording.id == Job.recording_id)
                          .where(Job.state.in_(ACTIVE), Job.kind == ANALYZE)).one()
    return {name: int(value) for (name, _, _), value in zip(INDICATIVE, row, strict=True)}


def queue_figures(session: Session, now: datetime, top: int) -> QueueFigures:
    by_state = {state: n for state, n in session.execute(select(Job.state, func.count())
                                                           .where(Job.state.in_(ACTIVE)).group_by(Job.state))}
    deepest = session.execute(select(Recording.account, Recording.project_id, func.count().label("n"))
                              .select_from(Job).join(Recording, Recording.id == Job.recording_id)
                              .where(Job.state == "queued").group_by(Recording.account, Recording.project_id)
                              .order_by(func.count().desc()).limit(top)).all()
    oldest = session.scalar(select(func.min(Job.created_at)).where(Job.state == "queued"))
    undelivered, oldest_event = session.execute(
        select(func.count(), func.min(WebhookEvent.created_at)).where(WebhookEvent.state.in_(UNDELIVERED))).one()
    return QueueFigures(queued={(account, project): n for account, project, n in deepest},
                        queued_total=by_state.get("queued", 0), running=by_state.get("running", 0),
                        oldest_queued=oldest, overdue=_overdue(session, now), webhooks_undelivered=undelivered,
                        oldest_undelivered=oldest_event)
