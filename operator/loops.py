"""Background loops that `callscope serve` runs (and the operator's Deployment in a cluster).

One implementation for both: `background_jobs(ctx)` names the periodic jobs with their intervals;
Runtime.start(background=True) runs each in an `every()` loop, and the Kopf operator runs the same
functions (retention and baseline as timers on Projects, see operator/kopf_handlers.py).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import structlog
from sqlalchemy import select

from callscope.catalog.tables import Analysis, Recording
from callscope.services.context import Context

log = structlog.get_logger()


# A blob younger than this may belong to an upload between its blob commit and its catalog insert.
ORPHAN_MIN_AGE = timedelta(hours=1)


def _known_keys(catalog) -> set[str]:
    with catalog.session() as session:
        audio = set(session.scalars(select(Recording.blob_key).where(Recording.blob_key.is_not(None))))
        return audio | set(session.scalars(select(Analysis.transcript_key)))


async def sweep_orphan_blobs(ctx: Context) -> int:
    """Delete audio and transcripts nothing points at (a crash mid-upload or mid-completion) and stale partial
    writes."""
    known = await ctx.catalog.run(_known_keys, ctx.catalog)
    removed = await ctx.blobs.sweep_orphans(known.__contains__, ORPHAN_MIN_AGE)
    if removed:
        log.info("orphan_blobs_removed", count=removed)
    return removed


async def run_dispatcher(ctx: Context, restart_delay: float = 10.0) -> None:
    """Start the analysis executor (Ray, or inline) and dispatch jobs until cancelled; the executor stops with it.

    Started as a task, so the API answers while Ray starts; an executor that fails to start is tried again.
    """
    from callscope.operator.dispatch import Dispatcher, build_executor

    while True:
        executor = build_executor(ctx.settings)
        try:
            await executor.start()
        except asyncio.CancelledError:
            await executor.stop()
            raise
        except Exception:
            log.exception("analysis_executor_start_failed", executor=ctx.settings.analysis_executor)
            await executor.stop()
            await asyncio.sleep(restart_delay)
            continue
        try:
            await Dispatcher(ctx, executor).run()
        finally:
            await executor.stop()


async def every(interval: float, job, name: str) -> None:
    """Run `job()` forever, `interval` seconds apart; a failure is logged and the loop goes on."""
    while True:
        try:
            await job()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background_job_failed", job=name)
        await asyncio.sleep(interval)


def background_jobs(ctx: Context) -> dict[str, tuple[float, object]]:
    """name -> (interval in seconds, coroutine function) of the periodic jobs over the whole store."""
    from callscope.operator.baseline import update_baselines
    from callscope.operator.retention import purge_expired

    settings = ctx.settings
    return {
        "blob-sweep": (ctx.settings.blob_sweep_interval_seconds, lambda: sweep_orphan_blobs(ctx)),
        "retention": (settings.retention_interval_seconds, lambda: purge_expired(ctx)),
        "baseline": (settings.baseline_interval_seconds, lambda: update_baselines(ctx)),
    }
