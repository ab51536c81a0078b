"""Per-key rate limiting shared by all API processes: fixed windows counted in the catalog or in Redis.

A bucket (e.g. ``"key:<uid>"``) may make `limit` requests per window of `window_seconds`; windows
are aligned to the epoch (``window_start = now - now % window_seconds``), so every process computes
the same window from its own clock. Each hit increments the window's shared counter atomically and
reads the new count back in the same round trip.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import structlog

from callscope.catalog import rate_limits

if TYPE_CHECKING:
    from callscope.catalog.db import Catalog
    from callscope.config import Settings

log = structlog.get_logger()

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_at: int  # epoch seconds at which the current window ends
    retry_after: int  # seconds until a denied request may be retried (>= 1 when denied, 0 when allowed)


def _decide(count: int, limit: int, window_start: int, window_seconds: int, now: float) -> Decision:
    reset_at = window_start + window_seconds
    allowed = count <= limit
    return Decision(
        allowed=allowed,
        limit=limit,
        remaining=max(0, limit - count),
        reset_at=reset_at,
        retry_after=0 if allowed else max(1, math.ceil(reset_at - now)),
    )


def _window_start(now: float, window_seconds: int) -> int:
    if window_seconds < 1:
        raise ValueError("window_seconds must be >= 1")
    return int(now) - int(now) % window_seconds


class RateLimiter(Protocol):
    async def hit(self, bucket: str, limit: int, window_seconds: int = 60) -> Decision:
        """Count one request against `bucket` and say whether it is within `limit` per window."""

    async def close(self) -> None:
        """Release connections."""


class DatabaseRateLimiter:
    """Fixed-window counters in the catalog's ``rate_limit_windows`` table.

    Each hit is one ``INSERT ... ON CONFLICT DO UPDATE SET count = count + 1 RETURNING count``, atomic on
    SQLite and PostgreSQL, so concurrent processes share one exact count. Every `cleanup_interval`
    seconds, one hit also starts a background delete of windows older than `retention_seconds`
    (at least the longest window this limiter has seen).
    """

    def __init__(
        self,
        catalog: Catalog,
        *,
        clock: Clock = time.time,
        cleanup_interval: float = 60.0,
        retention_seconds: int = 3600,
    ):
        self._catalog = catalog
        self._clock = clock
        self._cleanup_interval = cleanup_interval
        self._retention = retention_seconds
        self._next_cleanup = clock() + cleanup_interval
        self._cleanups: set[asyncio.Task[None]] = set()

    async def hit(self, bucket: str, limit: int, window_seconds: int = 60) -> Decision:
        now = self._clock()
        start = _window_start(now, window_seconds)
        count = await self._catalog.write(rate_limits.increment, bucket, start)
        self._retention = max(self._retention, 2 * window_seconds)
        if now >= self._next_cleanup:
            self._next_cleanup = now + self._cleanup_interval
            task = asyncio.create_task(self._cleanup(int(now) - self._retention))
            self._cleanups.add(task)
            task.add_done_callback(self._cleanups.discard)
        return _decide(count, limit, start, window_seconds, now)

    async def _cleanup(self, before: int) -> None:
        try:
            n = await self._catalog.write(rate_limits.delete_windows_before, before)
            log.debug("rate_limit_windows_deleted", count=n)
        except Exception:  # cleanup is best effort; the next one catches up
            log.warning("rate_limit_cleanup_failed", exc_info=True)

    async def close(self) -> None:
        if self._cleanups:
            await asyncio.gather(*self._cleanups, return_exceptions=True)


class RedisRateLimiter:
    """Fixed-window counters in Redis: ``INCR`` and ``EXPIRE`` in one MULTI/EXEC transaction."""

    def __init__(self, url: str, *, prefix: str = "callscope:rl:", clock: Clock = time.time):
        import redis.asyncio as redis  # only with a Redis URL configured (start-up time of the catalog default)

        self._redis = redis.Redis.from_url(url)
        self._prefix = prefix
        self._clock = clock

    async def hit(self, bucket: str, limit: int, window_seconds: int = 60) -> Decision:
        now = self._clock()
        start = _window_start(now, window_seconds)
        key = f"{self._prefix}{bucket}:{window_seconds}:{start}"
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.incr(key)
            # A little longer than the window, so a slightly slow clock elsewhere still finds the key.
            pipe.expire(key, window_seconds + 60)
            count, _ = await pipe.execute()
        return _decide(int(count), limit, start, window_seconds, now)

    async def ping(self) -> bool:
        try:
            return bool(await self._redis.ping())
        except Exception:  # noqa: BLE001
            return False

    async def close(self) -> None:
        await self._redis.aclose()


def build_rate_limiter(settings: Settings, catalog: Catalog) -> RateLimiter:
    """The limiter chosen by ``settings.rate_limit_backend`` ("database" or "redis")."""
    if settings.rate_limit_backend == "redis":
        return RedisRateLimiter(settings.redis_url)
    if settings.rate_limit_backend == "database":
        return DatabaseRateLimiter(catalog)
    raise ValueError(f"unknown rate_limit_backend: {settings.rate_limit_backend!r}")
