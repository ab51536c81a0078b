"""Call records of virtual numbers: per-number statistics and recent calls, and the state of a call the carrier's
webhooks drive (callscope/services/phone_calls.py): its start (with the round-robin cursor), dial attempts, end,
answering operator and recording.

The carrier's callbacks name a call by the carrier's call id only; :func:`by_provider_id` finds it across accounts
(the id is the carrier's, unique there, and the request is authenticated by the carrier's signature), and every
later change goes by the row's own id.
"""

from __future__ import annotations

import json
from datetime import datetime

from pydantic import BaseModel, ConfigDict
from sqlalchemy import case, delete, func, select, update
from sqlalchemy.orm import Session

from callscope.catalog.db import insert
from callscope.catalog.tables import Analysis, Call, RoutingCursor

RINGING = "ringing"  # a call the carrier's webhooks are still routing
ANSWERED_STATUSES = ("completed", "answered")
MISSED_STATUSES = ("missed", "no-answer", "busy", "failed", "canceled")


class NumberStats(BaseModel):
    total_calls: int = 0
    answered_calls: int = 0
    missed_calls: int = 0
    average_duration_seconds: int = 0  # over answered calls; 0 when there are none


class CallRecord(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    phone_number: str
    caller_name: str
    call_status: str
    call_duration: int
    direction: str
    ai_handled: bool
    transcript_summary: str | None
    created_at: datetime


def number_stats(session: Session, account: str, number_ids: list[int]) -> dict[int, NumberStats]:
    """Statistics of each given number of `account` (zeros for numbers without calls), in one query."""
    result = {nid: NumberStats() for nid in number_ids}
    if not number_ids:
        return result
    answered = Call.call_status.in_(ANSWERED_STATUSES)
    stmt = (
        select(
            Call.virtual_number_id,
            func.count(),
            func.sum(case((answered, 1), else_=0)),
            func.sum(case((Call.call_status.in_(MISSED_STATUSES), 1), else_=0)),
            func.avg(case((answered, Call.call_duration))),  # AVG skips the NULLs of other statuses
        )
        .where(Call.account == account, Call.virtual_number_id.in_(set(number_ids)))
        .group_by(Call.virtual_number_id)
    )
    rows = session.execute(stmt).all()
    for number_id, total, n_answered, n_missed, avg_duration in rows:
        result[number_id] = NumberStats(
            total_calls=total,
            answered_calls=n_answered or 0,
            missed_calls=n_missed or 0,
            average_duration_seconds=round(float(avg_duration)) if avg_duration is not None else 0,
        )
    return result


def recent_calls(session: Session, account: str, number_id: int, limit: int = 10) -> list[CallRecord]:
    """The `limit` newest calls of a number of `account`, newest first; a recorded call's summary is its
    recording's current analysis summary (read here, never copied, so a re-analysis shows at once)."""
    stmt = (
        select(Call, Analysis.summary)
        .outerjoin(Analysis, Analysis.recording_id == Call.recording_id)
        .where(Call.account == account, Call.virtual_number_id == number_id)
        .order_by(Call.created_at.desc(), Call.id.desc())
        .limit(limit)
    )
    return [CallRecord.model_validate(call).model_copy(update={"transcript_summary": summary})
            if summary is not None else CallRecord.model_validate(call)
            for call, summary in session.execute(stmt)]


# ----- calls the carrier's webhooks drive -------------------------------------------------------------

def by_provider_id(session: Session, provider_call_id: str) -> Call | None:
    return session.scalars(select(Call).where(Call.provider_call_id == provider_call_id)).first()


def dial_order(call: Call) -> list[list[tuple[int, str]]]:
    """The call's dial rounds: each a list of (operator id, phone number) rung together."""
    return [[(operator_id, phone) for operator_id, phone in targets] for targets in json.loads(call.dial_order or "[]")]


def _round_robin(session: Session, account: str, number_id: int,
                 rounds: list[list[tuple[int, str]]]) -> list[list[tuple[int, str]]]:
    """`rounds` (one operator each) starting after the operator the number's last call tried first; moves the
    cursor. The cursor row is locked (PostgreSQL) or the transaction holds SQLite's write lock, so concurrent calls
    on several replicas each start with the next operator."""
    session.execute(insert(session, RoutingCursor).values(
        account=account, virtual_number_id=number_id, operator_id=0).on_conflict_do_nothing())
    cursor = session.scalars(select(RoutingCursor).where(
        RoutingCursor.account == account, RoutingCursor.virtual_number_id == number_id).with_for_update()).one()
    firsts = [targets[0][0] for targets in rounds]
    start = firsts.index(cursor.operator_id) + 1 if cursor.operator_id in firsts else 0
    order = rounds[start:] + rounds[:start]
    cursor.operator_id = order[0][0][0]
    return order


def start_call(session: Session, call: Call, rounds: list[list[tuple[int, str]]],
               round_robin: bool) -> tuple[Call, bool]:
    """Record a new call with its dial rounds: (the call, True); a replay of a call already recorded changes
    nothing: (that call, False)."""
    existing = session.scalars(select(Call).where(
        Call.account == call.account, Call.provider_call_id == call.provider_call_id)).first()
    if existing is not None:
        return existing, False
    if round_robin and rounds:
        rounds = _round_robin(session, call.account, call.virtual_number_id, rounds)
    call.dial_order = json.dumps(rounds)
    session.add(call)
    session.flush()
    return call, True


def next_attempt(session: Session, call_id: int, attempt: int) -> Call | None:
    """Move a ringing call from dial attempt `attempt` to the next one; None when it had moved on already
    (a replayed or late callback)."""
    moved = session.execute(update(Call).where(
        Call.id == call_id, Call.dial_attempt == attempt, Call.call_status == RINGING
    ).values(dial_attempt=attempt + 1)).rowcount
    return session.get(Call, call_id, populate_existing=True) if moved else None


def finish_call(session: Session, call_id: int, status: str, duration: int | None = None,
                operator_id: int | None = None) -> bool:
    """End a ringing call (answered, missed); False when it had ended already."""
    values: dict = {"call_status": status}
    if duration is not None:
        values["call_duration"] = duration
    if operator_id is not None:
        values["operator_id"] = operator_id
    return bool(session.execute(update(Call).where(Call.id == call_id, Call.call_status == RINGING)
                                .values(**values)).rowcount)


def set_answered_by(session: Session, call_id: int, operator_id: int) -> None:
    """The first operator to answer takes the call; a later report changes nothing."""
    session.execute(update(Call).where(Call.id == call_id, Call.operator_id.is_(None)).values(operator_id=operator_id))


def set_recording(session: Session, call_id: int, recording_id: int) -> None:
    session.execute(update(Call).where(Call.id == call_id).values(recording_id=recording_id))


def delete_calls_of_numbers(session: Session, account: str, number_ids: list[int]) -> int:
    """Delete the call records of the given numbers of `account`; returns the number deleted."""
    if not number_ids:
        return 0
    session.execute(delete(RoutingCursor).where(
        RoutingCursor.account == account, RoutingCursor.virtual_number_id.in_(set(number_ids))))
    return session.execute(
        delete(Call).where(Call.account == account, Call.virtual_number_id.in_(set(number_ids)))
    ).rowcount
