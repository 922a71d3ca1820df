"""Figures of saved results: throughput against problem size, and the roofline.

matplotlib is optional (`pip install 'cudabench[plot]'`) and imported only when a figure is
made. Figures are drawn on the Agg canvas directly, never through pyplot: no display, and no
change to the backend of a process that imported us (a notebook, say).

Every panel is a subfigure holding one axes and, below it, its legend (a legend inside the
axes hides points). A variant has one colour in every panel of every figure, and its
parameter sets differ by marker; vendor rows are dashed, reference rows dotted.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudabench.errors import UsageError
from cudabench.insight import roofs
from cudabench.common.outfiles import replacing
from cudabench.results.model import BenchmarkResult, DeviceInfo, Kind, Status
from cudabench.common.units import params_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

HINT = "plotting needs matplotlib: pip install 'cudabench[plot]'"
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
KINDS = ("throughput", "roofline", "both")
# Only rows whose time is believed are drawn: a failed or SUSPECT kernel's speed means nothing.
PLOTTED = frozenset({Status.PASS, Status.REF})
PANEL_INCHES = (6.0, 3.8)  # one panel's axes and labels; its legend adds rows below
# A page's panels are narrower, so that their text stays readable scaled to a phone's width.
PAGE_PANEL_INCHES = (4.6, 3.2)
LEGEND_CHARS_PER_INCH = 14  # legend text ("small") a panel's width holds
LEGEND_ROW_INCHES = 0.2
TITLE_INCHES = 0.4
MAX_SIZE_TICKS = 8  # up to this many sizes, each gets a tick labelled with its shape
NO_ROOFLINE = ("no roofline: no timed, verified benchmark counts FLOPs (a copy or a "
               "transpose does no arithmetic)")
NO_THROUGHPUT = "nothing to plot: no benchmark was timed and verified"

LINES = {Kind.VARIANT: "-", Kind.VENDOR: "--", Kind.REFERENCE: ":"}
# A variant's parameter sets, in order; vendor and reference rows keep one marker each.
VARIANT_MARKERS = ("o", "D", "v", "P", "X", "*", "<", ">", "h", "p")
KIND_MARKERS = {Kind.VENDOR: "s", Kind.REFERENCE: "^"}
FILLS = ("full", "none", "left", "bottom", "right", "top")  # a marker's fill per device
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39")


def available() -> bool:
    """Return whether matplotlib can be imported."""
    try:
        require()
    except UsageError:
        return False
    return True


def require() -> None:
    """Import matplotlib itself first: a cached submodule would hide that it is blocked."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(HINT) from None


def _new_figure(width: float, height: float) -> Figure:
    require()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def text(value: str) -> str:
    """Make user text literal for matplotlib: '$' would start mathtext and a leading '_'
    hides a legend entry."""
    value = value.replace("$", r"\$")
    return " " + value if value.startswith("_") else value


def plotted(results: Iterable[BenchmarkResult]) -> list[BenchmarkResult]:
    """Return the rows a figure may show: timed, and believed."""
    return [r for r in results if r.median_s and r.status in PLOTTED]


def roofline_rows(results: Iterable[BenchmarkResult]) -> list[BenchmarkResult]:
    """Return the rows a roofline places: timed, believed, counting FLOPs and bytes, and not
    a reference row (a copy does no arithmetic)."""
    return [r for r in plotted(results)
            if r.flops and r.bytes_moved and r.kind is not Kind.REFERENCE]


def problem_size(result: BenchmarkResult) -> int:
    """Return the product of a result's shape (the x axis of the throughput figure)."""
    return math.prod(result.shape)


def shape_label(shape: Sequence[int]) -> str:
    """Return a shape as a tick label: 1024³ for a cube, 8192² for a square, else 4096x256."""
    if len(shape) in (2, 3) and len(set(shape)) == 1:
        return f"{shape[0]}{'²' if len(shape) == 2 else '³'}"
    return "x".join(map(str, shape)) or "-"


def _identity(result: BenchmarkResult) -> Any:
    return result.device.identity if result.device else None


