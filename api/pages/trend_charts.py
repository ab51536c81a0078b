"""The geometry of the Trends page's charts: one bar (or a stack of bars) per bucket of the period, each a link to
the recordings behind it. The template draws them as inline SVG (no script, no library); every figure is a number
in the chart's coordinates (viewBox units), which the stylesheet scales to the page's width."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Narrow, so that the ticks' text, which scales with the chart, still reads at a phone's width.
WIDTH, HEIGHT = 400.0, 170.0
LEFT, RIGHT, TOP, BOTTOM = 34.0, 4.0, 8.0, 20.0  # room for the value ticks on the left, the dates below
ZERO = 1.5  # the height of a bar of 0, told apart from no bar (nothing to measure)
PLOT_WIDTH, PLOT_HEIGHT = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
MAX_DATE_TICKS = 7  # more would collide at a phone's width


@dataclass(frozen=True)
class Block:
    """A rectangle of a bar: the whole bar, or one part of a stack."""

    y: float
    height: float
    fill: str | None = None  # a stack's part has its own colour; a bar has the stylesheet's


@dataclass(frozen=True)
class Bar:
    x: float  # of its slot: the whole slot is the link's target, so an empty bucket is as easy to hit
    width: float
    bar_x: float
    bar_width: float
    blocks: list[Block]
    label: str  # what the bar says, read out and shown as its tooltip
    href: str


@dataclass(frozen=True)
class Tick:
    at: float
    text: str


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    bars: list[Bar]
    values: list[Tick]  # at: y
    dates: list[Tick]  # at: x, the tick's centre
    legend: list[tuple[str, str]]  # (colour, name) of a stack's parts
    width: float = WIDTH
    height: float = HEIGHT
    left: float = LEFT
    plot_top: float = TOP
    plot_bottom: float = TOP + PLOT_HEIGHT


@dataclass(frozen=True)
class Slot:
    """A bucket as a chart takes it: its date's tick text, its link, and the words before each bar's figure."""

    tick: str
    href: str
    name: str  # "Week of 2 Jun 2031"


def _y(value: float, top: float) -> float:
    return TOP + PLOT_HEIGHT * (1 - value / top)


def _slots(slots: Sequence[Slot]) -> tuple[float, list[Tick]]:
    width = PLOT_WIDTH / max(len(slots), 1)
    every = -(-len(slots) // MAX_DATE_TICKS)
    return width, [Tick(LEFT + width * (i + 0.5), s.tick) for i, s in enumerate(slots) if i % every == 0]


def _bar(slots: Sequence[Slot], i: int, width: float, blocks: list[Block], label: str) -> Bar:
    x = LEFT + width * i
    return Bar(round(x, 1), round(width, 1), round(x + width * 0.15, 1), round(width * 0.7, 1), blocks,
               f"{slots[i].name}: {label}", slots[i].href)


def bars(key: str, title: str, slots: Sequence[Slot], values: Sequence[float | None], top: float,
         fmt: Callable[[float], str], describe: Callable[[int], str]) -> Chart:
    """A bar per slot, `top` at the plot's top; a None value (no call to measure) draws no bar, and its slot still
    links to the bucket's list. `describe(i)` is what bar i says."""
    width, dates = _slots(slots)
    drawn = []
    for i, value in enumerate(values):
        blocks = []
        if value is not None:
            y = min(_y(value, top), TOP + PLOT_HEIGHT - ZERO)
            blocks = [Block(round(y, 1), round(TOP + PLOT_HEIGHT - y, 1))]
        drawn.append(_bar(slots, i, width, blocks, describe(i)))
    return Chart(key, title, drawn, [Tick(round(_y(v, top), 1), fmt(v)) for v in (0, top / 2, top)], dates, [])


def stacks(key: str, title: str, slots: Sequence[Slot], counts: Sequence[dict[str, int]], order: Sequence[str],
           colours: dict[str, str], describe: Callable[[int], str]) -> Chart:
    """A stack per slot of each part's share of the slot's total, parts in `order` from the bottom."""
    width, dates = _slots(slots)
    drawn = []
    for i, parts in enumerate(counts):
        total, blocks, bottom = sum(parts.values()), [], TOP + PLOT_HEIGHT
        for name in order:
            if total and parts.get(name):
                height = PLOT_HEIGHT * parts[name] / total
                bottom -= height
                blocks.append(Block(round(bottom, 1), round(height, 1), colours[name]))
        drawn.append(_bar(slots, i, width, blocks, describe(i)))
    shown = [name for name in order if any(parts.get(name) for parts in counts)]
    return Chart(key, title, drawn, [Tick(round(_y(v, 1), 1), f"{v:.0%}") for v in (0, 0.5, 1)], dates,
                 [(colours[name], name) for name in shown])
