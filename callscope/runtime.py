"""The composition root: builds the stores, catalog and provider from Settings and runs the background
loops. `callscope serve` runs all of it; the other CLI commands open it without the loops."""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from callscope.blobs.factory import build_blob_store
from callscope.blobs.signing import signing_secret
from callscope.catalog.db import Catalog
from callscope.catalog.usage import UsageRecorder
from callscope.config import Settings
from callscope.errors import ServiceUnavailable
from callscope.mail import build_mail_queue
from callscope.operator.embedded import EmbeddedOperator
from callscope.ratelimit import RateLimiter, build_rate_limiter
from callscope.search.embedding import SearchEmbedder, TextEmbedder
from callscope.services import indexes
from callscope.services.context import Context
from callscope.store.cache import CachedStore
from callscope.store.factory import build_store_backend
from callscope.telephony.factory import build_provider

log = structlog.get_logger()


def _text_embedder(settings: Settings) -> TextEmbedder:
    # imported when search first needs it: the model's code brings safetensors, tokenizers and scipy
    from callscope.analysis.models.text_embedding import text_embedder_from_settings

    return text_embedder_from_settings(settings)


class Runtime:
    def __init__(self, settings: Settings):
        settings.ensure_data_dir()
        self.settings = settings
        self.backend = build_store_backend(settings)  # CALLSCOPE_STORE: sqlite, or kubernetes in a cluster
        self.store = CachedStore(self.backend)
        indexes.register(self.store)
        self.catalog = Catalog(settings.catalog_url, retry_after=settings.catalog_retry_after_seconds)
        self.mail = build_mail_queue(settings)
        self.ctx = Context(settings=settings, store=self.store, catalog=self.catalog, provider=build_provider(settings),
                           blobs=build_blob_store(settings), mail=self.mail, url_secret=signing_secret(settings),
                           embedder=SearchEmbedder(lambda: _text_embedder(settings)))
        self.usage = UsageRecorder(self.catalog)
        self.limiter: RateLimiter | None = (
            build_rate_limiter(settings, self.catalog) if settings.rate_limit_enabled else None
        )
        self._tasks: list[asyncio.Task] = []
        self._operator = None

    async def start(self, *, background: bool = True) -> None:
        await asyncio.to_thread(self.catalog.migrate)
        await self.store.start()
        if background:  # what only `serve` runs: the embedded reconcilers, usage flushes, the background loops
            # imported here: the loops bring the analysis pipeline, which the CLI's short commands need not load
            from callscope.workers.loops import start_loops

            self._operator = EmbeddedOperator(self.ctx)
            await self._operator.start()
            self._tasks = [asyncio.create_task(self.usage.run(self.settings.usage_flush_interval), name="usage"),
                           *start_loops(self.ctx)]
        log.info("runtime_started", data_dir=str(self.settings.data_dir), catalog=self.catalog.dialect,
                 background=background)

    async def stop(self) -> None:
        if self._operator is not None:
            await self._operator.stop()
        if self._tasks:
            from callscope.workers.loops import stop_loops  # as in start: only a runtime with loops loads them

            await stop_loops(self._tasks)
        self._tasks = []
        try:
            await self.usage.flush()
        except ServiceUnavailable:  # the catalog is gone as the process stops: these counts cannot be kept
            log.warning("usage_not_flushed", rows=self.usage.pending)
        await self.mail.close(timeout=10)
        await self.store.close()
        self.catalog.dispose()


@contextlib.asynccontextmanager
async def opened(settings: Settings, *, background: bool = False):
    runtime = Runtime(settings)
    await runtime.start(background=background)
    try:
        yield runtime
    finally:
        await runtime.stop()
