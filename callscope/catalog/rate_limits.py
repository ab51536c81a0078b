"""Fixed-window request counters of the rate limiter (table ``rate_limit_windows``)."""

from __future__ import annotations

from sqlalchemy import delete
from sqlalchemy.orm import Session

from callscope.catalog.db import insert
from callscope.catalog.tables import RateLimitWindow


def increment(session: Session, bucket: str, window_start: int) -> int:
    """Count one hit in the window; the new count. One atomic upsert, so processes share one exact count."""
    stmt = (
        insert(session, RateLimitWindow)
        .values(bucket=bucket, window_start=window_start, count=1)
        .on_conflict_do_update(
            index_elements=[RateLimitWindow.bucket, RateLimitWindow.window_start],
            set_={"count": RateLimitWindow.count + 1},
        )
        .returning(RateLimitWindow.count)
    )
    return int(session.execute(stmt).scalar_one())


def delete_windows_before(session: Session, before: int) -> int:
    """Delete windows that started before epoch second `before`; returns how many."""
    return session.execute(delete(RateLimitWindow).where(RateLimitWindow.window_start < before)).rowcount
