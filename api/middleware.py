"""Per-request work around every responder: authentication and permission (from the operation table),
rate limiting, usage tracking (buffered, no database write on the hot path), request metrics and, where tracing is
on, the request's server span (callscope/tracing.py; its parent: the request's `traceparent`)."""

from __future__ import annotations

import time

import structlog

from callscope import tracing
from callscope.api.routing import Router
from callscope.catalog.usage import UsageRecorder
from callscope.errors import Forbidden, RateLimited
from callscope.log_scrubbing import redact_path
from callscope.metrics import LATENCY, REQUESTS
from callscope.ratelimit import RateLimiter
from callscope.services import keys
from callscope.services.context import Context

log = structlog.get_logger()

PERMISSION_MESSAGES = {
    "read": "Read permission required",
    "write": "Write permission required",
    "delete": "Delete permission required",
}


class ApiMiddleware:
    def __init__(self, ctx: Context, router: Router, usage: UsageRecorder, limiter: RateLimiter | None):
        self.ctx = ctx
        self.router = router
        self.usage = usage
        self.limiter = limiter

    async def process_request(self, req, resp):
        req.context.started = time.perf_counter()
        req.context.principal = None
        req.context.rate = None
        req.context.span = tracing.start_request(req)

    async def process_resource(self, req, resp, resource, params):
        op = self.router.find(req.method, req.uri_template)
        if op is None or op.permission is None:
            return
        principal = await keys.authenticate(self.ctx, req.get_header("Authorization"))
        req.context.principal = principal
        if op.permission not in principal.permissions:
            raise Forbidden(op.forbidden_message or PERMISSION_MESSAGES[op.permission])
        await self._rate_limit(req, principal)

    async def _rate_limit(self, req, principal) -> None:
        settings = self.ctx.settings
        limit = principal.rate_limit_per_minute or settings.rate_limit_default_per_minute
        if not settings.rate_limit_enabled or self.limiter is None or limit is None:
            return
        decision = await self.limiter.hit(f"key:{principal.key_uid}", limit, 60)
        req.context.rate = decision
        if not decision.allowed:
            raise RateLimited(decision.retry_after, decision.limit, decision.reset_at)

    async def process_response(self, req, resp, resource, req_succeeded):
        route = req.uri_template or "unmatched"
        status = resp.status_code
        if (decision := req.context.rate) is not None:
            resp.set_header("X-RateLimit-Limit", str(decision.limit))
            resp.set_header("X-RateLimit-Remaining", str(decision.remaining))
            resp.set_header("X-RateLimit-Reset", str(decision.reset_at))
        principal = req.context.principal
        if principal is not None:
            self.usage.record(principal.key_uid, principal.account, principal.key_name, f"{req.method} {route}",
                              status >= 400, self.ctx.clock())
        elapsed = time.perf_counter() - req.context.started
        REQUESTS.labels(req.method, route, str(status)).inc()
        LATENCY.labels(req.method, route).observe(elapsed)
        log.info("request", method=req.method, path=redact_path(req.path), route=route, status=status,
                 ms=round(elapsed * 1000, 2), account=principal.account if principal else None,
                 key=principal.key_name if principal else None)
        tracing.end_request(req.context.span, req.method, req.uri_template, status,
                            {"callscope.account": principal.account if principal else None})