def _devices(results: Sequence[BenchmarkResult]) -> dict[Any, DeviceInfo | None]:
    return {_identity(r): r.device for r in results}


def _device_name(device: DeviceInfo | None) -> str:
    if device is None:
        return "(device not recorded)"
    where = f" at {device.pci_bus_id}" if device.pci_bus_id else ""
    return f"{device.name} (GPU {device.index}{where})"


def _short_uuid(device: DeviceInfo) -> str:
    return device.uuid[:12] if device.uuid else f"GPU {device.index}"


@dataclass
class Styles:
    """How each series looks, fixed once for all the panels of a figure (or a page): a
    colour per variant, a marker per parameter set of it, a line per kind; and a short
    tag per device where one figure holds several."""

    colours: dict[str, str] = field(default_factory=dict)
    markers: dict[tuple[str, str], str] = field(default_factory=dict)
    tags: dict[Any, str] = field(default_factory=dict)
    fills: dict[Any, str] = field(default_factory=dict)  # a device's marker fill

    @classmethod
    def of(cls, results: Sequence[BenchmarkResult]) -> Styles:
        rows = plotted(results)
        styles = cls()
        for r in rows:
            if r.variant not in styles.colours:
                styles.colours[r.variant] = COLOURS[len(styles.colours) % len(COLOURS)]
        by_variant: dict[str, list[tuple[tuple[int, ...], str]]] = {}
        for r in rows:
            entry = (tuple(r.params.values()), params_text(r.params))
            if entry not in by_variant.setdefault(r.variant, []):
                by_variant[r.variant].append(entry)
        for r in rows:
            ordered = sorted(by_variant[r.variant])
            index = ordered.index((tuple(r.params.values()), params_text(r.params)))
            styles.markers[(r.variant, params_text(r.params))] = KIND_MARKERS.get(
                r.kind, VARIANT_MARKERS[index % len(VARIANT_MARKERS)])
        devices = _devices(rows)
        for index, identity in enumerate(devices):
            styles.fills[identity] = FILLS[index % len(FILLS)]
        if len(devices) > 1:
            names = [d.name if d else "" for d in devices.values()]
            for identity, device in devices.items():
                if device is None:
                    styles.tags[identity] = "device not recorded"
                elif names.count(device.name) > 1:  # the same model twice: its UUID tells
                    styles.tags[identity] = _short_uuid(device)
                else:
                    styles.tags[identity] = device.name
        return styles

    def colour(self, r: BenchmarkResult) -> str:
        return self.colours.get(r.variant, COLOURS[0])

    def marker(self, r: BenchmarkResult) -> str:
        return self.markers.get((r.variant, params_text(r.params)), "o")

    def tag(self, r: BenchmarkResult) -> str:
        return self.tags.get(_identity(r), "")

    def line(self, r: BenchmarkResult, joined: bool = True, width: float = 1.5
             ) -> dict[str, Any]:
        """Return a series' plot keywords: colour, marker and its fill, line style. A
        variant is drawn over the vendor and reference rows it may sit on."""
        return {"color": self.colour(r), "marker": self.marker(r),
                "fillstyle": self.fills.get(_identity(r), "full"),
                "linestyle": LINES[r.kind] if joined else "none", "linewidth": width,
                "zorder": 3 if r.kind is Kind.VARIANT else 2.5}

    def order(self, r: BenchmarkResult) -> tuple[Any, ...]:
        """Sort key of series: variants, then vendor, then reference rows; a variant's
        parameter sets in order; devices in order."""
        kinds = (Kind.VARIANT, Kind.VENDOR, Kind.REFERENCE)
        return (kinds.index(r.kind), list(self.colours).index(r.variant)
                if r.variant in self.colours else 0, tuple(r.params.values()),
                list(self.fills).index(_identity(r)) if _identity(r) in self.fills else 0,
                r.hot)

    def device_title(self, device: DeviceInfo | None, lines: bool = False) -> str:
        """Name a device for a panel title (on two lines with `lines`), with its UUID where
        the figure holds two of its model."""
        if device is None:
            return _device_name(device)
        where = f" at {device.pci_bus_id}" if device.pci_bus_id else ""
        twin = self.tags.get(device.identity) == _short_uuid(device)
        which = f"GPU {device.index}{where}{', ' + _short_uuid(device) if twin else ''}"
        return f"{device.name}{chr(10) if lines else ' '}({which})"


