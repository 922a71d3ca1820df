"""The throughput figure: each op and type's rate (or bandwidth) against problem size."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cudabench.render.insight import work_unit
from cudabench.render.run_table import counts_flops
from cudabench.results.model import BenchmarkResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure
from cudabench.render.plot.selection import drawn
from cudabench.render.plot.style import (
    MAX_SIZE_TICKS,
    NO_THROUGHPUT,
    PANEL_INCHES,
    Styles,
    device_identity,
    empty_panel,
    grid_shape,
    legend_below,
    legend_rows,
    plain_axis,
    plotted,
    problem_size,
    row_heights,
    series_label,
    shape_label,
    text,
)

TOP_MARGIN = 0.05  # a linear axis's top: this share above its highest value (a marker's room)


def throughput_panels(results: Sequence[BenchmarkResult]
                      ) -> dict[tuple[str, str], list[BenchmarkResult]]:
    """Return the rows of each throughput panel, by (op, dtype)."""
    panels: dict[tuple[str, str], list[BenchmarkResult]] = {}
    for r in plotted(results):
        panels.setdefault((r.op, r.dtype), []).append(r)
    return panels


def _throughput_series(members: Sequence[BenchmarkResult], styles: Styles
                       ) -> tuple[bool, dict[tuple[str, Any], list[BenchmarkResult]]]:
    """Return whether the panel reads FLOP/s, and its series by label and device (a label
    alone joined two GPUs' points into one line where their tags matched)."""
    flops = counts_flops(members)
    series: dict[tuple[str, Any], list[BenchmarkResult]] = {}
    for r in sorted(members, key=styles.order):
        # An op read in GFLOP/s leaves out its copy row (no FLOPs).
        if flops and not r.flops:
            continue
        series.setdefault((series_label(r, styles), device_identity(r)), []).append(r)
    return flops, series


def draw_throughput_panel(target: Figure | SubFigure, op: str, dtype: str,
                          members: Sequence[BenchmarkResult], styles: Styles) -> None:
    """Draw one op and dtype: throughput against problem size, a line a series."""
    axes = target.add_subplot()
    flops, series = _throughput_series(members, styles)
    values: list[float] = []
    for (label, _), points in series.items():
        points.sort(key=problem_size)
        ys = [(p.gflops if flops else p.gbps) or 0.0 for p in points]
        values += ys
        axes.plot([problem_size(p) for p in points], ys, label=text(label),
                  **styles.line(points[0]))
    shown = [r for points in series.values() for r in points]
    _size_axis(axes, shown)
    if values and min(values) > 0 and max(values) / min(values) > 50:
        axes.set_yscale("log")  # small sizes would vanish on a linear axis
    else:
        # A linear axis from zero (no small gap looks large), its top a margin above the
        # highest value: matplotlib's margin is a share of the values' spread, which is next
        # to nothing where they are alike (a flat series): the top marker was cut in half.
        axes.set_ylim(0, max(values, default=0.0) * (1 + TOP_MARGIN) or None)
    plain_axis(axes.yaxis, values)
    axes.set_title(text(f"{op} {dtype}"))
    axes.set_ylabel(f"throughput ({work_unit(members)}/s)" if flops else "bandwidth (GB/s)")
    axes.grid(True, which="major", alpha=0.35)
    axes.grid(True, which="minor", alpha=0.12)
    legend_below(target, axes, styles.note(members))


def _size_axis(axes: Axes, rows: Sequence[BenchmarkResult]) -> None:
    """A log x axis of problem sizes, at least a decade wide (a narrower one has no major
    tick to label), with a tick at each size labelled by its shape when there are few."""
    from matplotlib.ticker import NullFormatter

    xs = [problem_size(r) for r in rows]
    axes.set_xscale("log")
    low, high = float(min(xs, default=1)), float(max(xs, default=1))
    if low > 0 and high / low < 10:
        middle = math.sqrt(low * high)
        low, high = middle / 10 ** 0.5, middle * 10 ** 0.5
    span = math.log10(high / low) if low > 0 else 1.0
    if low > 0:  # room for the end markers (a log axis's own margin is tight)
        axes.set_xlim(low / 10 ** (0.06 * span), high * 10 ** (0.06 * span))
    shapes: dict[int, list[str]] = {}
    for r in sorted(rows, key=problem_size):
        label = shape_label(r.shape)
        if label not in shapes.setdefault(problem_size(r), []):
            shapes[problem_size(r)].append(label)
    dims = {"x".join(r.dims) for r in rows if r.dims}
    named = f" ({dims.pop()})" if len(dims) == 1 else ""
    if 0 < len(shapes) <= MAX_SIZE_TICKS:
        labels = _spaced(list(shapes), ["\n".join(names) for names in shapes.values()],
                         span * 1.12)
        axes.set_xticks(list(shapes), labels)
        axes.xaxis.set_minor_formatter(NullFormatter())
        if len(shapes) > 3 and max(map(len, labels)) > 5 or max(map(len, labels)) > 14:
            axes.tick_params(axis="x", labelrotation=30)
            for tick in axes.get_xticklabels():
                tick.set_horizontalalignment("right")
                tick.set_rotation_mode("anchor")
        axes.set_xlabel(f"shape{named}, log scale of its product")
    else:
        axes.xaxis.set_minor_formatter(NullFormatter())
        axes.set_xlabel(f"problem size: product of the shape{named}")


def _spaced(xs: Sequence[float], labels: Sequence[str], decades: float) -> list[str]:
    """Blank the labels of ticks too close to the last labelled one to be read apart: a
    panel is about 5 inches wide and a character of tick text about 0.09 inch."""
    shown: list[str] = []
    last: tuple[float, str] | None = None
    for x, label in zip(xs, labels):
        where = math.log10(x) / max(decades, 1e-9) * 5.0
        width = max(map(len, label.splitlines()), default=0) * 0.09
        if last is not None and where - last[0] < (width + len(last[1]) * 0.09) / 2 + 0.1:
            shown.append("")
            continue
        shown.append(label)
        last = (where, max(label.splitlines(), key=len, default=""))
    return shown


def draw_throughput(target: Figure | SubFigure, results: Sequence[BenchmarkResult],
                    styles: Styles | None = None) -> None:
    """Draw one panel per op and dtype, two panels a row (without styles: of the rows
    selection.py draws)."""
    if styles is None:
        results, styles = drawn(results)
    panels = throughput_panels(results)
    target.suptitle("Throughput against problem size")
    if not panels:
        empty_panel(target, NO_THROUGHPUT)
        return
    rows, columns = grid_shape(len(panels))
    heights = row_heights([throughput_legend_rows(m, styles) for m in panels.values()],
                           columns)
    grid = target.subfigures(rows, columns, squeeze=False, height_ratios=heights)
    for index, ((op, dtype), members) in enumerate(panels.items()):
        draw_throughput_panel(grid[index // columns][index % columns], op, dtype, members,
                              styles)


def throughput_legend_rows(members: Sequence[BenchmarkResult], styles: Styles,
                           inches: float = PANEL_INCHES[0]) -> int:
    return legend_rows([label for label, _ in _throughput_series(members, styles)[1]], inches,
                       styles.note(members))
