"""`every()`: the loop under every background job (the dispatcher's and the webhook outbox's ticks, the periodic
jobs of operator/loops.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

log = structlog.get_logger()


async def every(interval: float, job: Callable[[], Awaitable[object]], name: str) -> None:
    """Run `job()` forever, `interval` seconds apart; a failure is logged and the loop goes on."""
    while True:
        try:
            await job()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background_job_failed", job=name)
        await asyncio.sleep(interval)
