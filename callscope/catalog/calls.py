"""Call records of virtual numbers: per-number statistics and recent calls."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict
from sqlalchemy import case, delete, func, select
from sqlalchemy.orm import Session

from callscope.catalog.tables import Call

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
    """The `limit` newest calls of a number of `account`, newest first."""
    stmt = (
        select(Call)
        .where(Call.account == account, Call.virtual_number_id == number_id)
        .order_by(Call.created_at.desc(), Call.id.desc())
        .limit(limit)
    )
    return [CallRecord.model_validate(c) for c in session.scalars(stmt)]


def delete_calls_of_numbers(session: Session, account: str, number_ids: list[int]) -> int:
    """Delete the call records of the given numbers of `account`; returns the number deleted."""
    if not number_ids:
        return 0
    return session.execute(
        delete(Call).where(Call.account == account, Call.virtual_number_id.in_(set(number_ids)))
    ).rowcount
