"""API-key usage: buffered in memory by UsageRecorder, flushed with atomic upserts, read back as KeyUsage."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest

from callscope.catalog.db import Catalog
from callscope.catalog.usage import UsageRecorder, delete_usage, read_hourly, read_usage

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def test_record_does_no_io(catalog: Catalog) -> None:
    recorder = UsageRecorder(catalog)
    with (
        mock.patch.object(catalog, "run", wraps=catalog.run) as run,
        mock.patch.object(catalog, "session", wraps=catalog.session) as session,
    ):
        catalog.dispose()  # and no pooled connection left to use
        for i in range(1000):
            recorder.record("k1", "acme", "ci", f"GET /v1/e{i % 3}", i % 10 == 0, T0)
    assert run.call_count == 0 and session.call_count == 0
    assert catalog.engine.pool.checkedout() == 0
    assert recorder.pending == 3


async def test_flush_aggregates_per_key_and_endpoint(catalog: Catalog) -> None:
    recorder = UsageRecorder(catalog)
    for i in range(5):
        recorder.record("k1", "acme", "ci", "GET /v1/projects", error=i == 0, at=T0 + timedelta(seconds=i))
    recorder.record("k1", "acme", "ci", "POST /v1/projects", error=True, at=T0)
    recorder.record("k2", "acme", "ops", "GET /v1/projects", error=False, at=T0)
    assert await recorder.flush() == 3
    assert recorder.pending == 0
    assert await recorder.flush() == 0

    usage = catalog.query(read_usage, ["k1", "k2"])
    assert usage["k1"].total_requests == 6
    assert usage["k1"].total_errors == 2
    assert usage["k1"].requests_by_endpoint == {"GET /v1/projects": 5, "POST /v1/projects": 1}
    assert usage["k1"].last_used_at == T0 + timedelta(seconds=4)
    assert usage["k2"].total_requests == 1


async def test_flushes_add_up_and_keep_the_latest_time(catalog: Catalog) -> None:
    recorder = UsageRecorder(catalog)
    recorder.record("k1", "acme", "ci", "GET /v1/x", False, T0 + timedelta(hours=1))
    await recorder.flush()
    recorder.record("k1", "acme", "ci", "GET /v1/x", True, T0)  # older timestamp arrives later
    await recorder.flush()
    u = catalog.query(read_usage, ["k1"])["k1"]
    assert (u.total_requests, u.total_errors) == (2, 1)
    assert u.last_used_at == T0 + timedelta(hours=1)


async def test_concurrent_flushes_of_two_recorders_lose_nothing(catalog: Catalog) -> None:
    recorders = [UsageRecorder(catalog), UsageRecorder(catalog)]  # as in two API processes
    rounds, per_round = 10, 20
    for _ in range(rounds):
        for r in recorders:
            for i in range(per_round):
                r.record("k1", "acme", "ci", f"GET /v1/e{i % 4}", i % 5 == 0, T0)
        await asyncio.gather(*(r.flush() for r in recorders))
    u = catalog.query(read_usage, ["k1"])["k1"]
    assert u.total_requests == 2 * rounds * per_round
    assert u.total_errors == 2 * rounds * (per_round // 5)
    assert sum(u.requests_by_endpoint.values()) == u.total_requests


def test_read_usage_computes_error_rate_and_zeros_for_unused_keys(catalog: Catalog) -> None:
    recorder = UsageRecorder(catalog)
    for i in range(4):
        recorder.record("k1", "acme", "ci", "GET /v1/a" if i < 3 else "GET /v1/b", i == 0, T0)
    asyncio.run(recorder.flush())
    usage = catalog.query(read_usage, ["k1", "never-used"])
    assert usage["k1"].error_rate == pytest.approx(0.25)
    assert usage["k1"].requests_by_endpoint == {"GET /v1/a": 3, "GET /v1/b": 1}
    unused = usage["never-used"]
    assert (unused.total_requests, unused.error_rate, unused.last_used_at, unused.requests_by_endpoint) == (
        0, 0.0, None, {},
    )


async def test_failed_flush_keeps_the_buffer(catalog: Catalog) -> None:
    recorder = UsageRecorder(catalog)
    recorder.record("k1", "acme", "ci", "GET /v1/x", False, T0)
    with mock.patch.object(catalog, "run", side_effect=RuntimeError("database down")), pytest.raises(RuntimeError):
        await recorder.flush()
    assert recorder.pending == 1
    recorder.record("k1", "acme", "ci", "GET /v1/x", True, T0)  # recorded while the database was down
    assert await recorder.flush() == 1
    u = catalog.query(read_usage, ["k1"])["k1"]
    assert (u.total_requests, u.total_errors) == (2, 1)


async def test_run_loop_flushes_periodically_and_on_cancel(catalog: Catalog) -> None:
    recorder = UsageRecorder(catalog)
    task = asyncio.create_task(recorder.run(0.01))
    recorder.record("k1", "acme", "ci", "GET /v1/x", False, T0)
    for _ in range(200):
        await asyncio.sleep(0.01)
        if recorder.pending == 0:
            break
    assert recorder.pending == 0
    recorder.record("k1", "acme", "ci", "GET /v1/x", False, T0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert catalog.query(read_usage, ["k1"])["k1"].total_requests == 2


async def test_delete_usage(catalog: Catalog) -> None:
    recorder = UsageRecorder(catalog)
    recorder.record("k1", "acme", "ci", "GET /v1/x", False, T0)
    recorder.record("k2", "acme", "ci", "GET /v1/x", False, T0)
    await recorder.flush()
    catalog.change(delete_usage, "k1")
    usage = catalog.query(read_usage, ["k1", "k2"])
    assert usage["k1"].total_requests == 0 and usage["k2"].total_requests == 1
    assert catalog.query(read_hourly, "k1", T0) == [] and len(catalog.query(read_hourly, "k2", T0)) == 1


async def test_usage_is_counted_by_the_hour_too(catalog: Catalog) -> None:
    recorder = UsageRecorder(catalog)
    for minutes, endpoint, error in [(0, "GET /v1/x", False), (59, "GET /v1/y", True), (61, "GET /v1/x", True),
                                     (185, "GET /v1/x", False)]:
        recorder.record("k1", "acme", "ci", endpoint, error, T0 + timedelta(minutes=minutes))
    recorder.record("k2", "acme", "ops", "GET /v1/x", True, T0)
    await recorder.flush()
    recorder.record("k1", "acme", "ci", "GET /v1/x", False, T0 + timedelta(minutes=70))  # a later flush adds up
    await recorder.flush()
    hours = catalog.query(read_hourly, "k1", T0 + timedelta(minutes=30))
    assert [(h.hour, h.requests, h.errors) for h in hours] == [
        (T0 + timedelta(hours=1), 2, 1), (T0 + timedelta(hours=3), 1, 0)]  # the hour before `since` left out
    assert hours[0].error_rate == 0.5
    first = catalog.query(read_hourly, "k1", T0)[0]
    assert (first.hour, first.requests, first.errors) == (T0, 2, 1)
    assert catalog.query(read_usage, ["k1"])["k1"].total_requests == 5