def series_label(r: BenchmarkResult, styles: Styles, device: bool = True) -> str:
    """Name a series: variant, parameters, hot L2, and the device where there are several."""
    params = params_text(r.params)
    label = r.variant + (f" {params}" if params != "-" else "") + (" (hot L2)" if r.hot else "")
    tag = styles.tag(r) if device else ""
    return label + (f" [{tag}]" if tag else "")


def _legend(target: Figure | SubFigure, axes: Axes) -> int:
    """Put the axes' legend under the panel, in as many columns as its labels allow;
    return its number of rows."""
    handles, labels = axes.get_legend_handles_labels()
    inches = target.bbox.width / target.figure.dpi
    if handles:
        target.legend(handles, labels, loc="outside lower center",
                      ncols=_legend_columns(labels, inches), fontsize="small", frameon=False)
    return _legend_rows(labels, inches)


def _legend_columns(labels: Sequence[str], inches: float = PANEL_INCHES[0]) -> int:
    """Return how many columns of labels fit a panel's width."""
    chars = int(inches * LEGEND_CHARS_PER_INCH)
    return max(1, min(3, len(labels), chars // (max(map(len, labels), default=0) + 8)))


def _legend_rows(labels: Sequence[str], inches: float = PANEL_INCHES[0]) -> int:
    return math.ceil(len(labels) / _legend_columns(labels, inches)) if labels else 0


def _plain(value: float, _position: object = None) -> str:
    """Tick text as people read numbers: 1,000 and 0.25, not 10^3 and 2.5x10^-1."""
    if value == 0:
        return "0"
    if abs(value) >= 1:
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
    return f"{value:.3g}"


def _plain_axis(axis: Any, values: Sequence[float] = ()) -> None:
    """Plain tick text; on a log axis spanning under two and a half decades, ticks at 1, 2
    and 5 of each decade too (else a narrow range shows one label, or none)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if axis.get_scale() == "log":
        low, high = axis.get_view_interval() if not values else (min(values), max(values))
        if low > 0 and high / low < 10 ** 2.5:
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(_plain))
    axis.set_minor_formatter(NullFormatter())


# ---------------------------------------------------------------- throughput


def throughput_panels(results: Sequence[BenchmarkResult]
                      ) -> dict[tuple[str, str], list[BenchmarkResult]]:
    """Return the rows of each throughput panel, by (op, dtype)."""
    panels: dict[tuple[str, str], list[BenchmarkResult]] = {}
    for r in plotted(results):
        panels.setdefault((r.op, r.dtype), []).append(r)
    return panels


def counts_flops(members: Sequence[BenchmarkResult]) -> bool:
    """Return whether a panel reads in FLOP/s: some row counts FLOPs and the op does more
    than a FLOP per byte. A streaming op (dot: 0.25 FLOP/byte) is read in GB/s, beside
    its copy row."""
    counted = [r for r in members if r.flops]
    return bool(counted) and any(not r.bytes_moved or r.flops / r.bytes_moved >= 1
                                 for r in counted)


def _throughput_series(members: Sequence[BenchmarkResult], styles: Styles
                       ) -> tuple[bool, dict[str, list[BenchmarkResult]]]:
    flops = counts_flops(members)
    series: dict[str, list[BenchmarkResult]] = {}
    for r in sorted(members, key=styles.order):
        # An op read in GFLOP/s leaves out its copy row (no FLOPs).
        if flops and not r.flops:
            continue
        series.setdefault(series_label(r, styles), []).append(r)
    return flops, series


def draw_throughput_panel(target: Figure | SubFigure, op: str, dtype: str,
                          members: Sequence[BenchmarkResult], styles: Styles) -> None:
    """Draw one op and dtype: throughput against problem size, a line a series."""
    axes = target.add_subplot()
    flops, series = _throughput_series(members, styles)
    values: list[float] = []
    for label, points in series.items():
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
        axes.set_ylim(bottom=0)  # a linear axis from zero: no small gap looks large
    _plain_axis(axes.yaxis, values)
    integer = dtype == "int32"
    axes.set_title(text(f"{op} {dtype}"))
    axes.set_ylabel(("throughput (GOP/s)" if integer else "throughput (GFLOP/s)") if flops
                    else "bandwidth (GB/s)")
    axes.grid(True, which="major", alpha=0.35)
    axes.grid(True, which="minor", alpha=0.12)
    _legend(target, axes)


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
    """Draw one panel per op and dtype, two panels a row."""
    styles = styles or Styles.of(results)
    panels = throughput_panels(results)
    target.suptitle("Throughput against problem size")
    if not panels:
        _empty(target, NO_THROUGHPUT)
        return
    rows, columns = _grid(len(panels))
    heights = _row_heights([_throughput_legend_rows(m, styles) for m in panels.values()],
                           columns)
    grid = target.subfigures(rows, columns, squeeze=False, height_ratios=heights)
    for index, ((op, dtype), members) in enumerate(panels.items()):
        draw_throughput_panel(grid[index // columns][index % columns], op, dtype, members,
                              styles)


def _throughput_legend_rows(members: Sequence[BenchmarkResult], styles: Styles,
                            inches: float = PANEL_INCHES[0]) -> int:
    return _legend_rows(list(_throughput_series(members, styles)[1]), inches)


# ---------------------------------------------------------------- roofline


def draw_roofline(target: Figure | SubFigure, results: Sequence[BenchmarkResult],
                  styles: Styles | None = None) -> None:
    """Draw one panel per device: achieved FLOP/s against arithmetic intensity, under the
    device's DRAM roof and the compute roofs of the units and types its rows ran on."""
    styles = styles or Styles.of(results)
    rows = roofline_rows(results)
    target.suptitle("Roofline")
    if not rows:
        _empty(target, NO_ROOFLINE)
        return
    devices = _devices(rows)
    count_rows, columns = _grid(len(devices))
    members = {identity: [r for r in rows if _identity(r) == identity] for identity in devices}
    heights = _row_heights([_legend_rows(list(_roofline_series(m, styles)))
                            for m in members.values()], columns)
    grid = target.subfigures(count_rows, columns, squeeze=False, height_ratios=heights)
    for index, (identity, device) in enumerate(devices.items()):
        draw_roofline_panel(grid[index // columns][index % columns], device,
                            members[identity], styles)


def _roofline_series(rows: Sequence[BenchmarkResult], styles: Styles
                     ) -> dict[str, list[BenchmarkResult]]:
    several = len({(r.op, r.dtype) for r in rows}) > 1
    series: dict[str, list[BenchmarkResult]] = {}
    for r in sorted(rows, key=styles.order):
        name = series_label(r, styles, device=False)  # the panel is one device's
        if several:
            name += f" ({r.op} {r.dtype})"
        series.setdefault(name, []).append(r)
    return series


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
    for name, members in _roofline_series(rows, styles).items():
        members = sorted(members, key=lambda r: intensity[id(r)])
        axes.plot([intensity[id(r)] for r in members], [achieved[id(r)] for r in members],
                  label=text(name), **styles.line(members[0], len(members) > 1, 0.9))
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    if rates:  # room above the highest roof for its label
        bottom, top = axes.get_ylim()
        axes.set_ylim(bottom, max(top, max(rates.values()) / 1e12 * 1.6))
    _plain_axis(axes.xaxis, [low, high])
    _plain_axis(axes.yaxis, [v for v in achieved.values()]
                + [rate / 1e12 for rate in rates.values()])
    axes.set_title(text(styles.device_title(device, lines=True)), fontsize="medium")
    axes.set_xlabel("arithmetic intensity (FLOP/byte), log scale")
    axes.set_ylabel(f"achieved {_ops_unit(rows)}, log scale")
    axes.grid(True, which="major", alpha=0.35)
    axes.grid(True, which="minor", alpha=0.12)
    _legend(target, axes)


# ---------------------------------------------------------------- figures


def _grid(count: int) -> tuple[int, int]:
    columns = 1 if count == 1 else 2
    return math.ceil(count / columns), columns


def _row_heights(legend_rows: Sequence[int], columns: int) -> list[float]:
    """Return each grid row's height in inches: a panel and its tallest legend."""
    heights = []
    for start in range(0, len(legend_rows), columns):
        tallest = max(legend_rows[start:start + columns], default=0)
        heights.append(PANEL_INCHES[1] + LEGEND_ROW_INCHES * tallest)
    return heights


def _empty(target: Figure | SubFigure, message: str) -> None:
    axes = target.add_subplot()
    axes.set_axis_off()
    axes.text(0.5, 0.5, message, ha="center", va="center", wrap=True)


def _throughput_size(results: Sequence[BenchmarkResult], styles: Styles
                     ) -> tuple[int, float]:
    panels = throughput_panels(results)
    columns = _grid(len(panels) or 1)[1]
    heights = _row_heights([_throughput_legend_rows(m, styles) for m in panels.values()]
                           or [0], columns)
    return columns, sum(heights) + TITLE_INCHES


def _roofline_size(results: Sequence[BenchmarkResult], styles: Styles) -> tuple[int, float]:
    rows = roofline_rows(results)
    devices = _devices(rows)
    columns = _grid(len(devices) or 1)[1]
    legends = [_legend_rows(list(_roofline_series(
        [r for r in rows if _identity(r) == identity], styles))) for identity in devices]
    return columns, sum(_row_heights(legends or [0], columns)) + TITLE_INCHES


def throughput_figure(results: Sequence[BenchmarkResult]) -> Figure:
    """Return the throughput figure: one panel per op and dtype."""
    styles = Styles.of(results)
    columns, height = _throughput_size(results, styles)
    figure = _new_figure(PANEL_INCHES[0] * columns, height)
    draw_throughput(figure, results, styles)
    return figure


def roofline_figure(results: Sequence[BenchmarkResult]) -> Figure:
    """Return the roofline figure: one panel per device."""
    styles = Styles.of(results)
    columns, height = _roofline_size(results, styles)
    figure = _new_figure(PANEL_INCHES[0] * columns, height)
    draw_roofline(figure, results, styles)
    return figure


def both_figure(results: Sequence[BenchmarkResult]) -> Figure:
    """Return one figure with the throughput panels above the roofline panels (only the
    throughput, with a note, where no row counts FLOPs)."""
    styles = Styles.of(results)
    top_columns, top = _throughput_size(results, styles)
    if not roofline_rows(results):
        figure = _new_figure(PANEL_INCHES[0] * top_columns, top + 0.3)
        draw_throughput(figure, results, styles)
        figure.supxlabel(NO_ROOFLINE, fontsize="small", color="0.35")
        return figure
    bottom_columns, bottom = _roofline_size(results, styles)
    figure = _new_figure(PANEL_INCHES[0] * max(top_columns, bottom_columns), top + bottom)
    halves = figure.subfigures(2, 1, squeeze=False, height_ratios=[top, bottom])
    draw_throughput(halves[0][0], results, styles)
    draw_roofline(halves[1][0], results, styles)
    return figure


def panel_figures(results: Sequence[BenchmarkResult]) -> list[tuple[str, Figure]]:
    """Return each panel as a figure of its own, with its alt text: the throughput panels,
    then a roofline per device. A page lays them out to its width (two a row on a screen,
    one on a phone); one style for all, so a variant has one colour throughout."""
    styles = Styles.of(results)
    figures: list[tuple[str, Figure]] = []
    width, height = PAGE_PANEL_INCHES
    for (op, dtype), members in throughput_panels(results).items():
        legend = _throughput_legend_rows(members, styles, width)
        figure = _new_figure(width, height + LEGEND_ROW_INCHES * legend)
        draw_throughput_panel(figure, op, dtype, members, styles)
        figures.append((f"throughput of {op} {dtype} against problem size", figure))
    rows = roofline_rows(results)
    for identity, device in _devices(rows).items():
        members = [r for r in rows if _identity(r) == identity]
        legend = _legend_rows(list(_roofline_series(members, styles)), width)
        figure = _new_figure(width, height + LEGEND_ROW_INCHES * legend)
        draw_roofline_panel(figure, device, members, styles)
        figures.append((f"roofline of {styles.device_title(device)}", figure))
    return figures


def figure_of(kind: str, results: Sequence[BenchmarkResult]) -> Figure:
    """Return the figure of a --kind: throughput, roofline or both."""
    makers = {"throughput": throughput_figure, "roofline": roofline_figure,
              "both": both_figure}
    if kind not in makers:
        raise UsageError(f"--kind {kind!r}: expected one of {', '.join(KINDS)}")
    return makers[kind](results)


def check_suffix(path: Path) -> str:
    """Return the format a path's suffix names; another suffix is a usage error."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise UsageError(f"-o {path}: cannot tell the format from {path.suffix or 'no suffix'}"
                         f"; use {', '.join(FORMATS)}")
    return fmt


def save(figure: Figure, path: Path | str) -> None:
    """Write a figure as PNG, SVG or PDF, chosen by the path's suffix."""
    path = Path(path)
    fmt = check_suffix(path)
    with replacing(path, "-o", "wb") as stream:  # a failed plot leaves the old file
        figure.savefig(stream, format=fmt, dpi=150)


_PROLOG = re.compile(r"\A\s*<\?xml[^>]*\?>\s*(<!DOCTYPE[^>]*>\s*)?")
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
_NAMESPACES = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')
_SIZE = re.compile(r'\s(width|height)="[^"]*"')


def svg_text(figure: Figure) -> str:
    """Return the figure as an <svg> element to put inline in HTML.

    The XML prolog, the RDF metadata and the namespace declarations go: the HTML parser
    puts <svg> in its namespace anyway, and the page then names no URL at all. The fixed
    size goes too, so that CSS scales the figure to the page.
    """
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    svg = _METADATA.sub("", _PROLOG.sub("", buffer.getvalue().decode("utf-8")))
    start = svg.index("<svg")
    end = svg.index(">", start)
    root = _SIZE.sub("", _NAMESPACES.sub("", svg[start:end]))
    return svg[:start] + root + svg[end:]


# ---------------------------------------------------------------- comparison


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


def change_figure(bars: Sequence[ChangeBar]) -> Figure:
    """Return the changes as horizontal bars, one a benchmark in the table's order, coloured
    by verdict, each over the grey band of its threshold, its name above it and its verdict
    beside it (names above the bars leave the bars the figure's whole width: a phone)."""
    from matplotlib.transforms import blended_transform_factory

    figure = _new_figure(PAGE_PANEL_INCHES[0], 1.2 + 0.5 * len(bars))
    axes = figure.add_subplot()
    positions = [float(y) for y in range(len(bars))][::-1]  # the first row on top
    for y, bar in zip(positions, bars):
        axes.barh(y, 2 * bar.threshold * 100, left=-bar.threshold * 100, height=0.5,
                  color="0.88", zorder=1)
    values = [bar.change * 100 for bar in bars]
    colours = [VERDICT_COLOURS.get(bar.style, VERDICT_COLOURS[""]) for bar in bars]
    axes.barh(positions, values, height=0.34, zorder=2, color=colours)
    reach = max([abs(v) for v in values] + [bar.threshold * 100 for bar in bars] + [1.0])
    left_edge = blended_transform_factory(axes.transAxes, axes.transData)
    for y, bar, value, colour in zip(positions, bars, values, colours):
        axes.text(0.01, y + 0.3, text(bar.label), transform=left_edge, fontsize="small",
                  va="bottom", ha="left", color="0.15", clip_on=False)
        axes.annotate(text(bar.verdict), (value, y), textcoords="offset points",
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
