"""Figures of saved results: throughput against problem size, the roofline, and a
comparison's changes.

matplotlib is optional (the `plot` extra) and imported only when a figure is
made. Figures are drawn on the Agg canvas directly, never through pyplot: no display, and no
change to the backend of a process that imported us (a notebook, say). One module per
figure: style (colours, markers, legends, axes shared by all), selection (which configurations
a figure draws: those --variant and -p chose, and of many, a few), throughput, roofline,
figures (pages of panels, saving, SVG for HTML) and change (a comparison's bars).
"""

from __future__ import annotations

from cudabench.render.plot.change import (
    MAX_BARS,
    VERDICT_COLOURS,
    ChangeBar,
    bars_drawn,
    change_figure,
)
from cudabench.render.plot.figures import (
    both_figure,
    check_suffix,
    figure_of,
    left_out,
    panel_figures,
    roofline_figure,
    save,
    svg_text,
    throughput_figure,
)
from cudabench.render.plot.roofline import (
    draw_roofline,
    draw_roofline_panel,
)
from cudabench.render.plot.selection import Choice
from cudabench.render.plot.style import (
    COLOURS,
    FORMATS,
    HINT,
    KINDS,
    NO_ROOFLINE,
    NO_THROUGHPUT,
    PLOTTED,
    Styles,
    available,
    plotted,
    problem_size,
    require,
    roofline_rows,
    series_label,
    shape_label,
    text,
)
from cudabench.render.plot.throughput import (
    draw_throughput,
    draw_throughput_panel,
    throughput_panels,
)
from cudabench.render.run_table import counts_flops  # the run table's rate reads alike

__all__ = [
    "COLOURS",
    "ChangeBar",
    "Choice",
    "FORMATS",
    "HINT",
    "KINDS",
    "MAX_BARS",
    "NO_ROOFLINE",
    "NO_THROUGHPUT",
    "PLOTTED",
    "Styles",
    "VERDICT_COLOURS",
    "available",
    "bars_drawn",
    "both_figure",
    "change_figure",
    "check_suffix",
    "counts_flops",
    "draw_roofline",
    "draw_roofline_panel",
    "draw_throughput",
    "draw_throughput_panel",
    "figure_of",
    "left_out",
    "panel_figures",
    "plotted",
    "problem_size",
    "require",
    "roofline_figure",
    "roofline_rows",
    "save",
    "series_label",
    "shape_label",
    "svg_text",
    "text",
    "throughput_figure",
    "throughput_panels",
]
