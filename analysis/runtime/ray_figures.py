"""The Ray cluster's figures as this process's metrics, read from Ray's state API when Prometheus scrapes (a
dispatcher on Ray is a driver of the cluster): its nodes alive, head or worker, and the resources offered and free.
Cached for CACHE_SECONDS; nothing while this process is not connected (the inline executor, a lost cluster)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping

import ray
import structlog
from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

log = structlog.get_logger()

CACHE_SECONDS = 10.0
HEAD_RESOURCE = "node:__internal_head__"  # in the resources of the head node only
RESOURCES = ("CPU", "GPU", "memory")  # bounded: the custom resources (one per worker group, per node) left out


def families(nodes: Iterable[Mapping], total: Mapping[str, float], available: Mapping[str, float]) -> list[Metric]:
    alive = GaugeMetricFamily("callscope_ray_nodes_alive", "Ray nodes alive, head or worker", labels=["kind"])
    counts = {"head": 0, "worker": 0}
    for node in nodes:
        if node.get("Alive"):
            counts["head" if HEAD_RESOURCE in node.get("Resources", {}) else "worker"] += 1
    for kind, count in counts.items():
        alive.add_metric([kind], count)
    offered = GaugeMetricFamily("callscope_ray_resources", "Ray cluster resources: total offered and available "
                                "(memory in bytes)", labels=["resource", "state"])
    for resource in RESOURCES:
        offered.add_metric([resource, "total"], total.get(resource, 0.0))
        offered.add_metric([resource, "available"], available.get(resource, 0.0))
    return [alive, offered]


class RayCollector(Collector):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read_at = -CACHE_SECONDS
        self._families: list[Metric] = []

    def collect(self) -> Iterable[Metric]:
        if not ray.is_initialized():
            return []
        with self._lock:
            if time.monotonic() - self._read_at >= CACHE_SECONDS:
                self._families = self._read()
                self._read_at = time.monotonic()
            return list(self._families)

    @staticmethod
    def _read() -> list[Metric]:
        try:
            return families(ray.nodes(), ray.cluster_resources(), ray.available_resources())
        except Exception:  # a scrape reports what it can; the executor notices a lost cluster itself
            log.warning("metrics_ray_read_failed", exc_info=True)
            return []


_collector: RayCollector | None = None
_registering = threading.Lock()


def expose() -> None:
    """Put the cluster's figures in this process's metrics, once however many executors start."""
    global _collector
    with _registering:
        if _collector is None:
            _collector = RayCollector()
            REGISTRY.register(_collector)
