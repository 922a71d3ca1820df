"""A comparison as plain text cells and sentences, shared by the terminal and markdown."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from cudabench.analysis.verdicts import REGRESSION, Comparison, ComparisonRow, Verdict
from cudabench.results.model import BenchmarkResult
from cudabench.common.units import (
    format_change,
    format_p_value,
    format_percent,
    format_seconds,
    params_text,
    shape_text,
)
from cudabench.render.flag_names import named

COLUMNS = ("benchmark", "params", "shape", "dtype", "baseline", "current", "change", "p-value",
           "verdict", "reason", "threshold")
RIGHT_ALIGNED = frozenset({"baseline", "current", "change", "p-value"})


def benchmark_name(op: str, variant: str, hot: bool) -> str:
    """Name a benchmark as op/variant, marked when measured with a hot cache."""
    return f"{op}/{variant}{' (hot)' if hot else ''}"


def row_cells(row: ComparisonRow, alpha: float | None = None) -> list[str]:
    """Return a row's cells, in COLUMNS order (its p-value to the digits that set it on
    its side of alpha)."""
    return [
        benchmark_name(row.op, row.variant, row.hot)
        + (f" on {row.device}" if row.device else ""), params_text(row.params),
        shape_text(row.shape), row.dtype, format_seconds(row.baseline_median_s),
        format_seconds(row.current_median_s), format_change(row.change, row.threshold),
        format_p_value(row.p_value, alpha), row.verdict.value, row.reason, threshold_text(row),
    ]


def threshold_text(row: ComparisonRow) -> str:
    """Return the gate a row used, where it came from, and (--power) what it can catch."""
    if row.verdict is Verdict.MISSING or row.threshold_source == "new":
        return "-"  # nothing was timed to hold against a threshold
    text = f"{format_percent(row.threshold)} ({named(row.threshold_source or '--threshold')})"
    if row.detectable is not None:
        catch = "never (too few samples)" if row.detectable == float("inf") \
            else f">= {format_percent(row.detectable)}"
        text += f"; catches {catch}"
    return text


def describe(result: BenchmarkResult, gpu: str = "") -> str:
    """Describe a benchmark in one line: name, params, shape, dtype, status and median, and
    its GPU model where it is not gpu (its file's: a row of a model one file lacks)."""
    model = result.device.name if result.device is not None else ""
    return (f"{benchmark_name(result.op, result.variant, result.hot)} "
            f"{params_text(result.params)} {shape_text(result.shape)} {result.dtype} "
            f"({result.status.value}, median {format_seconds(result.median_s)})"
            + (f" on {model}" if gpu and model and model != gpu else ""))


def gate_head(c: Comparison) -> tuple[str, bool]:
    """Return the summary line's head and whether the gate failed: the regressions, and
    a current file that stopped early (it fails the gate without a slower row; its missing
    rows are regressions, which must not hide why they are missing), else none."""
    regressed = len(c.regressions)
    if regressed:
        # why (stopped, or still being written) is the error line's under the summary
        stopped = "; the current run is incomplete" if c.current_incomplete else ""
        return f"{regressed} regression{'s' if regressed != 1 else ''}{stopped}", True
    if c.current_incomplete:
        return "gate failed, the current run is incomplete", True
    return "no regression", False


class Judged(Protocol):
    """A judged row, of compare or of history check."""

    @property
    def verdict(self) -> Verdict: ...

    @property
    def regressed(self) -> bool: ...


def verdict_counts(rows: Iterable[Judged]) -> tuple[list[str], str]:
    """Return the count of each verdict ("2 noisy") and the clause of those not gated
    ("; not gated: 2 failed (vendor-library or copy rows)", or ""), as the summary lines of
    compare and history check say them."""
    # a cuBLAS or copy row's regression verdict is counted apart: "2 regressions: 2 failed,
    # 1 missing" summed to three, one of the failed a cuBLAS row
    counts = {verdict: 0 for verdict in Verdict}
    apart = {verdict: 0 for verdict in Verdict}
    for row in rows:
        (apart if row.verdict in REGRESSION and not row.regressed else counts)[row.verdict] += 1
    ungated = ", ".join(f"{count} {verdict.value}" for verdict, count in apart.items() if count)
    # "6 regressions: 7 failed" left the reader to find the seventh
    return ([f"{count} {verdict.value}" for verdict, count in counts.items() if count],
            f"; not gated: {ungated} (vendor-library or copy rows)" if ungated else "")


NO_GPU = "no GPU recorded"  # a file of a run stopped before its first row names none


def gpu_shown(name: str) -> str:
    """Return a compared file's GPU as shown: its name, or that it records none."""
    return name or NO_GPU


def summary_text(comparison: Comparison) -> str:
    """Return the one-line summary: counts per verdict, settings and both GPUs."""
    parts, ungated = verdict_counts(comparison.rows)
    parts += [f"{len(comparison.added)} added"] if comparison.added else []
    parts += [f"{len(comparison.removed)} removed"] if comparison.removed else []
    gpus = (comparison.baseline_gpu if comparison.baseline_gpu == comparison.current_gpu
            else f"{gpu_shown(comparison.baseline_gpu)} -> "
                 f"{gpu_shown(comparison.current_gpu)}")
    counted = (", ".join(parts) or "nothing to compare") + ungated
    # a missing row has no threshold of its own ("missing"): with --threshold 5% it made
    # the summary say "auto per benchmark"
    auto = any(row.threshold_source not in ("--threshold", "missing", "new")
               for row in comparison.rows)
    gate = (f"threshold auto per benchmark (floor {format_percent(comparison.threshold)})"
            if auto else f"threshold {format_percent(comparison.threshold)}")
    return f"{counted}; {gate}, alpha {comparison.alpha:g}; GPU {gpus or '(none recorded)'}"
