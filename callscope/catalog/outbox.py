"""The webhook outbox over ``webhook_events``, the same on SQLite and PostgreSQL, leased like the job queue
(callscope/catalog/jobs.py): any number of delivering processes share it and no event is sent by two at once.

An event is ``pending`` (due at ``next_attempt_at``), ``delivering`` (leased by one process until
``lease_expires_at``; a process that dies mid-attempt leaves it to be taken over when the lease expires),
``delivered``, ``failed`` (a permanent refusal, or attempts used up) or ``disabled`` (its endpoint answered 410 Gone).
Every attempt is kept in ``webhook_attempts``; every outcome is written only while the lease is still held.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from callscope import tracing
from callscope.catalog.tables import Recording, WebhookAttempt, WebhookEndpoint, WebhookEvent


@dataclass(frozen=True)
class ClaimedEvent:
    id: int
    message_id: str
    account: str
    project_id: int
    url: str
    payload: str
    attempt: int  # including this one
    owner: str
    trace_parent: str | None = None  # the span that wrote the event (callscope/tracing.py)


@dataclass(frozen=True)
class Outcome:
    """What one attempt ended in, and what becomes of the event."""

    state: str  # delivered, pending (retry at next_attempt_at), failed, disabled
    started_at: datetime
    duration_ms: int
    status_code: int | None = None
    error: str | None = None
    response_excerpt: str | None = None
    next_attempt_at: datetime | None = None


def claim(session: Session, n: int, owner: str, lease_seconds: float, now: datetime,
          max_attempts: int) -> list[ClaimedEvent]:
    """Lease up to ``n`` due events; an abandoned event with no attempt left is failed instead."""
    if n <= 0:
        return []
    abandoned = and_(WebhookEvent.state == "delivering", WebhookEvent.lease_expires_at < now)
    claimed: list[ClaimedEvent] = []
    session.execute(update(WebhookEvent).where(abandoned, WebhookEvent.attempts >= max_attempts).values(
        state="failed", lease_owner=None, lease_expires_at=None,
        last_error="the delivering process stopped during the last attempt"))
    due = or_(and_(WebhookEvent.state == "pending", WebhookEvent.next_attempt_at <= now), abandoned)
    events = session.scalars(select(WebhookEvent).where(due).order_by(WebhookEvent.next_attempt_at,
                                                                       WebhookEvent.id)
                             .limit(n).with_for_update(skip_locked=True)).all()
    for event in events:
        event.state, event.attempts = "delivering", event.attempts + 1
        event.lease_owner, event.lease_expires_at = owner, now + timedelta(seconds=lease_seconds)
        claimed.append(ClaimedEvent(event.id, event.message_id, event.account, event.project_id, event.url,
                                    event.payload, event.attempts, owner, event.trace_parent))
    return claimed


def endpoint_disabled(session: Session, account: str, project_id: int, url: str) -> str | None:
    """Why the endpoint is disabled (it answered 410 Gone), or None when it is not."""
    return session.scalar(select(WebhookEndpoint.disabled_reason).where(
        WebhookEndpoint.account == account, WebhookEndpoint.project_id == project_id,
        WebhookEndpoint.url == url, WebhookEndpoint.disabled_at.is_not(None)))


def record(session: Session, event: ClaimedEvent, outcome: Outcome, now: datetime) -> bool:
    """Keep the attempt and move the event to ``outcome.state``; False (nothing written) when the lease was lost."""
    owned = and_(WebhookEvent.id == event.id, WebhookEvent.state == "delivering",
                 WebhookEvent.lease_owner == event.owner)
    values = {"state": outcome.state, "lease_owner": None, "lease_expires_at": None,
              "last_status_code": outcome.status_code, "last_error": outcome.error}
    if outcome.state == "delivered":
        values["delivered_at"] = now
    if outcome.next_attempt_at is not None:
        values["next_attempt_at"] = outcome.next_attempt_at
    if session.execute(update(WebhookEvent).where(owned).values(**values)).rowcount != 1:
        return False
    session.add(WebhookAttempt(event_id=event.id, attempt=event.attempt, started_at=outcome.started_at,
                               duration_ms=outcome.duration_ms, status_code=outcome.status_code,
                               error=outcome.error, response_excerpt=outcome.response_excerpt))
    if outcome.state == "disabled" and outcome.status_code == 410:
        endpoint = session.scalar(select(WebhookEndpoint).where(
            WebhookEndpoint.account == event.account, WebhookEndpoint.project_id == event.project_id,
            WebhookEndpoint.url == event.url))
        if endpoint is None:
            endpoint = WebhookEndpoint(account=event.account, project_id=event.project_id, url=event.url)
            session.add(endpoint)
        endpoint.disabled_at, endpoint.disabled_reason = now, f"answered 410 Gone at {now.isoformat()}"
    return True


def add(session: Session, account: str, project_id: int, recording_id: int | None, event_type: str, url: str,
        body: dict[str, Any], now: datetime) -> WebhookEvent:
    """Put an event into the outbox in the caller's transaction (it is sent once that commits). Where tracing is
    on, its delivery attempts continue the caller's trace (callscope/tracing.py)."""
    event = WebhookEvent(
        message_id=f"msg_{uuid.uuid4().hex}", account=account, project_id=project_id, recording_id=recording_id,
        event_type=event_type, url=url, payload=json.dumps(body, separators=(",", ":")), state="pending",
        attempts=0, next_attempt_at=now, created_at=now, trace_parent=tracing.traceparent())
    session.add(event)
    return event


