"""The sample names Callscope exports, and the metric names a PromQL expression reads: a renamed metric shows as a
name the rules (or the dashboard) read that nothing exports."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

from prometheus_client import REGISTRY
from prometheus_client.core import Metric

from callscope import metrics  # noqa: F401 - defines the in-memory metrics in REGISTRY
from callscope.analysis.runtime import ray_figures
from callscope.catalog.queue_figures import INDICATIVE, QueueFigures
from callscope.metrics_catalog import families

_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
_FUNCTION_OR_KEYWORD = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
                        "bool", "offset", "inf", "nan"}


def _samples(found: Iterable[Metric]) -> set[str]:
    return {family.name + suffix for family in found for suffix in _SUFFIXES[family.type]}


def exported() -> set[str]:
    """Every sample name: the process's metrics, the catalog's figures and the Ray cluster's."""
    now = datetime.now(UTC)
    figures = QueueFigures(queued={}, queued_total=0, running=0, oldest_queued=None,
                           overdue={name: 0 for name, _, _ in INDICATIVE}, webhooks_undelivered=0,
                           oldest_undelivered=None)
    return (_samples(REGISTRY.collect()) | _samples(families(figures, now))
            | _samples(ray_figures.families([], {}, {})))


def metric_names(expr: str) -> set[str]:
    """The metric (and recording rule) names an expression reads: its identifiers, less label matchers, grouping
    labels, strings, durations, functions and keywords."""
    expr = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)  # strings (the label values)
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges, subqueries
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        word, rest = match.group(), expr[match.end():].lstrip()
        if rest.startswith("(") or word.lower() in _FUNCTION_OR_KEYWORD:
            continue
        names.add(word)
    return names
