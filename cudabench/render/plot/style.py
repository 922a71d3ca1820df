"""What every figure shares: matplotlib on demand, colours and markers per variant and
device, labels, legends sized to their panel, plain-number axes.

Every panel is a subfigure holding one axes and, below it, its legend (a legend inside the
axes hides points). A variant has one colour in every panel of every figure, and its
parameter sets differ by marker, then (past the markers) by line and shade of that colour;
vendor rows are dashed, reference rows dotted; devices (and files) differ by the markers'
fill, then edge and size (Look).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cudabench.common.extras import broken, install_hint
from cudabench.common.units import params_text
from cudabench.errors import UsageError
from cudabench.results.model import BenchmarkResult, DeviceInfo, Kind, Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure


HINT = f"plotting needs matplotlib: {install_hint('plot')}"
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf", ".jpg": "jpg", ".jpeg": "jpg"}
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

LINES = {Kind.VENDOR: "--", Kind.REFERENCE: ":"}  # a variant's: ROUNDS
# A variant's parameter sets, in order; vendor and reference rows keep one marker each.
VARIANT_MARKERS = ("o", "D", "v", "P", "X", "*", "<", ">", "h", "p")
# Past the markers, a variant's next parameter sets take the next line and shade of its
# colour (darker < 0, lighter > 0): a shade, as a lone unjoined point shows no line.
ROUNDS = (("-", 0.0), ("-.", -0.45), ((0, (3, 1, 1, 1, 1, 1)), 0.45), ((0, (6, 2)), -0.7))
MAX_CONFIGS = 2 * len(VARIANT_MARKERS)  # a variant's parameter sets drawn, each its own look
KIND_MARKERS = {Kind.VENDOR: "s", Kind.REFERENCE: "^"}
FILLS = ("full", "none", "left", "bottom", "right", "top")  # a marker's fill per device
# Past the fills, a device's (or file's) marker takes the next edge, then the next size: 54
# looks, more than the series a figure holds (selection.MAX_SERIES). None: the series' colour.
EDGES = (None, "black", "0.6")
SIZES = (6.0, 9.0, 4.0)
HOT_ALPHA, HOT_WIDTH = 0.5, 0.6  # a hot-L2 series beside the cold one: paler, thinner
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
    except ImportError as exc:
        why = broken("matplotlib", exc)
        raise UsageError(f"plotting needs matplotlib, and {why}: {install_hint('plot')}"
                         if why else HINT) from None


def new_figure(width: float, height: float) -> Figure:
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


def device_identity(result: BenchmarkResult) -> Any:
    return result.device.identity if result.device else None


def fill_key(result: BenchmarkResult) -> Any:
    """What a series' marker fill tells apart: its device, and its file where a figure
    draws several (BenchmarkResult.origin)."""
    return (device_identity(result), result.origin)


def devices_of(results: Sequence[BenchmarkResult]) -> dict[Any, DeviceInfo | None]:
    return {device_identity(r): r.device for r in results}


def _device_name(device: DeviceInfo | None) -> str:
    if device is None:
        return "(device not recorded)"
    where = f" at {device.pci_bus_id}" if device.pci_bus_id else ""
    return f"{device.name} (GPU {device.index}{where})"


def _short_uuid(device: DeviceInfo) -> str:
    return device.uuid[:12] if device.uuid else f"GPU {device.index}"


def twin_tags(twins: Sequence[DeviceInfo]) -> list[str]:
    """Return a tag for each of several GPUs of one model, no two alike: the UUID's start,
    else the GPU's index, else the whole UUID (MIG instances of one GPU differ at its
    end), else the index and PCI bus; numbered where even those match."""
    ways = (_short_uuid, lambda d: f"GPU {d.index}", lambda d: d.uuid or f"GPU {d.index}",
            lambda d: f"GPU {d.index}" + (f" at {d.pci_bus_id}" if d.pci_bus_id else ""))
    for way in ways:
        tags = [way(device) for device in twins]
        if len(set(tags)) == len(tags):
            return tags
    return [f"{way(device)} #{number}" for number, device in enumerate(twins, 1)]


@dataclass(frozen=True)
class Look:
    """How a device's (or a file's) markers differ from another's: fill, edge, size."""

    fill: str
    edge: str | None
    size: float

    @classmethod
    def of(cls, index: int) -> Look:
        """Return the index-th look: each fill, then each again with the next edge, then
        with the next size (the 7th GPU had the 1st's look: fills alone are 6)."""
        turn = index // len(FILLS)
        return cls(FILLS[index % len(FILLS)], EDGES[turn % len(EDGES)],
                   SIZES[turn // len(EDGES) % len(SIZES)])


@dataclass
class Styles:
    """How each series looks, fixed once for all the panels of a figure (or a page): a
    colour per variant, a look (marker, then line and shade) per parameter set of it, a
    line per kind; a short tag per device where one figure holds several; and what the
    figure left out of each variant it drew in part (selection.py)."""

    colours: dict[str, str] = field(default_factory=dict)
    # A variant's parameter set: its place among the variant's, and of the variant's colour
    # among the variants that share it (COLOURS repeat past 14 variants).
    slots: dict[tuple[str, str], int] = field(default_factory=dict)
    tags: dict[Any, str] = field(default_factory=dict)
    # a device's (or file's) marker: its fill, edge colour and size (Look), none alike
    fills: dict[Any, Look] = field(default_factory=dict)
    hot_beside_cold: bool = False  # both kinds of series: the hot ones drawn paler
    cuts: dict[tuple[str, str], str] = field(default_factory=dict)  # (op, variant): a note
    # where a variant is drawn in part: its default, named so (op, variant, parameters)
    defaults: set[tuple[str, str, str]] = field(default_factory=set)
    dropped: str = ""  # the files (or GPUs) the figure left out whole, said in every legend

    @classmethod
    def of(cls, results: Sequence[BenchmarkResult]) -> Styles:
        rows = plotted(results)
        styles = cls()
        by_variant: dict[str, dict[tuple[tuple[int, ...], str], None]] = {}
        for r in rows:
            if r.variant not in styles.colours:
                styles.colours[r.variant] = COLOURS[len(styles.colours) % len(COLOURS)]
            by_variant.setdefault(r.variant, {})[tuple(r.params.values()),
                                                 params_text(r.params)] = None
        # Sorted once per variant: sorting each row's variant again was quadratic (12 s for
        # a search file of 3,360 rows).
        for number, (variant, entries) in enumerate(by_variant.items()):
            # a variant whose colour another took before starts past that one's looks
            start = number // len(COLOURS) * MAX_CONFIGS
            styles.slots.update(((variant, text), start + index)
                                for index, (_, text) in enumerate(sorted(entries)))
        styles.hot_beside_cold = len({r.hot for r in rows}) > 1
        for index, key in enumerate(dict.fromkeys(fill_key(r) for r in rows)):
            styles.fills[key] = Look.of(index)
        devices = devices_of(rows)
        if len(devices) > 1:
            models: dict[str, list[DeviceInfo]] = {}
            for identity, device in devices.items():
                if device is None:
                    styles.tags[identity] = "device not recorded"
                else:
                    models.setdefault(device.name, []).append(device)
            for name, twins in models.items():
                # the same model twice: its UUID (or index) tells them apart
                tags = twin_tags(twins) if len(twins) > 1 else [name]
                styles.tags.update((d.identity, tag) for d, tag in zip(twins, tags))
        return styles

    def _round(self, r: BenchmarkResult) -> tuple[Any, float]:
        slot = self.slots.get((r.variant, params_text(r.params)), 0)
        return ROUNDS[slot // len(VARIANT_MARKERS) % len(ROUNDS)]

    def colour(self, r: BenchmarkResult) -> str:
        colour = self.colours.get(r.variant, COLOURS[0])
        return _shade(colour, self._round(r)[1]) if r.kind is Kind.VARIANT else colour

    def marker(self, r: BenchmarkResult) -> str:
        slot = self.slots.get((r.variant, params_text(r.params)), 0)
        return KIND_MARKERS.get(r.kind, VARIANT_MARKERS[slot % len(VARIANT_MARKERS)])

    def note(self, rows: Iterable[BenchmarkResult]) -> str:
        """Say what the figure left out of the variants among rows, and the files (or GPUs)
        it left out ('' where nothing)."""
        return "\n".join([*dict.fromkeys(self.cuts[key] for r in rows
                                          if (key := (r.op, r.variant)) in self.cuts),
                          *([self.dropped] if self.dropped else [])])

    def tag(self, r: BenchmarkResult) -> str:
        return self.tags.get(device_identity(r), "")

    def line(self, r: BenchmarkResult, joined: bool = True, width: float = 1.5
             ) -> dict[str, Any]:
        """Return a series' plot keywords: colour, marker and its fill, line style. A
        variant is drawn over the vendor and reference rows it may sit on; beside cold
        series, a hot-L2 one paler and thinner (the two of a variant looked alike)."""
        paler = r.hot and self.hot_beside_cold
        look = self.fills.get(fill_key(r), Look.of(0))
        edge = {"markeredgecolor": look.edge} if look.edge else {}
        return {"color": self.colour(r), "marker": self.marker(r),
                "fillstyle": look.fill, "markersize": look.size, **edge,
                "linestyle": LINES.get(r.kind, self._round(r)[0]) if joined else "none",
                "linewidth": width * (HOT_WIDTH if paler else 1.0),
                "alpha": HOT_ALPHA if paler else 1.0,
                "zorder": 3 if r.kind is Kind.VARIANT else 2.5}

    def order(self, r: BenchmarkResult) -> tuple[Any, ...]:
        """Sort key of series: variants, then vendor, then reference rows; a variant's
        parameter sets in order; devices (and files) in order."""
        kinds = (Kind.VARIANT, Kind.VENDOR, Kind.REFERENCE)
        key = fill_key(r)
        return (kinds.index(r.kind), list(self.colours).index(r.variant)
                if r.variant in self.colours else 0, tuple(r.params.values()),
                list(self.fills).index(key) if key in self.fills else 0,
                r.hot)

    def device_title(self, device: DeviceInfo | None, lines: bool = False) -> str:
        """Name a device for a panel title (on two lines with `lines`), with its tag (its
        UUID) where the figure holds two of its model."""
        if device is None:
            return _device_name(device)
        where = f" at {device.pci_bus_id}" if device.pci_bus_id else ""
        tag = self.tags.get(device.identity, device.name)
        said = (device.name, f"GPU {device.index}", f"GPU {device.index}{where}")
        which = f"GPU {device.index}{where}{', ' + tag if tag not in said else ''}"
        return f"{device.name}{chr(10) if lines else ' '}({which})"


def _shade(colour: str, amount: float) -> str:
    """Return a '#rrggbb' colour mixed with black (amount < 0) or white (amount > 0)."""
    if not amount:
        return colour
    end = 255 if amount > 0 else 0
    channels = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(c + (end - c) * abs(amount)):02x}" for c in channels)


def series_label(r: BenchmarkResult, styles: Styles, device: bool = True) -> str:
    """Name a series: variant, parameters, hot L2, the device where there are several, and
    the file where a figure draws several (a baseline's and a current run's rows of one
    GPU made one series, a vertical line between them)."""
    params = params_text(r.params)
    default = (r.op, r.variant, params) in styles.defaults and r.kind is Kind.VARIANT
    label = r.variant + (f" {params}" if params != "-" else "") + (
        " (default)" if default else "") + (" (hot L2)" if r.hot else "")
    tags = [styles.tag(r) if device else "", r.origin]
    return label + "".join(f" [{tag}]" for tag in tags if tag)


def legend_below(target: Figure | SubFigure, axes: Axes, note: str = "") -> int:
    """Put the axes' legend under the panel, in as many columns as its labels allow, the
    note (what the figure left out) as its title; return its number of rows."""
    handles, labels = axes.get_legend_handles_labels()
    inches = target.bbox.width / target.figure.dpi
    if handles:
        title = "\n".join(_wrapped(note.splitlines(), inches)) if note else None
        target.legend(handles, _wrapped(labels, inches), loc="outside lower center",
                      ncols=_legend_columns(labels, inches), fontsize="small", frameon=False,
                      title=title, title_fontsize="small")
    return legend_rows(labels, inches, note)


def _wrapped(labels: Sequence[str], inches: float) -> list[str]:
    """Return the labels, each longer than a panel's width folded into lines that fit: a
    page's narrow panel cut a long one ("ync_double_buffer BM=128 ...") at both edges."""
    chars = max(16, int(inches * LEGEND_CHARS_PER_INCH) - 8)  # less the marker's room
    return [textwrap.fill(label, chars) if len(label) > chars else label for label in labels]


def _legend_columns(labels: Sequence[str], inches: float = PANEL_INCHES[0]) -> int:
    """Return how many columns of labels fit a panel's width."""
    chars = int(inches * LEGEND_CHARS_PER_INCH)
    widest = max((len(line) for label in _wrapped(labels, inches)
                  for line in label.splitlines()), default=0)
    return max(1, min(3, len(labels), chars // (widest + 8)))


def legend_rows(labels: Sequence[str], inches: float = PANEL_INCHES[0], note: str = ""
                ) -> int:
    """Return how many lines of text the legend of labels (and its note) takes under a
    panel."""
    if not labels:
        return 0
    lines = [label.count("\n") + 1 for label in _wrapped(labels, inches)]
    title = sum(line.count("\n") + 1 for line in _wrapped(note.splitlines(), inches))
    columns = _legend_columns(labels, inches)
    if columns == 1:
        return title + sum(lines)
    return title + math.ceil(len(labels) / columns) * max(lines)


def _plain(value: float, _position: object = None) -> str:
    """Tick text as people read numbers: 1,000 and 0.25, not 10^3 and 2.5x10^-1."""
    if value == 0:
        return "0"
    if abs(value) >= 1:
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
    return f"{value:.3g}"


def plain_axis(axis: Any, values: Sequence[float] = ()) -> None:
    """Plain tick text; on a log axis spanning under two and a half decades, ticks at 1, 2
    and 5 of each decade too (else a narrow range shows one label, or none)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if axis.get_scale() == "log":
        low, high = axis.get_view_interval() if not values else (min(values), max(values))
        if low > 0 and high / low < 10 ** 2.5:
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(_plain))
    axis.set_minor_formatter(NullFormatter())


def grid_shape(count: int) -> tuple[int, int]:
    columns = 1 if count == 1 else 2
    return math.ceil(count / columns), columns


def row_heights(legend_rows: Sequence[int], columns: int) -> list[float]:
    """Return each grid row's height in inches: a panel and its tallest legend."""
    heights = []
    for start in range(0, len(legend_rows), columns):
        tallest = max(legend_rows[start:start + columns], default=0)
        heights.append(PANEL_INCHES[1] + LEGEND_ROW_INCHES * tallest)
    return heights


def empty_panel(target: Figure | SubFigure, message: str) -> None:
    axes = target.add_subplot()
    axes.set_axis_off()
    axes.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
