"""The background loops of both modes, started by one function: `start_loops(ctx)`, which Runtime.start
(`callscope serve`) and the Kopf controller's startup (operator/main.py) call.

Periodic jobs run in `every()` loops: the orphan-blob sweep, the tracker pass (callscope/services/trackers.py), the
scorecards' rescoring pass (workers/scorecards.py), and
in `callscope serve` retention and the quality baseline over every project (the controller runs those two as timers
on each Project, with its Events). The analysis dispatcher and the webhook outbox delivery run when their settings
enable them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

import structlog

from callscope.catalog import recordings as recording_rows
from callscope.services.context import Context
from callscope.services.trackers import match_projects
from callscope.workers.baseline import update_baselines
from callscope.workers.dispatch import run_dispatcher
from callscope.workers.periodic import every
from callscope.workers.retention import purge_expired
from callscope.workers.scorecards import rescore_changed
from callscope.workers.webhooks import run_webhook_delivery

log = structlog.get_logger()


# A blob younger than this may belong to an upload between its blob commit and its catalog insert.
ORPHAN_MIN_AGE = timedelta(hours=1)


async def sweep_orphan_blobs(ctx: Context) -> int:
    """Delete audio and transcripts nothing points at (a crash mid-upload or mid-completion) and stale partial
    writes."""
    known = await ctx.catalog.read(recording_rows.blob_keys)
    removed = await ctx.blobs.sweep_orphans(known.__contains__, ORPHAN_MIN_AGE)
    if removed:
        log.info("orphan_blobs_removed", count=removed)
    return removed


def start_loops(ctx: Context, *, project_jobs: bool = True) -> list[asyncio.Task]:
    """Start the background loops as tasks (`stop_loops` ends them). `project_jobs`: retention and the quality
    baseline over every project; False where Kopf runs them as timers on each Project."""
    settings = ctx.settings
    periodic: dict[str, tuple[float, Callable[[], Awaitable[object]]]] = {
        "blob-sweep": (settings.blob_sweep_interval_seconds, lambda: sweep_orphan_blobs(ctx)),
        "trackers": (settings.tracker_interval_seconds, lambda: match_projects(ctx)),
        "scorecards": (settings.scorecard_rescore_interval_seconds, lambda: rescore_changed(ctx)),
    }
    if project_jobs:
        periodic["retention"] = (settings.retention_interval_seconds, lambda: purge_expired(ctx))
        periodic["baseline"] = (settings.baseline_interval_seconds, lambda: update_baselines(ctx))
    tasks = [asyncio.create_task(every(interval, job, name), name=name) for name, (interval, job) in periodic.items()]
    if settings.dispatcher_enabled:  # claims analysis jobs and runs them on Ray (or inline)
        tasks.append(asyncio.create_task(run_dispatcher(ctx), name="dispatcher"))
    if settings.webhook_delivery_enabled:  # sends the recording.analyzed outbox (reads the signing Secrets)
        tasks.append(asyncio.create_task(run_webhook_delivery(ctx), name="webhooks"))
    return tasks


async def stop_loops(tasks: list[asyncio.Task]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
