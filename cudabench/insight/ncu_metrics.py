"""Nsight Compute counters as the tables show them: labels, and the duration cross-check.

Collecting them (running ncu) is cudabench.observers.ncu; this part needs no GPU, so the
renderers and `report` use it on saved files.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping

DURATION = "gpu__time_duration.sum"
# The default set, in table order: label -> metric. The DRAM metric is the one ncu's own
# SpeedOfLight section names "DRAM Throughput" for CC 7.5 to 10.0, Hopper included.
DEFAULT_METRICS: Mapping[str, str] = types.MappingProxyType({
    "bank confl. ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "bank confl. st": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "DRAM %": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "SM %": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "L2 hit": "lts__t_sector_hit_rate.pct",
    "regs": "launch__registers_per_thread",
    "ncu time": DURATION,
})
_LABELS = {metric: label for label, metric in DEFAULT_METRICS.items()} | {
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM %",
}
def short_label(metric: str) -> str:
    """Return a compact column title for a metric: a short one for known metrics."""
    return _LABELS.get(metric, metric)


def column_title(metric: str, unit: str = "") -> str:
    """Return a metric's column title: a known metric's short label (which says its unit, or
    shows a time), else the metric with ncu's unit, as the CSV names it: `dram__bytes.sum
    (byte)` is not a count of anything else."""
    label = short_label(metric)
    return f"{label} ({unit})" if unit and label == metric else label


def duration_outliers(pairs: Mapping[str, tuple[float, float]], tolerance: float = 0.25
                      ) -> dict[str, str]:
    """Flag rows whose ncu/event time ratio strays from the other rows' median ratio by more
    than tolerance (relative).

    pairs: row -> (event median seconds, ncu duration seconds). At least 3 usable rows.
    """
    ratios = {row: ncu / event for row, (event, ncu) in pairs.items()
              if event > 0 and ncu > 0 and math.isfinite(event) and math.isfinite(ncu)}
    if len(ratios) < 3:
        return {}
    flags = {}
    for row, ratio in ratios.items():
        others = sorted(r for other, r in ratios.items() if other != row)
        middle = {others[(len(others) - 1) // 2], others[len(others) // 2]}
        # With an even count, the middle value nearer this row's: among few rows, one stray
        # row would otherwise drag the median enough to make the agreeing ones look stray.
        typical = min(middle, key=lambda r: abs(ratio / r - 1))
        if abs(ratio / typical - 1) > tolerance:
            event, ncu = pairs[row]
            flags[row] = (f"ncu's kernel time ({ncu * 1e6:.4g} us) and the event median "
                          f"({event * 1e6:.4g} us) disagree: {ratio:.2f}x, against {typical:.2f}x"
                          " for the other rows; work the events did not see would show here "
                          "first")
    return flags
