"""Thresholds from history: how large a change a gate should call real, and what it can see.

`--threshold auto` sets a benchmark's threshold to a multiple of how much its median moves
from run to run on that GPU model (never below a floor): a kernel whose median wanders by
1% between runs gets a 3% gate, a rock-steady one the floor. With too little history the
floor is all there is, and the source text says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.analysis.verdicts import DEFAULT_ALPHA, MAX_THRESHOLD
from cudabench.common.units import format_percent
from cudabench.history.records import Benchmark
from cudabench.history.steps import noise
from cudabench.history.store import Store
from cudabench.results.model import BenchmarkResult

DEFAULT_FLOOR = 0.02
# The most `auto` grows to: a noisy history (a bad week of neighbours on the GPU) once raised
# a gate to 302%, so that a 2x slowdown read as "same". Past the cap the gate says so.
DEFAULT_CAP = 0.25
DEFAULT_MULTIPLE = 3.0
DEFAULT_MIN_RUNS = 5
DEFAULT_LAST = 20  # the runs the spread is taken over: recent enough to be today's machine
DEFAULT_POWER = 0.8


def between_run_spread(medians: Sequence[float]) -> float:
    """Return the relative standard deviation of a run's median, from run-to-run changes.

    Taken from successive differences of log medians (1.4826 MAD / sqrt 2), so that one
    step in the window (a kernel made faster) does not read as noise.
    """
    values = np.asarray(medians, dtype=np.float64)
    values = values[np.isfinite(values) & (values > 0)]
    return math.expm1(noise(np.log(values))) if values.size >= 3 else 0.0


def threshold_from_medians(medians: Sequence[float], floor: float = DEFAULT_FLOOR,
                           multiple: float = DEFAULT_MULTIPLE,
                           min_runs: int = DEFAULT_MIN_RUNS,
                           cap: float = DEFAULT_CAP, cap_from: str = "--max-threshold"
                           ) -> tuple[float, str]:
    """Return (threshold, where it came from) for a benchmark's recent per-run medians:
    multiple x their spread, at least floor and at most cap (cap_from: what set it)."""
    if not 0 < floor <= cap < MAX_THRESHOLD or multiple <= 0 or min_runs < 3:
        raise ValueError("0 < floor <= cap < 10, multiple > 0 and min_runs >= 3")
    runs = len(medians)
    if runs < min_runs:
        return floor, (f"floor {format_percent(floor)}: only {runs} run{'s' if runs != 1 else ''}"
                       f" in history (auto needs {min_runs})")
    spread = between_run_spread(medians)
    scaled = multiple * spread
    source = f"history: {runs} runs, spread {spread * 100:.2g}%"
    if scaled > cap:
        return cap, (f"{source} x {multiple:g} = {format_percent(scaled)}, capped at "
                     f"{format_percent(cap)} ({cap_from})")
    if scaled <= floor:
        return floor, f"{source} ({multiple:g} x spread below the {format_percent(floor)} floor)"
    return scaled, f"{source} x {multiple:g}"


def auto_threshold(store: Store, benchmark: Benchmark | BenchmarkResult, gpu_model: str,
                   floor: float = DEFAULT_FLOOR, multiple: float = DEFAULT_MULTIPLE,
                   min_runs: int = DEFAULT_MIN_RUNS, last: int = DEFAULT_LAST,
                   exclude_run: int | None = None, cap: float = DEFAULT_CAP
                   ) -> tuple[float, str]:
    """Return (threshold, source text) for a benchmark on a GPU model from the store.

    benchmark is a Benchmark or the result whose benchmark it is (its L2 flush included: medians
    after another flush are not its history). The threshold is multiple x the between-run
    spread of its last `last` medians (at least floor) when the store holds min_runs runs or
    more, else the floor.
    """
    bench = benchmark if isinstance(benchmark, Benchmark) else Benchmark.of(benchmark)
    points = store.series(bench, gpu_model, last=last, exclude_run=exclude_run)
    return threshold_from_medians([p.median_s for p in points], floor, multiple, min_runs,
                                  cap)


def smallest_detectable(threshold: float, spread: float, samples: int,
                        baseline_samples: int | None = None, alpha: float = DEFAULT_ALPHA,
                        power: float = DEFAULT_POWER) -> float:
    """Return the smallest slowdown compare's gate flags with the given power.

    compare calls a change slower when it exceeds the threshold and the Mann-Whitney U
    test on the raw samples gives p < alpha. For samples whose relative standard
    deviation is `spread` (stats.relative_spread), the rank test reaches p < alpha with
    probability `power` once P(current > baseline) - 1/2 clears (z_alpha + z_power) times
    the U statistic's standard deviation over n1 n2; under normal noise that probability
    is Phi(shift / (spread sqrt 2)). Returns max(threshold, that shift) as a relative
    change, or inf when so few samples can never reach p < alpha.
    """
    n1 = baseline_samples if baseline_samples is not None else samples
    n2 = samples
    if n1 < 1 or n2 < 1 or not 0 < alpha < 1 or not 0 < power < 1 or spread < 0:
        raise ValueError("samples >= 1, alpha and power in (0, 1), spread >= 0")
    normal = NormalDist()
    sd_u = math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12.0)
    need = ((normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)) * sd_u + 0.5) / (n1 * n2)
    if need >= 0.5:
        return math.inf
    shift = normal.inv_cdf(0.5 + need) * math.log1p(spread) * math.sqrt(2)
    return max(threshold, math.expm1(shift))
