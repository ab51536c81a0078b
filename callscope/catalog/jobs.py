"""The durable job queue over the ``jobs`` table, the same on SQLite and PostgreSQL.

A job is ``queued``, ``running`` (leased by one dispatcher), ``done`` or ``failed``; at most one per recording is
queued or running. ``claim`` takes up to ``n`` due jobs (or running ones whose lease expired) in one write
transaction, counting an attempt each; ``exhausted`` lists those with no attempt left, for the caller to fail. Every
later write by a dispatcher is guarded by ``lease_owner = me AND state = 'running'``, and a recording's status moves
only along ``TRANSITIONS``. How claiming stays safe on both databases: docs/operations.md.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, exists, or_, select, update
from sqlalchemy.orm import Session

from callscope import tracing
from callscope.catalog.db import insert
from callscope.catalog.tables import Job, Recording
from callscope.statuses import FINISHED, RecordingStatus

ANALYZE = "analyze"
REANALYZE = "reanalyze"
ACTIVE = ("queued", "running")

# kind -> (recording statuses a claim may start from, status while it runs (None: unchanged)).
START = {ANALYZE: ((RecordingStatus.PENDING, RecordingStatus.PROCESSING), RecordingStatus.PROCESSING),
         REANALYZE: (FINISHED, None)}
# kind -> recording statuses the outcome (completed or failed) may be written over.
TRANSITIONS = {ANALYZE: (RecordingStatus.PROCESSING,), REANALYZE: FINISHED}
# Recordings that may be re-analysed: those whose analysis reached an end.
REANALYZABLE = FINISHED


class IllegalTransition(Exception):
    """A recording status change the state machine does not allow (the write is rolled back)."""


@dataclass(frozen=True)
class Claimed:
    """A job this dispatcher holds the lease of."""

    id: int
    recording_id: int
    kind: str
    attempts: int  # including this one
    owner: str
    trace_parent: str | None = None  # the span that queued the job (callscope/tracing.py)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and full jitter around it (0.5x..1.5x)."""

    max_attempts: int = 3
    base_seconds: float = 10.0
    max_seconds: float = 600.0

    def delay(self, attempts: int, rng: random.Random | None = None) -> float:
        """Seconds before the attempt after attempt number ``attempts`` (1-based)."""
        raw = min(self.max_seconds, self.base_seconds * 2 ** max(0, attempts - 1))
        return raw * (0.5 + (rng or random).random())


def _owned(job_id: int, owner: str):
    return and_(Job.id == job_id, Job.state == "running", Job.lease_owner == owner)


def enqueue(session: Session, recording_id: int, kind: str, now: datetime) -> bool:
    """Queue a job for the recording in the caller's transaction; False when one is already queued or running.
    Where tracing is on, the job's dispatcher continues the trace of the caller (callscope/tracing.py)."""
    with tracing.span("job.enqueue", "producer", {"callscope.recording.id": recording_id, "callscope.job.kind": kind}):
        # DO NOTHING without a target also covers the partial unique index (one active job per recording).
        statement = (insert(session, Job)
                     .values(recording_id=recording_id, kind=kind, state="queued", attempts=0, available_at=now,
                             created_at=now, updated_at=now, trace_parent=tracing.traceparent())
                     .on_conflict_do_nothing().returning(Job.id))
        return session.execute(statement).scalar() is not None


def claim(session: Session, n: int, owner: str, lease_seconds: float, now: datetime,
          max_attempts: int) -> list[Claimed]:
    """Lease up to ``n`` due jobs (queued and available, or running with an expired lease and attempts left)."""
    if n <= 0:
        return []
    due = or_(and_(Job.state == "queued", Job.available_at <= now),
              and_(Job.state == "running", Job.lease_expires_at < now, Job.attempts < max_attempts))
    expires = now + timedelta(seconds=lease_seconds)
    claimed: list[Claimed] = []
    rows = session.execute(select(Job.id, Job.recording_id, Job.kind, Job.attempts, Job.trace_parent).where(due)
                           .order_by(Job.available_at, Job.id).limit(n)
                           .with_for_update(skip_locked=True)).all()
    for job_id, recording_id, kind, attempts, trace_parent in rows:
        session.execute(update(Job).where(Job.id == job_id).values(
            state="running", attempts=attempts + 1, lease_owner=owner, lease_expires_at=expires,
            heartbeat_at=now, updated_at=now))
        allowed, status = START.get(kind, ((), None))
        values = {"stage": "queued" if kind == ANALYZE else "reanalyzing", "progress": 0, "status_reason": None,
                  "updated_at": now}  # an attempt runs: why the last one waited is past
        if status:
            values["status"] = status
        moved = session.execute(update(Recording).where(Recording.id == recording_id,
                                                        Recording.status.in_(allowed)).values(**values))
        if moved.rowcount != 1:  # e.g. a re-analysis of a recording that is still pending: never runs
            session.execute(update(Job).where(Job.id == job_id).values(
                state="failed", lease_owner=None, lease_expires_at=None, finished_at=now,
                last_error=f"recording cannot be {kind}d from its current status"))
            continue
        claimed.append(Claimed(job_id, recording_id, kind, attempts + 1, owner, trace_parent))
    return claimed


