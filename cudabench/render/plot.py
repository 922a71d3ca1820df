"""Figures of saved results: throughput against problem size, and the roofline.

matplotlib is optional (`pip install 'cudabench[plot]'`) and imported only when a figure is
made. Figures are drawn on the Agg canvas directly, never through pyplot: no display, and no
change to the backend of a process that imported us (a notebook, say).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudabench.errors import UsageError
from cudabench.insight import roofs
from cudabench.results.model import BenchmarkResult, DeviceInfo, Kind, Status
from cudabench.units import params_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

HINT = "plotting needs matplotlib: pip install 'cudabench[plot]'"
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
KINDS = ("throughput", "roofline", "both")
# Only rows whose time is believed are drawn: a failed or SUSPECT kernel's speed means nothing.
PLOTTED = frozenset({Status.PASS, Status.REF})
PANEL_INCHES = (6.0, 4.0)


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


def problem_size(result: BenchmarkResult) -> int:
    """Return the product of a result's shape (the x axis of the throughput figure)."""
    return math.prod(result.shape)


def _devices(results: Sequence[BenchmarkResult]) -> dict[Any, DeviceInfo | None]:
    return {(r.device.identity if r.device else None): r.device for r in results}


def _device_name(device: DeviceInfo | None) -> str:
    if device is None:
        return "(device not recorded)"
    where = f" at {device.pci_bus_id}" if device.pci_bus_id else ""
    return f"{device.name} (GPU {device.index}{where})"


def _series_label(r: BenchmarkResult, with_device: bool) -> str:
    params = params_text(r.params)
    label = r.variant + (f" {params}" if params != "-" else "") + (" (hot L2)" if r.hot else "")
    if with_device:
        label += f" [{_device_name(r.device)}]"
    return label


STYLES = {Kind.VARIANT: ("-", "o"), Kind.VENDOR: ("--", "s"), Kind.REFERENCE: (":", "^")}


def _grid(count: int) -> tuple[int, int]:
    columns = 1 if count == 1 else 2
    return math.ceil(count / columns), columns


def _empty(target: Figure | SubFigure, message: str) -> None:
    axes = target.add_subplot()
    axes.set_axis_off()
    axes.text(0.5, 0.5, message, ha="center", va="center", wrap=True)


def draw_throughput(target: Figure | SubFigure, results: Sequence[BenchmarkResult]) -> None:
    """Draw one panel per op and dtype: throughput against problem size, a line a series."""
    rows = plotted(results)
    several_devices = len(_devices(rows)) > 1
    panels: dict[tuple[str, str], list[BenchmarkResult]] = {}
    for r in rows:
        panels.setdefault((r.op, r.dtype), []).append(r)
    target.suptitle("Throughput against problem size")
    if not panels:
        _empty(target, "nothing to plot: no benchmark was timed and verified")
        return
    height, width = _grid(len(panels))
    for index, ((op, dtype), members) in enumerate(panels.items(), 1):
        axes = target.add_subplot(height, width, index)
        flops = any(r.flops for r in members)
        # An op that counts FLOPs is read in GFLOP/s; its copy row (no FLOPs) has no place.
        series: dict[str, list[BenchmarkResult]] = {}
        for r in members:
            if flops and not r.flops:
                continue
            series.setdefault(_series_label(r, several_devices), []).append(r)
        values = []
        for label, points in series.items():
            points.sort(key=problem_size)
            ys = [(p.gflops if flops else p.gbps) or 0.0 for p in points]
            values += ys
            line, marker = STYLES[points[0].kind]
            axes.plot([problem_size(p) for p in points], ys, linestyle=line, marker=marker,
                      label=text(label))
        _decade_at_least(axes, [problem_size(r) for points in series.values() for r in points])
        if values and min(values) > 0 and max(values) / min(values) > 50:
            axes.set_yscale("log")  # small sizes would vanish on a linear axis
        axes.set_title(text(f"{op} {dtype}"))
        axes.set_xlabel("problem size (product of the shape)")
        axes.set_ylabel("GFLOP/s" if flops else "GB/s")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize="small")


def _decade_at_least(axes: Axes, xs: Sequence[float]) -> None:
    """Log x axis spanning at least a decade: a narrower one has no major tick to label,
    and matplotlib then labels minor ticks over each other."""
    from matplotlib.ticker import NullFormatter

    axes.set_xscale("log")
    axes.xaxis.set_minor_formatter(NullFormatter())
    low, high = min(xs, default=1), max(xs, default=1)
    if low > 0 and high / low < 10:
        middle = math.sqrt(low * high)
        axes.set_xlim(middle / 10 ** 0.6, middle * 10 ** 0.6)


