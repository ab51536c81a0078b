"""Rate limiters: fixed windows shared by all instances ("processes"), on SQLite, PostgreSQL and Redis."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from callscope.catalog.db import Catalog
from callscope.config import Settings
from callscope.ratelimit import DatabaseRateLimiter, Decision, RateLimiter, RedisRateLimiter, build_rate_limiter


class FakeClock:
    def __init__(self, now: float = 1_700_000_040.0):  # 1_700_000_040 is a multiple of 60
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("redis", marks=pytest.mark.redis),
    ]
)
async def make_limiter(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[Callable[[], RateLimiter]]:
    """Factory of limiters that share one backend, each with its own connections (as separate processes would)."""
    made: list[RateLimiter] = []
    catalogs: list[Catalog] = []
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")

        def factory() -> RateLimiter:
            made.append(RedisRateLimiter(url, clock=clock))
            return made[-1]
    else:
        if request.param == "postgres":
            url = request.getfixturevalue("emptied_postgres_url")
        else:
            url = f"sqlite:///{tmp_path / 'catalog.db'}"
        setup = Catalog(url)
        setup.migrate()
        setup.dispose()

        def factory() -> RateLimiter:
            catalogs.append(Catalog(url))
            made.append(DatabaseRateLimiter(catalogs[-1], clock=clock))
            return made[-1]

    yield factory
    for limiter in made:
        await limiter.close()
    for cat in catalogs:
        cat.dispose()


@pytest.fixture
def bucket() -> str:
    return f"key:{uuid.uuid4().hex}"


async def test_allows_up_to_the_limit_then_denies(make_limiter, bucket: str, clock: FakeClock) -> None:
    limiter = make_limiter()
    decisions = [await limiter.hit(bucket, 3) for _ in range(3)]
    assert [d.allowed for d in decisions] == [True, True, True]
    assert [d.remaining for d in decisions] == [2, 1, 0]
    assert all(d.limit == 3 and d.retry_after == 0 for d in decisions)

    clock.now += 20
    denied = await limiter.hit(bucket, 3)
    assert denied == Decision(allowed=False, limit=3, remaining=0, reset_at=1_700_000_100, retry_after=40)


async def test_retry_after_is_at_least_one_second(make_limiter, bucket: str, clock: FakeClock) -> None:
    limiter = make_limiter()
    await limiter.hit(bucket, 1)
    clock.now += 59.9  # 0.1 s left in the window
    denied = await limiter.hit(bucket, 1)
    assert not denied.allowed and denied.retry_after == 1


async def test_a_new_window_resets_the_count(make_limiter, bucket: str, clock: FakeClock) -> None:
    limiter = make_limiter()
    for _ in range(3):
        await limiter.hit(bucket, 2)
    clock.now += 60
    d = await limiter.hit(bucket, 2)
    assert d.allowed and d.remaining == 1 and d.reset_at == 1_700_000_160


async def test_buckets_are_independent(make_limiter, bucket: str) -> None:
    limiter = make_limiter()
    assert (await limiter.hit(bucket, 1)).allowed
    assert not (await limiter.hit(bucket, 1)).allowed
    assert (await limiter.hit(bucket + ":other", 1)).allowed


async def test_two_instances_share_one_count(make_limiter, bucket: str) -> None:
    a, b = make_limiter(), make_limiter()  # as in two API processes
    results = await asyncio.gather(*(lim.hit(bucket, 10) for lim in [a, b] * 10))
    assert sum(d.allowed for d in results) == 10
    assert sorted(d.remaining for d in results if d.allowed) == list(range(10))
    assert not (await a.hit(bucket, 10)).allowed
    assert not (await b.hit(bucket, 10)).allowed


async def test_database_limiter_deletes_old_windows(catalog: Catalog, clock: FakeClock) -> None:
    limiter = DatabaseRateLimiter(catalog, clock=clock, cleanup_interval=60, retention_seconds=120)
    await limiter.hit("old", 5)
    clock.now += 600
    await limiter.hit("new", 5)  # past the cleanup interval: starts the cleanup
    await limiter.close()  # waits for it
    from sqlalchemy import select

    from callscope.catalog.tables import RateLimitWindow

    with catalog.session() as s:
        assert s.scalars(select(RateLimitWindow.bucket)).all() == ["new"]


def test_build_rate_limiter_chooses_by_settings(tmp_path: Path) -> None:
    cat = Catalog(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        assert isinstance(build_rate_limiter(Settings(rate_limit_backend="database"), cat), DatabaseRateLimiter)
        redis_limiter = build_rate_limiter(Settings(rate_limit_backend="redis"), cat)
        assert isinstance(redis_limiter, RedisRateLimiter)
    finally:
        cat.dispose()
