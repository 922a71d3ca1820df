"""The roofline figure: each timed row's arithmetic intensity and rate under its device's roofs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cudabench.insight import roofs
from cudabench.results.model import BenchmarkResult, DeviceInfo

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure
from cudabench.render.plot.selection import drawn
from cudabench.render.plot.style import (
    NO_ROOFLINE,
    PANEL_INCHES,
    Styles,
    device_identity,
    devices_of,
    empty_panel,
    grid_shape,
    legend_below,
    legend_rows,
    plain_axis,
    roofline_rows,
    row_heights,
    series_label,
    text,
)


def draw_roofline(target: Figure | SubFigure, results: Sequence[BenchmarkResult],
                  styles: Styles | None = None) -> None:
    """Draw one panel per device: achieved FLOP/s against arithmetic intensity, under the
    device's DRAM roof and the compute roofs of the units and types its rows ran on."""
    if styles is None:
        results, styles = drawn(results)
    rows = roofline_rows(results)
    target.suptitle("Roofline")
    if not rows:
        empty_panel(target, NO_ROOFLINE)
        return
    devices = devices_of(rows)
    count_rows, columns = grid_shape(len(devices))
    members = {identity: [r for r in rows if device_identity(r) == identity]
               for identity in devices}
    heights = row_heights([roofline_legend_rows(m, styles) for m in members.values()],
                          columns)
    grid = target.subfigures(count_rows, columns, squeeze=False, height_ratios=heights)
    for index, (identity, device) in enumerate(devices.items()):
        draw_roofline_panel(grid[index // columns][index % columns], device,
                            members[identity], styles)


def roofline_series(rows: Sequence[BenchmarkResult], styles: Styles
                     ) -> dict[str, list[BenchmarkResult]]:
    several = len({(r.op, r.dtype) for r in rows}) > 1
    series: dict[str, list[BenchmarkResult]] = {}
    for r in sorted(rows, key=styles.order):
        name = series_label(r, styles, device=False)  # the panel is one device's
        if several:
            name += f" ({r.op} {r.dtype})"
        series.setdefault(name, []).append(r)
    return series


def roofline_legend_rows(rows: Sequence[BenchmarkResult], styles: Styles,
                         inches: float = PANEL_INCHES[0]) -> int:
    return legend_rows(list(roofline_series(rows, styles)), inches, styles.note(rows))


def _ops_unit(rows: Sequence[BenchmarkResult]) -> str:
    integer = {r.compute_type == "int32" or (not r.compute_type and r.dtype == "int32")
               for r in rows}
    return "TOP/s" if integer == {True} else "TFLOP/s" if integer == {False} else \
        "TFLOP/s or TOP/s"


def draw_roofline_panel(target: Figure | SubFigure, device: DeviceInfo | None,
                        rows: Sequence[BenchmarkResult], styles: Styles) -> None:
    """Draw one device's roofline: its roofs grey, each series in its colour, the points of
    one series (its sizes) joined in order of intensity."""
    axes = target.add_subplot()
    intensity = {id(r): r.flops / r.bytes_moved for r in rows}
    achieved = {id(r): r.flops / (r.median_s or math.inf) / 1e12 for r in rows}
    roof = roofs.Roofs.of(device) if device is not None else None
    # The roofs present: each row's unit and arithmetic type (as the tables' % of peak).
    units = dict.fromkeys((r.unit or "cuda", r.compute_type) for r in rows if r.compute_type)
    rates = {pair: rate for pair in units
             if roof is not None and (rate := roof.rate(*pair))}
    dram = roof.dram_bps if roof is not None else None
    ridges = [rate / dram for rate in rates.values() if dram]
    low = min(list(intensity.values()) + ridges) / 4
    high = max(list(intensity.values()) + ridges) * 4
    # Roofs are grey, labelled on the line: colours are the series'.
    if dram:
        top = max(ridges, default=high)
        axes.plot([low, top], [low * dram / 1e12, top * dram / 1e12], color="0.25",
                  linewidth=1.2)
        axes.annotate(f"DRAM {dram / 1e9:,.0f} GB/s", (low, low * dram / 1e12),
                      textcoords="offset points", xytext=(6, 10), fontsize="x-small",
                      rotation_mode="anchor", color="0.25")
    # Roofs of one rate (FP32 CUDA cores and FP64 tensor on Hopper) share a line and label.
    names: dict[float, list[str]] = {}
    for (unit, compute_type), rate in rates.items():
        names.setdefault(rate, []).append(roofs.label(unit, compute_type))
    for rate, labels in sorted(names.items()):
        start = rate / dram if dram else low
        scale = "TOP/s" if all("INT32" in name for name in labels) else "TFLOP/s"
        axes.plot([start, high], [rate / 1e12, rate / 1e12], linestyle="--", color="0.45",
                  linewidth=1.2)
        axes.annotate(text(f"{', '.join(labels)} {rate / 1e12:,.1f} {scale}"),
                      (high, rate / 1e12), textcoords="offset points", xytext=(-4, 3),
                      ha="right", fontsize="x-small", color="0.3")
    for name, members in roofline_series(rows, styles).items():
        members = sorted(members, key=lambda r: intensity[id(r)])
        axes.plot([intensity[id(r)] for r in members], [achieved[id(r)] for r in members],
                  label=text(name), **styles.line(members[0], len(members) > 1, 0.9))
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    if rates:  # room above the highest roof for its label
        bottom, top = axes.get_ylim()
        axes.set_ylim(bottom, max(top, max(rates.values()) / 1e12 * 1.6))
    plain_axis(axes.xaxis, [low, high])
    plain_axis(axes.yaxis, [v for v in achieved.values()]
                + [rate / 1e12 for rate in rates.values()])
    axes.set_title(text(styles.device_title(device, lines=True)), fontsize="medium")
    axes.set_xlabel("arithmetic intensity (FLOP/byte), log scale")
    axes.set_ylabel(f"achieved {_ops_unit(rows)}, log scale")
    axes.grid(True, which="major", alpha=0.35)
    axes.grid(True, which="minor", alpha=0.12)
    legend_below(target, axes, styles.note(rows))
