"""The throughput figure's axes: limits that leave every marker whole."""

from __future__ import annotations

import dataclasses

import pytest

from cudabench.render import plot
from cudabench.results import load_results
from test_report import DATA


def rates(axes) -> list[float]:
    return [float(y) for line in axes.get_lines() for y in line.get_ydata()]


@pytest.mark.parametrize("flat", ["equal", "a byte apart", "two series alike"])
def test_a_flat_series_top_marker_is_inside_the_linear_axis(flat):
    # every value alike to the eye: matplotlib's margin, a share of their spread, was next
    # to nothing and the top limit cut the highest marker in half (equal values it widens)
    pytest.importorskip("matplotlib")
    atomic, shared_tree = load_results(DATA / "d.json").benchmarks[:2]  # 2,223 and 2,201 GB/s
    apart = flat == "a byte apart"
    rows = ([dataclasses.replace(atomic, shape=(n,), bytes_moved=atomic.bytes_moved + apart * i)
             for i, n in enumerate((1 << 20, 1 << 22, 1 << 24))]
            if flat != "two series alike" else [atomic, shared_tree])
    for figure in (plot.throughput_figure(rows), plot.panel_figures(rows)[0][1]):
        (axes,) = figure.get_axes()[:1]
        assert axes.get_yscale() == "linear"
        bottom, top = axes.get_ylim()
        highest = max(rates(axes))
        assert bottom == 0
        assert top >= highest * 1.05, (top, highest)  # a margin of the axis, not of the spread
        assert top <= highest * 1.1  # and no more: the values fill the panel
