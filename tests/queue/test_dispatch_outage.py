"""A job in hand outlives a short catalog outage: while the catalog answers ServiceUnavailable the analysis goes on,
and its heartbeats and progress are written once the catalog is back (the lease is not lost, the work not redone)."""

from __future__ import annotations

import asyncio

import pytest

from callscope.catalog import jobs
from callscope.config import Settings
from callscope.errors import ServiceUnavailable
from callscope.runtime import Runtime
from callscope.workers.dispatch import Dispatcher
from tests.queue.rows import add_recording, job_of, recording

DONE = object()


class SteadyExecutor:
    """Reports progress every 0.2 s for `seconds`, then returns DONE."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.lost = asyncio.Event()

    async def analyze(self, work, progress, transcribed=None):
        steps = int(self.seconds / 0.2)
        for step in range(steps):
            progress("transcribing", step / steps)
            await asyncio.sleep(0.2)
        return DONE


@pytest.fixture
async def ctx(tmp_path):
    runtime = Runtime(Settings(data_dir=tmp_path / "data", log_level="WARNING", job_lease_seconds=6))
    await runtime.start(background=False)
    yield runtime.ctx
    await runtime.stop()


async def test_heartbeats_and_progress_wait_out_a_catalog_outage(ctx, monkeypatch) -> None:
    rid = add_recording(ctx.catalog, now=ctx.clock())
    dispatcher = Dispatcher(ctx, SteadyExecutor(seconds=4))
    claimed_at = ctx.clock()
    [job] = await ctx.catalog.write(jobs.claim, 1, dispatcher.owner, 6, claimed_at, 3)

    write, away, refused = ctx.catalog.write, asyncio.Event(), []

    async def write_unless_away(fn, *args, **kwargs):
        if away.is_set():
            refused.append(fn.__name__)
            raise ServiceUnavailable("away", 5)
        return await write(fn, *args, **kwargs)

    monkeypatch.setattr(ctx.catalog, "write", write_unless_away)

    async def outage() -> None:  # 0.5 s to 2.5 s: the progress of the round at 1 s and the beat due at 2 s refused
        await asyncio.sleep(0.5)
        away.set()
        await asyncio.sleep(2)
        away.clear()

    result, _ = await asyncio.gather(dispatcher._with_lease(job, recording(ctx.catalog, rid), None), outage())

    assert result is DONE
    assert refused == ["report_progress", "heartbeat"]
    row = job_of(ctx.catalog, rid)
    assert row.lease_owner == dispatcher.owner and row.heartbeat_at > claimed_at  # beaten once the catalog was back
    assert recording(ctx.catalog, rid).progress >= 60  # progress written after the outage too