def heartbeat(session: Session, job_id: int, owner: str, lease_seconds: float, now: datetime) -> bool:
    """Extend the lease; False when this owner no longer holds it (the work must stop)."""
    result = session.execute(update(Job).where(_owned(job_id, owner)).values(
        lease_expires_at=now + timedelta(seconds=lease_seconds), heartbeat_at=now, updated_at=now))
    return result.rowcount == 1


def report_progress(session: Session, claimed: Claimed, stage: str, percent: int, now: datetime) -> bool:
    """Show the running stage and progress on the recording, only while ``claimed`` still holds its lease."""
    holds = exists().where(_owned(claimed.id, claimed.owner))
    result = session.execute(update(Recording).where(Recording.id == claimed.recording_id, holds).values(
        stage=stage, progress=max(0, min(100, int(percent))), updated_at=now))
    return result.rowcount == 1


def holds_lease(session: Session, claimed: Claimed) -> bool:
    """Inside a write transaction: whether ``claimed`` still owns its job (its outcome may be written)."""
    return session.scalar(select(Job.id).where(_owned(claimed.id, claimed.owner))
                          .with_for_update()) is not None


def finish(session: Session, claimed: Claimed, state: str, now: datetime, error: str | None = None) -> bool:
    """In the caller's transaction, end the job (``done`` or ``failed``); False when the lease was lost."""
    result = session.execute(update(Job).where(_owned(claimed.id, claimed.owner)).values(
        state=state, lease_owner=None, lease_expires_at=None, finished_at=now, updated_at=now, last_error=error))
    return result.rowcount == 1


def move_recording(session: Session, recording_id: int, kind: str, values: dict) -> None:
    """Write an outcome onto the recording, only from the statuses ``kind`` may leave; else IllegalTransition."""
    result = session.execute(update(Recording).where(Recording.id == recording_id,
                                                     Recording.status.in_(TRANSITIONS[kind])).values(**values))
    if result.rowcount != 1:
        raise IllegalTransition(f"recording {recording_id}: a {kind} job cannot set {values.get('status')!r} "
                                f"from its current status")


def retry_later(session: Session, claimed: Claimed, error: str, delay_seconds: float, now: datetime,
                counted: bool = True) -> bool:
    """Put the job back in the queue for another attempt after ``delay_seconds``; False when the lease was lost.

    ``counted=False`` gives the attempt back: the analysis never had its chance (the dispatcher lost its Ray
    cluster), so an outage of the cluster does not use up a recording's attempts."""
    attempts = Job.attempts if counted else Job.attempts - 1
    result = session.execute(update(Job).where(_owned(claimed.id, claimed.owner)).values(
        state="queued", available_at=now + timedelta(seconds=delay_seconds), lease_owner=None,
        lease_expires_at=None, last_error=error[:4000], attempts=attempts, updated_at=now))
    if result.rowcount == 1:  # the recording says why it waits (a failed attempt, no room on the cluster)
        session.execute(update(Recording).where(Recording.id == claimed.recording_id).values(
            stage="retrying", status_reason=error[:1000], updated_at=now))
    return result.rowcount == 1


def exhausted(session: Session, now: datetime, max_attempts: int, limit: int = 100) -> list[Claimed]:
    """Running jobs whose lease expired with no attempt left (their worker died every time).

    Each is returned as if claimed by its last owner, so ``finish``'s ownership check still guards against a
    late completion by that owner.
    """
    rows = session.execute(select(Job.id, Job.recording_id, Job.kind, Job.attempts, Job.lease_owner).where(
        Job.state == "running", Job.lease_expires_at < now, Job.attempts >= max_attempts).limit(limit)).all()
    return [Claimed(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def enqueue_many(session: Session, recording_ids: Iterable[int], kind: str, now: datetime,
                 from_statuses: tuple[str, ...] = REANALYZABLE) -> list[int]:
    """Queue ``kind`` for each recording whose status is in ``from_statuses``; the ids that got a new job."""
    queued: list[int] = []
    for recording_id in recording_ids:
        status = session.scalar(select(Recording.status).where(Recording.id == recording_id))
        if status in from_statuses and enqueue(session, recording_id, kind, now):
            queued.append(recording_id)
    return queued


def of_account(session: Session, account: str, states: tuple[str, ...], limit: int) -> list[tuple[Job, str]]:
    """The account's newest jobs (in `states`, when given) with their recordings' public ids."""
    query = (select(Job, Recording.public_id).join(Recording, Recording.id == Job.recording_id)
             .where(Recording.account == account).order_by(Job.id.desc()).limit(limit))
    if states:
        query = query.where(Job.state.in_(states))
    return [(job, public_id) for job, public_id in session.execute(query).all()]
