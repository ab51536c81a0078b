"""API-key usage: counted in memory on the request path, written to the catalog in periodic batches.

``UsageRecorder.record`` is a dict update (no I/O, no await); ``flush`` adds the buffered increments to
the stored counters, per (key, endpoint) and per (key, hour), with one upsert per row, all in one transaction.
Increments are relative (``requests = requests + n``) so any number of API processes can flush at the same time
without losing counts. A flush that fails (the catalog restarting) keeps its increments for the next one, so an
outage delays counts but loses none.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog
from pydantic import BaseModel, Field
from sqlalchemy import case, delete, select
from sqlalchemy.orm import Session

from callscope.catalog.db import Catalog, insert
from callscope.catalog.tables import ApiKeyUsage, ApiKeyUsageHourly
from callscope.errors import ServiceUnavailable

log = structlog.get_logger()


class KeyUsage(BaseModel):
    last_used_at: datetime | None = None
    total_requests: int = 0
    total_errors: int = 0
    error_rate: float = Field(0.0, ge=0.0, le=1.0)
    requests_by_endpoint: dict[str, int] = Field(default_factory=dict)


class HourlyUsage(BaseModel):
    hour: datetime  # its start, UTC
    requests: int
    errors: int

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0


@dataclass(slots=True)
class _Pending:
    account: str
    key_name: str
    requests: int
    errors: int
    last_used_at: datetime


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _hour(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


class UsageRecorder:
    """Buffers usage per (key_uid, endpoint, hour); one per process, shared by all requests of that process."""

    def __init__(self, catalog: Catalog):
        self._catalog = catalog
        self._pending: dict[tuple[str, str, datetime], _Pending] = {}
        self._flush_lock = asyncio.Lock()

    @property
    def pending(self) -> int:
        """Number of (key, endpoint, hour) rows waiting for the next flush."""
        return len(self._pending)

    def record(self, key_uid: str, account: str, key_name: str, endpoint: str, error: bool, at: datetime) -> None:
        """Count one request. O(1), in memory; never touches the database."""
        at = _utc(at)
        p = self._pending.get((key_uid, endpoint, _hour(at)))
        if p is None:
            self._pending[(key_uid, endpoint, _hour(at))] = _Pending(account, key_name, 1, int(error), at)
            return
        p.requests += 1
        p.errors += int(error)
        p.account, p.key_name = account, key_name
        if at > p.last_used_at:
            p.last_used_at = at

    def _restore(self, batch: dict[tuple[str, str, datetime], _Pending]) -> None:
        """Put an unwritten batch back, merged with whatever was recorded since it was taken."""
        for key, old in batch.items():
            new = self._pending.get(key)
            if new is None:
                self._pending[key] = old
            else:
                new.requests += old.requests
                new.errors += old.errors
                new.last_used_at = max(new.last_used_at, old.last_used_at)

    async def flush(self) -> int:
        """Write the buffered increments; returns the number of rows written.

        On failure the increments go back into the buffer (for the next flush) and the error is raised.
        """
        async with self._flush_lock:
            batch, self._pending = self._pending, {}
            if not batch:
                return 0
            try:
                write = asyncio.ensure_future(self._catalog.write(_write_increments, batch))
                # Shielded: a cancelled flush must not forget a write that is still running in its thread.
                await asyncio.shield(write)
            except asyncio.CancelledError:
                # Restore only if the write turns out to have failed: a committed batch restored
                # would be counted twice.
                write.add_done_callback(
                    lambda f: self._restore(batch) if f.cancelled() or f.exception() is not None else None
                )
                raise
            except BaseException:
                self._restore(batch)
                raise
            return len(batch)

    async def run(self, interval: float) -> None:
        """Flush every `interval` seconds until cancelled; flushes once more when cancelled."""
        try:
            while True:
                await asyncio.sleep(interval)
                try:
                    await self.flush()
                except ServiceUnavailable:
                    pass  # the catalog logs its outage once; the counts wait in the buffer for the next flush
                except Exception:  # keep the loop alive; the buffer is kept
                    log.warning("usage_flush_failed", retry="at the next interval", exc_info=True)
        except asyncio.CancelledError:
            try:
                await self.flush()
            except Exception:
                log.warning("usage_final_flush_failed", rows_lost=self.pending, exc_info=True)
            raise


def _write_increments(session: Session, batch: dict[tuple[str, str, datetime], _Pending]) -> None:
    t = ApiKeyUsage.__table__
    ins = insert(session, ApiKeyUsage)
    stmt = ins.on_conflict_do_update(
        index_elements=[t.c.key_uid, t.c.endpoint],
        set_={
            "account": ins.excluded.account,
            "key_name": ins.excluded.key_name,
            "requests": t.c.requests + ins.excluded.requests,
            "errors": t.c.errors + ins.excluded.errors,
            "last_used_at": case(
                (ins.excluded.last_used_at > t.c.last_used_at, ins.excluded.last_used_at),
                else_=t.c.last_used_at,
            ),
        },
    )
    h = ApiKeyUsageHourly.__table__
    ins_h = insert(session, ApiKeyUsageHourly)
    stmt_h = ins_h.on_conflict_do_update(
        index_elements=[h.c.key_uid, h.c.hour],
        set_={"requests": h.c.requests + ins_h.excluded.requests, "errors": h.c.errors + ins_h.excluded.errors},
    )
    # Sorted, one table after the other, so concurrent flushers lock rows in the same order (no deadlocks on
    # PostgreSQL).
    per_endpoint: dict[tuple[str, str], dict] = {}
    per_hour: dict[tuple[str, datetime], dict] = {}
    for (key_uid, endpoint, hour), p in sorted(batch.items()):
        row = per_endpoint.setdefault((key_uid, endpoint), {
            "key_uid": key_uid, "endpoint": endpoint, "account": p.account, "key_name": p.key_name,
            "requests": 0, "errors": 0, "last_used_at": p.last_used_at})
        row["requests"] += p.requests
        row["errors"] += p.errors
        row["last_used_at"] = max(row["last_used_at"], p.last_used_at)
        hourly = per_hour.setdefault((key_uid, hour), {"key_uid": key_uid, "hour": hour, "account": p.account,
                                                       "requests": 0, "errors": 0})
        hourly["requests"] += p.requests
        hourly["errors"] += p.errors
    for _, row in sorted(per_endpoint.items()):
        session.execute(stmt, row)
    for _, row in sorted(per_hour.items()):
        session.execute(stmt_h, row)


def read_usage(session: Session, key_uids: list[str]) -> dict[str, KeyUsage]:
    """Usage of each given key (keys never used get zeros), in one query."""
    result = {uid: KeyUsage() for uid in key_uids}
    if not key_uids:
        return result
    rows = session.execute(
        select(
            ApiKeyUsage.key_uid, ApiKeyUsage.endpoint, ApiKeyUsage.requests, ApiKeyUsage.errors,
            ApiKeyUsage.last_used_at,
        ).where(ApiKeyUsage.key_uid.in_(set(key_uids)))
    ).all()
    for key_uid, endpoint, requests, errors, last_used_at in rows:
        u = result[key_uid]
        u.total_requests += requests
        u.total_errors += errors
        u.requests_by_endpoint[endpoint] = u.requests_by_endpoint.get(endpoint, 0) + requests
        if u.last_used_at is None or last_used_at > u.last_used_at:
            u.last_used_at = last_used_at
    for u in result.values():
        u.error_rate = min(1.0, u.total_errors / u.total_requests) if u.total_requests else 0.0
    return result


def read_hourly(session: Session, key_uid: str, since: datetime) -> list[HourlyUsage]:
    """The key's hours with requests from `since` on, oldest first."""
    rows = session.execute(
        select(ApiKeyUsageHourly.hour, ApiKeyUsageHourly.requests, ApiKeyUsageHourly.errors)
        .where(ApiKeyUsageHourly.key_uid == key_uid, ApiKeyUsageHourly.hour >= since)
        .order_by(ApiKeyUsageHourly.hour)
    ).all()
    return [HourlyUsage(hour=hour, requests=requests, errors=errors) for hour, requests, errors in rows]


def delete_usage(session: Session, key_uid: str) -> int:
    """Forget the usage of a (deleted) key; returns the number of per-endpoint rows removed."""
    session.execute(delete(ApiKeyUsageHourly).where(ApiKeyUsageHourly.key_uid == key_uid))
    return session.execute(delete(ApiKeyUsage).where(ApiKeyUsage.key_uid == key_uid)).rowcount
