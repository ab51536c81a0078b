"""Delivering the webhook outbox (callscope/catalog/outbox.py): a loop in `callscope serve` and in the Kopf operator.

Per tick it leases as many due events as it has free slots and POSTs each, signed per Standard Webhooks with the
project's signing secrets (read at delivery time: the current one, and one rotated out while its overlap
lasts). 2xx is delivered; 408, 429, 5xx, timeouts and connection errors
are retried with backoff (a longer ``Retry-After`` wins); 410 disables the endpoint; anything else fails at once.
Which endpoints may be sent to, and the signed POST itself: callscope/webhook_endpoints.py, the rule that saving an
endpoint applies too. Whatever else goes wrong in an attempt is recorded as its outcome, never left to escape the
task. Where tracing is on, each attempt is a client span in the trace of what wrote the event (the analysis that
completed a call), and its context goes out in the request's `traceparent` (callscope/tracing.py). Details:
docs/operations.md.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from datetime import datetime, timedelta

import httpx
import structlog

from callscope import signing_secrets, tracing, webhook_endpoints
from callscope.catalog import outbox
from callscope.catalog.outbox import ClaimedEvent, Outcome
from callscope.metrics import DELIVERIES, DELIVERY_SECONDS
from callscope.resources import Project
from callscope.secret_store import SecretStore
from callscope.services import scope
from callscope.services.context import Context
from callscope.store.factory import build_secret_store
from callscope.workers.dispatch import owner_id
from callscope.workers.periodic import every

log = structlog.get_logger()

MAX_RETRY_AFTER = timedelta(days=1)


def retry_after(value: str | None, now: datetime) -> timedelta | None:
    """A Retry-After header (delay in seconds, or an HTTP date) as a delay from ``now``."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(timedelta(seconds=int(value)), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return min(max(when - now, timedelta(0)), MAX_RETRY_AFTER) if when.tzinfo else None


