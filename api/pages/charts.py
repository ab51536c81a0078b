"""The geometry of the Settings pages' charts; the templates draw them as inline SVG (no script, no library), each
next to a table of the same numbers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from callscope.catalog.usage import HourlyUsage


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    percent: float  # of the longest bar


def without_prefix(endpoints: dict[str, int], prefix: str) -> dict[str, int]:
    """`GET /api/v1/public/projects` as `GET /projects`: what tells the endpoints apart, short enough for a phone."""
    return {label.replace(f" {prefix}/", " /", 1): count for label, count in endpoints.items()}


def bars(values: dict[str, int], limit: int = 12) -> list[Bar]:
    """The largest `limit` values, largest first, each as a share of the largest."""
    top = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    peak = max((v for _, v in top), default=0) or 1
    return [Bar(label, value, 100 * value / peak) for label, value in top]


@dataclass(frozen=True)
class Hour:
    """One hour's column: its position and heights in a 100 × 100 viewBox, with the numbers it stands for."""

    start: datetime
    x: float
    width: float
    requests_height: float  # of the busiest hour
    errors_height: float  # the errors' part of the same column
    rate_height: float  # the error rate, 100 = every request failed
    requests: int
    errors: int

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0


def hours(used: list[HourlyUsage], last: datetime, count: int) -> list[Hour]:
    """One column per hour of the `count` hours up to the one holding `last`, hours without requests empty."""
    end = last.replace(minute=0, second=0, microsecond=0)
    found = {u.hour: u for u in used}
    peak = max((u.requests for u in used), default=0) or 1
    width = 100 / count
    columns = []
    for i in range(count):
        start = end - timedelta(hours=count - 1 - i)
        u = found.get(start)
        requests, errors = (u.requests, u.errors) if u else (0, 0)
        columns.append(Hour(start, i * width, width * 0.8, 100 * requests / peak, 100 * errors / peak,
                            100 * errors / requests if requests else 0.0, requests, errors))
    return columns
