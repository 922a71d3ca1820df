"""Whole figures from panels (sized by their legends), and writing them: files and SVG text."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from cudabench.common.outfiles import replacing
from cudabench.errors import UsageError
from cudabench.render.terminal import stderr_console
from cudabench.results.model import BenchmarkResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure
from cudabench.render.plot.roofline import (
    draw_roofline,
    draw_roofline_panel,
    roofline_legend_rows,
)
from cudabench.render.plot.selection import HOW_TO_SEE, Choice, drawn, select, styles_of
from cudabench.render.plot.style import (
    FORMATS,
    KINDS,
    LEGEND_ROW_INCHES,
    NO_ROOFLINE,
    PAGE_PANEL_INCHES,
    PANEL_INCHES,
    TITLE_INCHES,
    Styles,
    device_identity,
    devices_of,
    grid_shape,
    new_figure,
    roofline_rows,
    row_heights,
)
from cudabench.render.plot.throughput import (
    draw_throughput,
    draw_throughput_panel,
    throughput_legend_rows,
    throughput_panels,
)


def _throughput_size(results: Sequence[BenchmarkResult], styles: Styles
                     ) -> tuple[int, float]:
    panels = throughput_panels(results)
    columns = grid_shape(len(panels) or 1)[1]
    heights = row_heights([throughput_legend_rows(m, styles) for m in panels.values()]
                           or [0], columns)
    return columns, sum(heights) + TITLE_INCHES


def _roofline_size(results: Sequence[BenchmarkResult], styles: Styles) -> tuple[int, float]:
    rows = roofline_rows(results)
    devices = devices_of(rows)
    columns = grid_shape(len(devices) or 1)[1]
    legends = [roofline_legend_rows([r for r in rows if device_identity(r) == identity], styles)
               for identity in devices]
    return columns, sum(row_heights(legends or [0], columns)) + TITLE_INCHES


def throughput_figure(results: Sequence[BenchmarkResult]) -> Figure:
    """Return the throughput figure: one panel per op and dtype."""
    return _throughput_figure(*drawn(results))


def _throughput_figure(results: Sequence[BenchmarkResult], styles: Styles) -> Figure:
    columns, height = _throughput_size(results, styles)
    figure = new_figure(PANEL_INCHES[0] * columns, height)
    draw_throughput(figure, results, styles)
    return figure


def roofline_figure(results: Sequence[BenchmarkResult]) -> Figure:
    """Return the roofline figure: one panel per device."""
    return _roofline_figure(*drawn(results))


def _roofline_figure(results: Sequence[BenchmarkResult], styles: Styles) -> Figure:
    columns, height = _roofline_size(results, styles)
    figure = new_figure(PANEL_INCHES[0] * columns, height)
    draw_roofline(figure, results, styles)
    return figure


def both_figure(results: Sequence[BenchmarkResult]) -> Figure:
    """Return one figure with the throughput panels above the roofline panels (only the
    throughput, with a note, where no row counts FLOPs)."""
    return _both_figure(*drawn(results))


def _both_figure(results: Sequence[BenchmarkResult], styles: Styles) -> Figure:
    top_columns, top = _throughput_size(results, styles)
    if not roofline_rows(results):
        figure = new_figure(PANEL_INCHES[0] * top_columns, top + 0.3)
        draw_throughput(figure, results, styles)
        figure.supxlabel(NO_ROOFLINE, fontsize="small", color="0.35")
        return figure
    bottom_columns, bottom = _roofline_size(results, styles)
    figure = new_figure(PANEL_INCHES[0] * max(top_columns, bottom_columns), top + bottom)
    halves = figure.subfigures(2, 1, squeeze=False, height_ratios=[top, bottom])
    draw_throughput(halves[0][0], results, styles)
    draw_roofline(halves[1][0], results, styles)
    return figure


def panel_figures(results: Sequence[BenchmarkResult]) -> list[tuple[str, Figure]]:
    """Return each panel as a figure of its own, with its alt text: the throughput panels,
    then a roofline per device. A page lays them out to its width (two a row on a screen,
    one on a phone); one style for all, so a variant has one colour throughout."""
    results, styles = drawn(results)
    figures: list[tuple[str, Figure]] = []
    width, height = PAGE_PANEL_INCHES
    for (op, dtype), members in throughput_panels(results).items():
        legend = throughput_legend_rows(members, styles, width)
        figure = new_figure(width, height + LEGEND_ROW_INCHES * legend)
        draw_throughput_panel(figure, op, dtype, members, styles)
        figures.append((f"throughput of {op} {dtype} against problem size", figure))
    rows = roofline_rows(results)
    for identity, device in devices_of(rows).items():
        members = [r for r in rows if device_identity(r) == identity]
        legend = roofline_legend_rows(members, styles, width)
        figure = new_figure(width, height + LEGEND_ROW_INCHES * legend)
        draw_roofline_panel(figure, device, members, styles)
        figures.append((f"roofline of {styles.device_title(device)}", figure))
    return figures


def left_out(results: Sequence[BenchmarkResult], how: str = HOW_TO_SEE) -> list[str]:
    """Return a line for each variant a figure of results draws in part (selection.py),
    and one for the files (or GPUs) it leaves out whole, saying how to see the rest."""
    selection = select(results)
    return [cut.line(how) for cut in selection.cuts] + (
        [selection.dropped.line(how)] if selection.dropped else [])


CHOOSE = "-p NAME=VALUE and --variant NAME draw the ones you name"  # `plot`'s flags


def figure_of(kind: str, results: Sequence[BenchmarkResult], choice: Choice = Choice()
              ) -> Figure:
    """Return the figure of a --kind: throughput, roofline or both, of the rows a choice
    kept; say on stderr what it left out of variants with too many configurations to draw
    them all."""
    makers = {"throughput": _throughput_figure, "roofline": _roofline_figure,
              "both": _both_figure}
    if kind not in makers:
        raise UsageError(f"--kind {kind!r}: expected one of {', '.join(KINDS)}")
    selection = select(results, choice)
    for cut in selection.cuts:
        stderr_console().print(Text(f"note: {cut.line()}; {CHOOSE}"), soft_wrap=True)
    if selection.dropped:
        fewer = "name fewer files, or " if selection.dropped.unit == "files" else ""
        stderr_console().print(Text(f"note: {selection.dropped.line()}; {fewer}{CHOOSE}"),
                               soft_wrap=True)
    return makers[kind](selection.rows, styles_of(selection))


def check_suffix(path: Path, flag: str = "-o") -> str:
    """Return the format a path's suffix names; another suffix is a usage error."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise UsageError(f"{flag} {path}: cannot tell the format from "
                         f"{path.suffix or 'no suffix'}; use {', '.join(FORMATS)}")
    return fmt


def save(figure: Figure, path: Path | str, flag: str = "-o") -> None:
    """Write a figure as PNG, SVG, PDF or JPEG, chosen by the path's suffix."""
    path = Path(path)
    fmt = check_suffix(path, flag)
    with replacing(path, flag, "wb") as stream:  # a failed plot leaves the old file
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
