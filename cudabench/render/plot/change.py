"""A comparison's changes as bars against their thresholds, coloured by verdict."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure
from cudabench.render.plot.style import (
    LEGEND_CHARS_PER_INCH,
    PAGE_PANEL_INCHES,
    new_figure,
    text,
)


@dataclass(frozen=True)
class ChangeBar:
    """One compared benchmark: its name, change (current / baseline - 1), the threshold
    it was held to, the verdict's page class ('bad', 'warn', 'good' or '') and verdict."""

    label: str
    change: float
    threshold: float
    style: str
    verdict: str


VERDICT_COLOURS = {"bad": "#b42318", "warn": "#b58100", "good": "#1a7f37", "": "#8c959f"}
# Bars a figure draws (half an inch each): 5,000 rows made a page of 24.7 MB in 40 s.
MAX_BARS = 40
LARGEST = 1e300  # a change (in %) beyond this is drawn off the scale: axis limits must be finite


def _drawable(value: float) -> bool:
    """Return whether a value (in %) can set the axis: finite, with room to scale it."""
    return math.isfinite(value) and abs(value) <= LARGEST


def _fitted(label: str) -> str:
    """Return a bar's name cut to the figure's width, "..." marking the cut: the page's
    table above names it whole, and past the edge the SVG would cut it unmarked."""
    room = int(PAGE_PANEL_INCHES[0] * LEGEND_CHARS_PER_INCH) - 2
    return label if len(label) <= room else label[:room - 3] + "..."


def bars_drawn(bars: Sequence[ChangeBar]) -> list[ChangeBar]:
    """Return the bars a figure draws, in their order: all, or MAX_BARS of them, the
    regressions ('bad') first, then the warnings, then the largest other changes."""
    if len(bars) <= MAX_BARS:
        return list(bars)

    def rank(index: int) -> tuple[int, float]:
        size = abs(bars[index].change)
        return ({"bad": 0, "warn": 1}.get(bars[index].style, 2),
                -size if not math.isnan(size) else 0.0)

    kept = sorted(sorted(range(len(bars)), key=rank)[:MAX_BARS])
    return [bars[i] for i in kept]


def change_figure(bars: Sequence[ChangeBar]) -> Figure:
    """Return the changes as horizontal bars, one a benchmark in the table's order, coloured
    by verdict, each over the grey band of its threshold, its name above it and its verdict
    beside it (names above the bars leave the bars the figure's whole width: a phone).
    A change too large to scale (infinite: a baseline of 1e-300 s) reaches the edge, its
    verdict marked "off the scale"."""
    from matplotlib.transforms import blended_transform_factory

    figure = new_figure(PAGE_PANEL_INCHES[0], 1.2 + 0.5 * len(bars))
    axes = figure.add_subplot()
    positions = [float(y) for y in range(len(bars))][::-1]  # the first row on top
    for y, bar in zip(positions, bars):
        if _drawable(bar.threshold * 100):
            axes.barh(y, 2 * bar.threshold * 100, left=-bar.threshold * 100, height=0.5,
                      color="0.88", zorder=1)
    changes = [bar.change * 100 for bar in bars]
    reach = max([abs(v) for v in changes if _drawable(v)]
                + [bar.threshold * 100 for bar in bars if _drawable(bar.threshold * 100)]
                + [1.0])
    # An infinite change (a baseline of 1e-300 s) is drawn to the edge, and says so.
    values = [v if _drawable(v) else 0.0 if math.isnan(v) else math.copysign(reach * 1.3, v)
              for v in changes]
    colours = [VERDICT_COLOURS.get(bar.style, VERDICT_COLOURS[""]) for bar in bars]
    axes.barh(positions, values, height=0.34, zorder=2, color=colours)
    left_edge = blended_transform_factory(axes.transAxes, axes.transData)
    for y, bar, value, change, colour in zip(positions, bars, values, changes, colours):
        label = axes.text(0.01, y + 0.3, text(_fitted(bar.label)), transform=left_edge,
                          fontsize="small", va="bottom", ha="left", color="0.15", clip_on=False)
        # A name wider than the axes (a variant with all its parameters) must not shrink
        # them: constrained layout gave up ("axes sizes collapsed to zero") on stderr.
        label.set_in_layout(False)
        verdict = bar.verdict if _drawable(change) else f"{bar.verdict} (off the scale)"
        axes.annotate(text(verdict), (value, y), textcoords="offset points",
                      xytext=(4 if value >= 0 else -4, 0), va="center",
                      ha="left" if value >= 0 else "right", fontsize="small",
                      color=colour, fontweight="bold" if bar.style == "bad" else "normal")
    axes.axvline(0, color="0.3", linewidth=0.8, zorder=3)
    axes.set_xlim(-reach * 1.4, reach * 1.4)
    axes.set_ylim(-0.6, len(bars) - 0.05)
    axes.set_yticks([])
    axes.xaxis.set_major_formatter(_percent_formatter())
    figure.supxlabel("change of the median, current against baseline (grey: within the "
                     "threshold)", fontsize="small")
    figure.suptitle("Change per benchmark (right of 0: slower)")
    axes.grid(True, axis="x", alpha=0.35)
    return figure


def _percent_formatter() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _position: f"{value:+,.0f}%" if value else "0%")