class WebhookDeliverer:
    def __init__(self, ctx: Context, secrets: SecretStore | None = None, owner: str | None = None) -> None:
        self.ctx = ctx
        self.settings = ctx.settings
        self.secrets = secrets or build_secret_store(ctx.settings)
        self.owner = owner or owner_id()
        self.running: set[asyncio.Task] = set()
        self.client = httpx.AsyncClient(follow_redirects=False, timeout=self.settings.webhook_timeout_seconds,
                                        event_hooks={"request": [tracing.inject_httpx]})

    @property
    def lease_seconds(self) -> float:
        return self.settings.webhook_timeout_seconds * 3 + 30  # an attempt never outlives its lease

    async def run(self) -> None:
        """Tick until cancelled (a failing tick is logged and the loop goes on), then close."""
        log.info("webhook_delivery_started", owner=self.owner)
        try:
            await every(self.settings.webhook_poll_seconds, self.tick, "webhook-delivery")
        finally:
            await self.close()

    async def close(self) -> None:
        for task in self.running:
            task.cancel()
        await asyncio.gather(*self.running, return_exceptions=True)
        await self.client.aclose()
        await self.secrets.aclose()

    async def tick(self) -> list[ClaimedEvent]:
        catalog = self.ctx.catalog
        free = self.settings.webhook_concurrency - len(self.running)
        claimed = await catalog.write(outbox.claim, free, self.owner, self.lease_seconds, self.ctx.clock(),
                                    self.settings.webhook_max_attempts)
        for event in claimed:
            task = asyncio.create_task(tracing.traced(
                self.deliver(event), "webhook.deliver", "client", parent=event.trace_parent,
                attributes={"callscope.webhook.event_id": event.id, "callscope.webhook.message_id": event.message_id,
                            "callscope.webhook.attempt": event.attempt, "http.request.method": "POST"}),
                name=f"webhook-{event.id}")
            self.running.add(task)
            task.add_done_callback(self._finished)
        return claimed

    def _finished(self, task: asyncio.Task) -> None:
        self.running.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:  # deliver() lets nothing out; in case
            log.error("webhook_task_failed", task=task.get_name(), error=f"{type(exc).__name__}: {exc}")

    async def deliver(self, event: ClaimedEvent) -> Outcome:
        """Make one attempt at ``event`` and record its outcome. Whatever goes wrong in the attempt is its outcome
        (an error of ours is retried like a connection error, its reason kept with the attempt), so the event never
        waits in ``delivering`` for its lease to run out."""
        started, clock = self.ctx.clock(), time.monotonic()
        try:
            outcome = await self.attempt(event)
        except Exception as exc:  # recorded as the attempt's reason, never an escaped task error
            log.exception("webhook_attempt_error", event_id=event.id)
            outcome = self._retry(event, started, int((time.monotonic() - clock) * 1000),
                                  f"error in delivery: {type(exc).__name__}: {exc}"[:1000])
        DELIVERIES.labels(outcome.state).inc()
        DELIVERY_SECONDS.observe(outcome.duration_ms / 1000)
        tracing.annotate({"callscope.webhook.outcome": outcome.state, "http.response.status_code": outcome.status_code},
                         error=outcome.error if outcome.state != "delivered" else None)
        try:
            recorded = await self.ctx.catalog.write(outbox.record, event, outcome, self.ctx.clock())
        except Exception as exc:  # noqa: BLE001 - the catalog is gone: the lease runs out, the event is taken again
            log.error("webhook_attempt_unrecorded", event_id=event.id, state=outcome.state, error=outcome.error,
                      problem=f"{type(exc).__name__}: {exc}")
            return outcome
        log.info("webhook_attempt", event_id=event.id, message_id=event.message_id, attempt=event.attempt,
                 state=outcome.state, status_code=outcome.status_code, error=outcome.error, recorded=recorded)
        return outcome

    def _retry(self, event: ClaimedEvent, started: datetime, elapsed_ms: int, error: str,
               status_code: int | None = None, excerpt: str | None = None,
               asked: timedelta | None = None) -> Outcome:
        if event.attempt >= self.settings.webhook_max_attempts:
            return Outcome("failed", started, elapsed_ms, status_code, f"{error} (after {event.attempt} attempts)",
                           excerpt)
        s = self.settings
        backoff = min(s.webhook_retry_max_seconds, s.webhook_retry_base_seconds * 2 ** (event.attempt - 1))
        delay = timedelta(seconds=backoff * (0.5 + random.random()))
        if asked is not None and asked > delay:
            delay = asked
        return Outcome("pending", started, elapsed_ms, status_code, error, excerpt, self.ctx.clock() + delay)

    async def _secrets(self, event: ClaimedEvent) -> list[str]:
        project = scope.by_id(self.ctx, Project, event.account, event.project_id)
        webhook = project.spec.webhook if project is not None else None
        ref = webhook.signing_secret_ref if webhook is not None else None
        if ref is None:
            return []
        try:
            return await signing_secrets.signing(self.secrets, event.account, ref, self.ctx.clock())
        except signing_secrets.SecretMissing as exc:
            raise webhook_endpoints.Refused(str(exc), retry=True) from None

    async def attempt(self, event: ClaimedEvent) -> Outcome:
        started, clock = self.ctx.clock(), time.monotonic()

        def elapsed() -> int:
            return int((time.monotonic() - clock) * 1000)

        if (reason := await self.ctx.catalog.read(outbox.endpoint_disabled, event.account,
                                                 event.project_id, event.url)) is not None:
            return Outcome("disabled", started, 0, error=f"endpoint disabled: {reason}")
        body = event.payload.encode()
        try:
            secrets = await self._secrets(event)
            response = await webhook_endpoints.post(self.client, event.url, body, secrets, event.message_id,
                                                    self.settings)
        except webhook_endpoints.Refused as exc:
            if exc.retry:
                return self._retry(event, started, elapsed(), str(exc))
            return Outcome("failed", started, elapsed(), error=str(exc))
        except httpx.TimeoutException:
            return self._retry(event, started, elapsed(), f"timed out after {self.settings.webhook_timeout_seconds} s")
        except httpx.HTTPError as exc:
            return self._retry(event, started, elapsed(), f"{type(exc).__name__}: {exc}"[:1000])
        code, excerpt = response.status_code, response.text[:webhook_endpoints.EXCERPT]
        if 200 <= code < 300:
            return Outcome("delivered", started, elapsed(), code, None, excerpt)
        if code == 410:
            return Outcome("disabled", started, elapsed(), code, "the endpoint answered 410 Gone: disabled", excerpt)
        if code in (408, 429) or code >= 500:
            return self._retry(event, started, elapsed(), f"HTTP {code}", code, excerpt,
                               retry_after(response.headers.get("retry-after"), self.ctx.clock()))
        why = "redirects are not followed" if 300 <= code < 400 else "the endpoint refused the event"
        return Outcome("failed", started, elapsed(), code, f"HTTP {code}: {why}", excerpt)


async def run_webhook_delivery(ctx: Context) -> None:
    await WebhookDeliverer(ctx).run()
