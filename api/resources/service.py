"""Unauthenticated service endpoints: health, Prometheus metrics and the OpenAPI document."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import falcon
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from callscope.api.routing import operation
from callscope.metrics_catalog import exposition
from callscope.services.context import Context


class Health:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @operation("Ready when the object cache is loaded and the catalog answers", None)
    async def on_get(self, req, resp):
        checks = {"store": bool(self.ctx.store.ready), "catalog": await self.ctx.catalog.run(self.ctx.catalog.ping)}
        resp.status = 200 if all(checks.values()) else 503
        resp.media = {"status": "ok" if resp.status == 200 else "unavailable", "checks": checks}


class Metrics:
    def __init__(self, ctx: Context):
        self.registry = exposition(ctx.catalog, ctx.clock)

    @operation("Prometheus metrics", None)
    async def on_get(self, req, resp):
        resp.content_type = CONTENT_TYPE_LATEST
        # in a thread: the catalog's figures are read with blocking queries
        resp.data = await asyncio.to_thread(generate_latest, self.registry)


class OpenApiDocument:
    """Built on the first request, not with the app: most processes never serve it, and building it takes as long
    as the rest of the app's start."""

    def __init__(self, build: Callable[[], dict]):
        self._build = build
        self._document: dict | None = None

    @operation("This document", None)
    async def on_get(self, req, resp):
        if self._document is None:
            self._document = self._build()
        resp.media = self._document
        resp.content_type = falcon.MEDIA_JSON
