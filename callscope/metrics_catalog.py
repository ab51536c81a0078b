"""The metrics read from the catalog when Prometheus scrapes (the queue, the outbox, whether the catalog answers),
never kept in memory: every replica reads the same figures, so the rules take their max across instances. The
queries are a few aggregates (callscope/catalog/queue_figures.py), run at most once per CACHE_SECONDS however
many scrapers ask; ``exposition`` is what a /metrics serves: this process's metrics and these (`callscope serve`
on its API port; ``serve`` for the Kopf controller, on a port of its own)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime

import structlog
from prometheus_client import REGISTRY, CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from callscope.catalog.db import Catalog
from callscope.catalog.queue_figures import INDICATIVE, QueueFigures, queue_figures
from callscope.errors import ServiceUnavailable
from callscope.metrics import OTHER

log = structlog.get_logger()

CACHE_SECONDS = 5.0
# (account, project) pairs with a series of their own in callscope_jobs_queued, the deepest queues; the others are
# summed under (OTHER, OTHER), so the label set stays bounded however many projects there are.
TOP_PROJECTS = 20


def _age(now: datetime, since: datetime | None) -> float:
    return max(0.0, (now - since).total_seconds()) if since is not None else 0.0


def families(figures: QueueFigures | None, now: datetime) -> list[Metric]:
    """The gauges for ``figures`` (None: the catalog did not answer, so callscope_catalog_up alone, at 0)."""
    up = GaugeMetricFamily("callscope_catalog_up", "Whether the catalog answered this replica's last read (1) or not")
    up.add_metric([], 0 if figures is None else 1)
    if figures is None:
        return [up]
    queued = GaugeMetricFamily("callscope_jobs_queued", "Analysis jobs waiting in the queue, by project (the "
                               f"{TOP_PROJECTS} deepest; the rest under {OTHER})", labels=["account", "project"])
    for (account, project), count in figures.queued.items():
        queued.add_metric([account, str(project)], count)
    queued.add_metric([OTHER, OTHER], figures.queued_total - sum(figures.queued.values()))
    running = GaugeMetricFamily("callscope_jobs_running", "Analysis jobs leased by a dispatcher")
    running.add_metric([], figures.running)
    oldest = GaugeMetricFamily("callscope_jobs_oldest_queued_age_seconds",
                               "Seconds since the oldest queued job was queued (0: none)")
    oldest.add_metric([], _age(now, figures.oldest_queued))
    overdue = GaugeMetricFamily("callscope_recordings_overdue",
                                "Recordings still waiting for their first analysis longer than the spec's indicative "
                                "time for their length, by length band", labels=["length"])
    for name, _, _ in INDICATIVE:
        overdue.add_metric([name], figures.overdue[name])
    pending = GaugeMetricFamily("callscope_webhook_events_undelivered",
                                "Webhook events waiting for delivery (pending or being delivered)")
    pending.add_metric([], figures.webhooks_undelivered)
    late = GaugeMetricFamily("callscope_webhook_oldest_undelivered_age_seconds",
                             "Seconds since the oldest undelivered webhook event was written (0: none)")
    late.add_metric([], _age(now, figures.oldest_undelivered))
    return [up, queued, running, oldest, overdue, pending, late]


class CatalogCollector(Collector):
    def __init__(self, catalog: Catalog, clock: Callable[[], datetime]) -> None:
        self.catalog = catalog
        self.clock = clock
        self._lock = threading.Lock()
        self._read_at = -CACHE_SECONDS
        self._families: list[Metric] = []

    def collect(self) -> Iterable[Metric]:
        with self._lock:  # one scrape reads, the others wait for its figures
            if time.monotonic() - self._read_at >= CACHE_SECONDS:
                self._families = families(self._read(), self.clock())
                self._read_at = time.monotonic()
            return [*self._families, self._pool()]

    def _pool(self) -> Metric:
        """The connection pool now (no query: the pool's own counts)."""
        pool = self.catalog.engine.pool
        family = GaugeMetricFamily("callscope_catalog_pool_connections",
                                   "This process's catalog connections: in_use (checked out), idle (in the pool)",
                                   labels=["state"])
        family.add_metric(["in_use"], getattr(pool, "checkedout", lambda: 0)())
        family.add_metric(["idle"], getattr(pool, "checkedin", lambda: 0)())
        return family

    def _read(self) -> QueueFigures | None:
        try:
            return self.catalog.query(queue_figures, self.clock(), TOP_PROJECTS)
        except ServiceUnavailable:  # the outage is logged once by the catalog
            return None
        except Exception:  # a scrape reports what it can, it does not fail
            log.warning("metrics_catalog_read_failed", exc_info=True)
            return None


class _Process(Collector):
    """This process's in-memory metrics (the default registry's)."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def exposition(catalog: Catalog, clock: Callable[[], datetime]) -> CollectorRegistry:
    """A registry of this process's metrics and the catalog's figures, for one /metrics endpoint."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Process())
    registry.register(CatalogCollector(catalog, clock))
    return registry


def serve(catalog: Catalog, clock: Callable[[], datetime], port: int) -> Callable[[], None]:
    """Serve ``exposition`` on ``port`` from a thread of its own; the function that stops it."""
    server, _ = start_http_server(port, registry=exposition(catalog, clock))
    return server.shutdown
