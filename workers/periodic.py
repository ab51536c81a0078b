"""`every()`: the loop under every background job (the dispatcher's and the webhook outbox's ticks, the periodic
jobs of workers/loops.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from callscope.errors import ServiceUnavailable

log = structlog.get_logger()


async def every(interval: float, job: Callable[[], Awaitable[object]], name: str) -> None:
    """Run `job()` forever, `interval` seconds apart; a failure is logged and the loop goes on.

    An outage (ServiceUnavailable: the catalog restarting, the Kubernetes API unreachable) is logged once, without a
    traceback, however many ticks it lasts; the job simply runs again at the next tick."""
    unavailable = False
    while True:
        try:
            await job()
            if unavailable:
                log.info("background_job_resumed", job=name)
            unavailable = False
        except asyncio.CancelledError:
            raise
        except ServiceUnavailable as exc:
            if not unavailable:
                log.warning("background_job_waiting", job=name, error=exc.message)
            unavailable = True
        except Exception:
            log.exception("background_job_failed", job=name)
        await asyncio.sleep(interval)