def draw_roofline(target: Figure | SubFigure, results: Sequence[BenchmarkResult]) -> None:
    """Draw one panel per device: achieved FLOP/s against arithmetic intensity, under the
    device's DRAM roof and the compute roofs of the units and types its rows ran on."""
    rows = [r for r in plotted(results) if r.flops and r.bytes_moved and r.kind is not
            Kind.REFERENCE]
    devices = _devices(rows)
    target.suptitle("Roofline")
    if not rows:
        _empty(target, "nothing to place: no timed, verified benchmark counts FLOPs")
        return
    height, width = _grid(len(devices))
    for index, (identity, device) in enumerate(devices.items(), 1):
        axes = target.add_subplot(height, width, index)
        members = [r for r in rows if (r.device.identity if r.device else None) == identity]
        _draw_device_roofline(axes, device, members)


def _draw_device_roofline(axes: Axes, device: DeviceInfo | None,
                          rows: Sequence[BenchmarkResult]) -> None:
    intensities = [r.flops / r.bytes_moved for r in rows]
    achieved = [r.flops / (r.median_s or math.inf) for r in rows]
    roof = roofs.Roofs.of(device) if device is not None else None
    # The roofs present: each row's unit and arithmetic type (as the tables' % of peak).
    units = dict.fromkeys((r.unit or "cuda", r.compute_type) for r in rows if r.compute_type)
    rates = {pair: rate for pair in units
             if roof is not None and (rate := roof.rate(*pair))}
    ridges = [rate / roof.dram_bps for rate in rates.values() if roof and roof.dram_bps]
    low = min(intensities + ridges) / 4
    high = max(intensities + ridges) * 4
    # Roofs are grey, labelled on the line: the colour cycle is left to the points.
    if roof is not None and roof.dram_bps:
        top = max(ridges, default=high)
        axes.plot([low, top], [low * roof.dram_bps, top * roof.dram_bps], color="0.2")
        axes.annotate(f"DRAM {roof.dram_bps / 1e9:,.0f} GB/s", (low, low * roof.dram_bps),
                      textcoords="offset points", xytext=(4, 6), fontsize="x-small",
                      rotation_mode="anchor", color="0.2")
    # Roofs of one rate (FP32 CUDA cores and FP64 tensor on Hopper) share a line and label.
    names: dict[float, list[str]] = {}
    for (unit, compute_type), rate in rates.items():
        names.setdefault(rate, []).append(roofs.label(unit, compute_type))
    for rate, labels in names.items():
        start = rate / roof.dram_bps if roof is not None and roof.dram_bps else low
        axes.plot([start, high], [rate, rate], linestyle="--", color="0.45")
        axes.annotate(text(f"{', '.join(labels)} {rate / 1e12:,.1f} TFLOP/s"),
                      (high, rate), textcoords="offset points", xytext=(-4, 3), ha="right",
                      fontsize="x-small", color="0.3")
    several = len({(r.op, r.dtype) for r in rows}) > 1
    series: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        name = f"{r.variant} ({r.op} {r.dtype})" if several else r.variant
        series.setdefault(name, []).append(i)
    for name, members in series.items():
        marker = STYLES[rows[members[0]].kind][1]
        axes.scatter([intensities[i] for i in members], [achieved[i] for i in members],
                     marker=marker, zorder=3, label=text(name))
        for i in members:
            axes.annotate(text(rows[i].variant), (intensities[i], achieved[i]),
                          textcoords="offset points", xytext=(4, 4), fontsize="x-small")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_title(text(_device_name(device)), fontsize="medium")
    axes.set_xlabel("arithmetic intensity (FLOP/byte)")
    axes.set_ylabel("achieved FLOP/s")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="x-small")


def throughput_figure(results: Sequence[BenchmarkResult]) -> Figure:
    """Return the throughput figure: one panel per op and dtype."""
    panels = len({(r.op, r.dtype) for r in plotted(results)}) or 1
    height, width = _grid(panels)
    figure = _new_figure(PANEL_INCHES[0] * width, PANEL_INCHES[1] * height + 0.5)
    draw_throughput(figure, results)
    return figure


def roofline_figure(results: Sequence[BenchmarkResult]) -> Figure:
    """Return the roofline figure: one panel per device."""
    panels = len(_devices([r for r in plotted(results) if r.flops])) or 1
    height, width = _grid(panels)
    figure = _new_figure(PANEL_INCHES[0] * width, PANEL_INCHES[1] * height + 0.5)
    draw_roofline(figure, results)
    return figure


def both_figure(results: Sequence[BenchmarkResult]) -> Figure:
    """Return one figure with the throughput panels above the roofline panels."""
    rows = plotted(results)
    top = _grid(len({(r.op, r.dtype) for r in rows}) or 1)
    bottom = _grid(len(_devices([r for r in rows if r.flops])) or 1)
    heights = [PANEL_INCHES[1] * top[0] + 0.5, PANEL_INCHES[1] * bottom[0] + 0.5]
    figure = _new_figure(PANEL_INCHES[0] * max(top[1], bottom[1]), sum(heights))
    grid = figure.add_gridspec(2, 1, height_ratios=heights)
    draw_throughput(figure.add_subfigure(grid[0]), results)
    draw_roofline(figure.add_subfigure(grid[1]), results)
    return figure


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
    try:
        figure.savefig(path, format=fmt, dpi=150)
    except OSError as exc:
        raise UsageError(f"-o {path}: cannot write: {exc}") from None


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
