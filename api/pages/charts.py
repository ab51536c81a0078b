"""The geometry of the Settings pages' charts; the templates draw them as inline SVG (no script, no library), each
next to a table of the same numbers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    percent: float  # of the longest bar


def bars(values: dict[str, int], limit: int = 12) -> list[Bar]:
    """The largest `limit` values, largest first, each as a share of the largest."""
    top = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    peak = max((v for _, v in top), default=0) or 1
    return [Bar(label, value, 100 * value / peak) for label, value in top]