# ----- the outbox as users see it (callscope webhooks ...) --------------------------------------

def list_events(session: Session, account: str, states: tuple[str, ...] = (), recording_id: int | None = None,
                limit: int = 50) -> list[WebhookEvent]:
    query = select(WebhookEvent).where(WebhookEvent.account == account).order_by(WebhookEvent.id.desc()).limit(limit)
    if states:
        query = query.where(WebhookEvent.state.in_(states))
    if recording_id is not None:
        query = query.where(WebhookEvent.recording_id == recording_id)
    return list(session.scalars(query))


@dataclass(frozen=True)
class Delivery:
    """An event as the delivery list shows it."""

    event: WebhookEvent
    recording_name: str | None  # None: no recording, or one deleted since
    attempts: int  # every attempt made, over redeliveries too (`event.attempts` counts the current round's)


def list_deliveries(session: Session, account: str, project_id: int, limit: int = 50) -> list[Delivery]:
    """The project's newest events, newest first, with their recordings' names and attempt counts."""
    made = (select(func.count(WebhookAttempt.id)).where(WebhookAttempt.event_id == WebhookEvent.id)
            .correlate(WebhookEvent).scalar_subquery())
    query = (select(WebhookEvent, Recording.name, made)
             .outerjoin(Recording, and_(Recording.id == WebhookEvent.recording_id,
                                        Recording.account == WebhookEvent.account))
             .where(WebhookEvent.account == account, WebhookEvent.project_id == project_id)
             .order_by(WebhookEvent.id.desc()).limit(limit))
    return [Delivery(event, name, count) for event, name, count in session.execute(query)]


def attempts_made(session: Session, event_ids: list[int]) -> dict[int, int]:
    """Every attempt made of each event, over redeliveries too (`WebhookEvent.attempts` counts the current round's);
    an event without any is left out."""
    rows = session.execute(select(WebhookAttempt.event_id, func.count(WebhookAttempt.id))
                           .where(WebhookAttempt.event_id.in_(event_ids)).group_by(WebhookAttempt.event_id))
    return {event_id: made for event_id, made in rows}


def attempts_of(session: Session, account: str, event_id: int) -> tuple[WebhookEvent | None, list[WebhookAttempt]]:
    event = session.scalar(select(WebhookEvent).where(WebhookEvent.id == event_id,
                                                      WebhookEvent.account == account))
    if event is None:
        return None, []
    # In the order made: a redelivery numbers its attempts from 1 again.
    return event, list(session.scalars(select(WebhookAttempt).where(WebhookAttempt.event_id == event_id)
                                       .order_by(WebhookAttempt.id)))


# Events that may be sent again: every finished one, a delivered one too (an endpoint that lost what it received
# asks for it again); a pending or delivering one is on its way already.
REDELIVERABLE = ("delivered", "failed", "disabled")


def redeliver(session: Session, account: str, event_ids: list[int], now: datetime) -> list[int]:
    """Queue finished events again (REDELIVERABLE; the round's attempts start over, those made stay listed); the ids
    that were queued. The rows are locked as they are read (PostgreSQL: a second redelivery at the same instant
    waits, then finds the event pending and leaves it, so it can never reset an event a deliverer has leased
    meanwhile; SQLite: `Catalog.write`'s BEGIN IMMEDIATE runs the two one after the other)."""
    queued = []
    for event in session.scalars(select(WebhookEvent).where(
            WebhookEvent.account == account, WebhookEvent.id.in_(event_ids),
            WebhookEvent.state.in_(REDELIVERABLE)).order_by(WebhookEvent.id).with_for_update()):
        event.state, event.attempts, event.next_attempt_at, event.delivered_at = "pending", 0, now, None
        queued.append(event.id)
    return queued


def enable_endpoint(session: Session, account: str, url: str) -> int:
    """Re-enable an endpoint disabled by a 410 Gone; the number of endpoint rows enabled."""
    rows = list(session.scalars(select(WebhookEndpoint).where(
        WebhookEndpoint.account == account, WebhookEndpoint.url == url,
        WebhookEndpoint.disabled_at.is_not(None))))
    for row in rows:
        row.disabled_at, row.disabled_reason = None, None
    return len(rows)
