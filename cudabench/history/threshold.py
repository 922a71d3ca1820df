"""Thresholds from history: how large a change a gate should call real, and what it can see.

`--threshold auto` sets a benchmark's threshold to a multiple of how much its median moves
from run to run on that GPU model (never below a floor): a kernel whose median wanders by
1% between runs gets a 3% gate, a rock-steady one the floor. With too little history the
floor is all there is, and the source text says so.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.analysis.verdicts import DEFAULT_ALPHA, MAX_THRESHOLD, MIN_SAMPLES
from cudabench.common.stats import u_p_value
from cudabench.common.units import format_percent
from cudabench.history.records import Benchmark, SeriesPoint
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
                           cap: float = DEFAULT_CAP, cap_from: str = "--max-threshold",
                           left_out: str = "") -> tuple[float, str]:
    """Return (threshold, where it came from) for a benchmark's recent per-run medians:
    multiple x their spread, at least floor and at most cap (cap_from: what set it;
    left_out: a note on the runs not counted, after their count)."""
    if not 0 < floor <= cap < MAX_THRESHOLD or multiple <= 0 or min_runs < 3:
        raise ValueError("0 < floor <= cap < 10, multiple > 0 and min_runs >= 3")
    runs = len(medians)
    if runs < min_runs:
        return floor, (f"floor {format_percent(floor)}: only {runs} run{'s' if runs != 1 else ''}"
                       f" in history{left_out} (auto needs {min_runs})")
    spread = between_run_spread(medians)
    scaled = multiple * spread
    source = f"history: {runs} runs{left_out}, spread {spread * 100:.2g}%"
    if scaled > cap:
        return cap, (f"{source} x {multiple:g} = {format_percent(scaled)}, capped at "
                     f"{format_percent(cap)} ({cap_from})")
    if scaled <= floor:
        return floor, f"{source} ({multiple:g} x spread below the {format_percent(floor)} floor)"
    return scaled, f"{source} x {multiple:g}"


OUTLIER_SDS = 3.0  # a run's median this many robust standard deviations out is an outlier
LEVEL_COMMITS = 3  # the commits a new level needs before it is the history


def commits(runs: Sequence[SeriesPoint]) -> set[object]:
    """Return the commits of runs (a run that names no commit counts as its own)."""
    return {p.commit if p.commit is not None else f"run {p.run_id}" for p in runs}


def established(level: Sequence[SeriesPoint], min_runs: int) -> bool:
    """Return whether a level holds min_runs runs from LEVEL_COMMITS commits or more (a
    run that names no commit counts as its own)."""
    return len(level) >= min_runs and len(commits(level)) >= LEVEL_COMMITS


def without_outliers(points: Sequence[SeriesPoint], center: float,
                     min_runs: int = DEFAULT_MIN_RUNS) -> list[SeriesPoint]:
    """Return the runs a current median must lie outside of to count as a change: all but
    the outliers (OUTLIER_SDS robust standard deviations from center). One slow run,
    recorded (`--record --check` records before it judges), must not widen the band so
    that the same slowdown passes when the job is re-run; a level that stays is a step,
    which the history follows once 3 runs show it. Runs far out on one side that are an
    established level (min_runs runs from LEVEL_COMMITS commits), among the others, are
    no outliers but a mode of the history (two runners of one model at other power limits
    sharing a store): a run at it is within the history. Fewer are not: 3 failed runs of
    3 pull-request commits between main's made the next such slowdown `noisy`."""
    deviations = [abs(p.median_s - center) for p in points]
    limit = OUTLIER_SDS * 1.4826 * statistics.median(deviations) if deviations else 0.0
    # Quantised medians, most of them equal, have no spread: every run off by any amount
    # read as an outlier. One within half the floor of the center is none.
    limit = max(limit, DEFAULT_FLOOR / 2 * abs(center))
    kept = [d <= limit for d in deviations]
    for side in (1, -1):
        far = [i for i, p in enumerate(points)
               if not kept[i] and (p.median_s - center) * side > 0]
        if established([points[i] for i in far], min_runs):
            for i in far:
                kept[i] = True
    return [p for p, keep in zip(points, kept) if keep]


def history_threshold(points: Sequence[SeriesPoint], commit: object = None,
                      floor: float = DEFAULT_FLOOR, multiple: float = DEFAULT_MULTIPLE,
                      min_runs: int = DEFAULT_MIN_RUNS, cap: float = DEFAULT_CAP,
                      cap_from: str = "--max-threshold") -> tuple[float, str]:
    """Return threshold_from_medians of a benchmark's runs (oldest first) but those at
    commit, the one judged, and the outliers (without_outliers): its re-runs, recorded as
    they failed, and one slow run, between the others' runs read as run-to-run noise and
    raised the threshold until the same slowdown passed. Where every run is the judged
    commit's (calibrate's runs, a store of one commit), they are its history. (A run that
    names no commit, outside git, is never the judged one's.)

    Nothing is left out that would leave fewer than min_runs runs (the floor, tighter than
    the noise: a noisy kernel failed with nothing changed), nor outliers that are more
    than a third of the runs (quantised medians, most of them equal, read every other run
    as an outlier): those runs are the history's noise, as before they were left out."""
    others = [p for p in points if commit is None or p.commit != commit]
    if len(others) < min_runs:
        others = list(points)
    own = len(points) - len(others)
    kept = (without_outliers(others, statistics.median(p.median_s for p in others), min_runs)
            if others else [])
    if len(kept) < min_runs or 3 * (len(others) - len(kept)) > len(others):
        kept = others
    dropped = [f"{own} of this commit"] if own else []
    if len(kept) < len(others):
        outliers = len(others) - len(kept)
        dropped.append(f"{outliers} outlier{'s' if outliers != 1 else ''}")
    left_out = f" ({' and '.join(dropped)} left out)" if dropped else ""
    return threshold_from_medians([p.median_s for p in kept], floor, multiple, min_runs, cap,
                                  cap_from, left_out)


def auto_threshold(store: Store, benchmark: Benchmark | BenchmarkResult, gpu_model: str,
                   floor: float = DEFAULT_FLOOR, multiple: float = DEFAULT_MULTIPLE,
                   min_runs: int = DEFAULT_MIN_RUNS, last: int = DEFAULT_LAST,
                   exclude_run: int | None = None, cap: float = DEFAULT_CAP,
                   commit: object = None) -> tuple[float, str]:
    """Return (threshold, source text) for a benchmark on a GPU model from the store.

    benchmark is a Benchmark or the result whose benchmark it is (its L2 flush included: medians
    after another flush are not its history). The threshold is multiple x the between-run
    spread of its last `last` medians (at least floor), those of commit (the current
    file's) and the outliers left out (history_threshold), when min_runs runs or more
    remain, else the floor.
    """
    bench = benchmark if isinstance(benchmark, Benchmark) else Benchmark.of(benchmark)
    points = store.reader(gpu_model, exclude_run=exclude_run).series(bench, last=last)
    return history_threshold(points, commit, floor, multiple, min_runs, cap)


def smallest_detectable(threshold: float, spread: float, samples: int,
                        baseline_samples: int | None = None, alpha: float = DEFAULT_ALPHA,
                        power: float = DEFAULT_POWER) -> float:
    """Return the smallest slowdown compare's gate flags with the given power.

    compare calls a change slower when it exceeds the threshold and the Mann-Whitney U
    test on the raw samples gives p < alpha, which takes U at least some count k of the
    n1 n2 pairs (stats.u_p_value). For samples whose relative standard deviation is
    `spread` (stats.relative_spread), normal in log time, this finds the shift at which
    P(U >= k) = power, U taken as normal with its mean and variance under that shift (its
    variance, not the null's, which overstates it near U = n1 n2) times the chance that
    the medians' change exceeds the threshold. Returns that shift as a relative change
    (the threshold itself without noise), or inf when the samples can never reach
    p < alpha (compare.reachable_p; fewer than MIN_SAMPLES a side are not tested at all).
    """
    n1 = baseline_samples if baseline_samples is not None else samples
    n2 = samples
    if n1 < 1 or n2 < 1 or not 0 < alpha < 1 or not 0 < power < 1 or spread < 0:
        raise ValueError("samples >= 1, alpha and power in (0, 1), spread >= 0")
    pairs = n1 * n2
    if min(n1, n2) < MIN_SAMPLES or u_p_value(pairs, n1, n2) >= alpha:
        return math.inf
    short, k = pairs // 2, pairs  # k: the smallest U with p < alpha (p falls as U rises)
    while k - short > 1:
        middle = (short + k) // 2
        short, k = (short, middle) if u_p_value(middle, n1, n2) < alpha else (middle, k)
    sigma = math.log1p(spread)
    if sigma == 0:  # no noise: every change past the threshold is seen as it is
        return threshold
    # The gate also needs the medians' change past the threshold: at the threshold itself
    # that is a coin's toss. A median's standard deviation is about sqrt(pi / 2) = 1.2533
    # times the samples' over sqrt(n); the two conditions are taken as independent.
    median_sd = 1.2533 * math.sqrt(1 / n1 + 1 / n2)
    past = math.log1p(threshold) / sigma  # the threshold in standard deviations
    normal = NormalDist()

    def caught(shift: float) -> float:
        return _u_power(shift, n1, n2, k) * normal.cdf((shift - past) / median_sd)

    low, high = 0.0, 1.0  # the shift in standard deviations: power rises with it
    while caught(high) < power:
        high *= 2
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (low, mid) if caught(mid) >= power else (mid, high)
    return math.expm1(high * sigma)


@functools.cache
def _owen_nodes() -> tuple[np.ndarray, np.ndarray]:
    """Return Gauss-Legendre nodes and weights on [0, 1/sqrt 3]."""
    nodes, weights = np.polynomial.legendre.leggauss(12)
    end = 1 / math.sqrt(3.0)
    return (nodes + 1) * end / 2, weights * end / 2


def _u_power(shift: float, n1: int, n2: int, k: int) -> float:
    """Return P(U >= k) where the current samples are shifted `shift` standard deviations
    above the baseline's, both normal: U normal, with the mean n1 n2 P(y > x) and the
    variance n1 n2 (p1 q1 + (n1 + n2 - 2)(r - q1^2)) (Lehmann), p1 = P(y > x) = 1 - q1 and
    r = P(y < x, y' < x) (x, y from either side, correlation 1/2)."""
    normal = NormalDist()
    h = shift / math.sqrt(2.0)  # y - x is normal with mean shift and variance 2
    q1 = normal.cdf(-h)
    # P(Z1 < -h, Z2 < -h) at correlation 1/2 is Phi(-h) - 2 T(h, 1/sqrt 3) (Owen's T, by
    # Gauss-Legendre: its integrand is smooth on the short interval)
    nodes, weights = _owen_nodes()
    owen = float(weights @ (np.exp(-h * h * (1 + nodes * nodes) / 2) / (1 + nodes * nodes)))
    r = max(q1 - 2 * owen / (2 * math.pi), 0.0)
    pairs = n1 * n2
    mean = pairs * (1 - q1)
    variance = pairs * ((1 - q1) * q1 + (n1 + n2 - 2) * (r - q1 * q1))
    if variance <= 0:
        return 1.0 if mean > k - 0.5 else 0.0
    return 1 - normal.cdf((k - 0.5 - mean) / math.sqrt(variance))
