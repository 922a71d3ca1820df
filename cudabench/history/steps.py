"""Steps and drifts in a series of per-commit medians: pure functions, no store, no Rich.

The method, on y = log(median) (a relative change is a difference there):

1. Noise: sigma, the robust standard deviation of one point, from the first differences
   (1.4826 * MAD(diff) / sqrt 2): a step or a slope moves few differences, or all of them
   by the same amount, so neither inflates it.
2. Outliers: a point farther than max(6 sigma, the threshold) from the running median of
   the 5 points around it is one slow (or fast) run, not a new level; it is set to that
   median for the search. A running median of 5 keeps a level of 3 points (min_size), so
   a real step survives it.
3. Steps, by binary segmentation: in a segment, every split leaving min_size points a side
   is scored by the difference of the two sides' means in standard errors. The best
   scoring split is then checked locally, in a window of up to `window` points each side:
   fit y = a + b (t - tau) + c [t >= tau], a line with a jump, so that a slope (a drift)
   goes into b and only a real jump stays in c. A step needs c significant (|c| >= z
   standard errors) and not shown smaller than the threshold (|c| + 2 se >= log(1 +
   threshold)). Accepted: recurse on both sides; rejected: try the next best split.
4. Drifts, in each segment between steps: the best "flat, ramp, flat" fit (a continuous
   line through levels L and R, ramping over points i..j). A drift is a ramp over at least
   min_size commits that fits better than any shorter ramp (a shorter one is a jump), that
   reduces the squared error by at least z^2 sigma^2 against a constant, and whose total
   change reaches the threshold.

A slow drift of 1% per commit thus has no jump above the threshold (c is about 0 once the
slope is fitted) and comes out as one drift over its commit range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.common.stats import MAD_TO_SIGMA

DEFAULT_THRESHOLD = 0.05
DEFAULT_MIN_SIZE = 3
DEFAULT_Z = 4.0  # a jump this many standard errors from 0: many splits are tried
DEFAULT_WINDOW = 5  # points each side of a split in its local check
NOISE_FLOOR = 1e-4  # 0.01%: identical medians (synthetic data) must not divide by zero
SIZE_TOLERANCE = 0.1  # steps from 90% of the threshold count (a 5% threshold: 4.5%)
CI_Z = 3.0  # a step is kept unless shown below the threshold by 3 standard errors


@dataclass(frozen=True)
class Step:
    """A jump between two levels: the point at index is the first at the new level."""

    index: int
    label: str  # the commit (or run) of the first point at the new level
    change: float  # relative: new level / old level - 1
    before: float  # the old level (median of the segment before)
    after: float  # the new level (median of the segment after)
    z: float  # the local jump in standard errors


@dataclass(frozen=True)
class Drift:
    """A gradual change: points start..end move from one level to another."""

    start: int  # the first point that moved
    end: int  # the first point at the final level (the drift's last commit)
    first_label: str
    last_label: str
    change: float  # relative change over the whole range
    per_point: float  # relative change per commit (geometric mean)


@dataclass(frozen=True)
class Detection:
    """What a series holds: steps and drifts in index order, outliers, its noise."""

    steps: tuple[Step, ...]
    drifts: tuple[Drift, ...]
    outliers: tuple[int, ...]  # indexes of single runs far from their neighbours
    noise: float  # robust relative standard deviation of one point
    segments: tuple[tuple[int, int], ...]  # [start, stop) between steps

    @property
    def last_change(self) -> Step | Drift | None:
        """Return the latest step or drift (by where it ends), or None."""
        events: list[tuple[int, Step | Drift]] = [(s.index, s) for s in self.steps]
        events += [(d.end, d) for d in self.drifts]
        return max(events, key=lambda item: item[0])[1] if events else None

    @property
    def current_segment(self) -> tuple[int, int]:
        """Return [start, stop) of the points since the last step."""
        return self.segments[-1] if self.segments else (0, 0)


def detect(values: Sequence[float], labels: Sequence[str] | None = None,
           threshold: float = DEFAULT_THRESHOLD, min_size: int = DEFAULT_MIN_SIZE,
           z: float = DEFAULT_Z, window: int = DEFAULT_WINDOW) -> Detection:
    """Find steps and drifts in a series of positive values (per-commit medians), in order.

    labels name the points (commits); by default their indexes. Raises ValueError on a
    value that is not positive and finite, or labels of another length.
    """
    y = np.log(_checked(values))
    n = y.size
    names = [str(i) for i in range(n)] if labels is None else [str(x) for x in labels]
    if len(names) != n:
        raise ValueError(f"{len(names)} labels for {n} values")
    if not 0 < threshold < 10 or min_size < 2 or z <= 0 or window < min_size:
        raise ValueError("threshold in (0, 10), min_size >= 2, z > 0, window >= min_size")
    sigma = noise(y)
    if n == 0:
        return Detection((), (), (), sigma, ())
    clean, outliers = _despike(y, max(6 * sigma, math.log1p(threshold)))
    # A step of the threshold's size must be found, though noise the standard errors do not
    # see (discrete medians, slow machine drift) can show it a little smaller.
    jump_floor = math.log1p(threshold) * (1 - SIZE_TOLERANCE)
    cuts: list[tuple[int, float]] = []
    _segment(clean, 0, n, sigma, jump_floor, min_size, z, window, cuts)
    cuts.sort()
    bounds = [0, *(index for index, _ in cuts), n]
    segments = tuple(zip(bounds[:-1], bounds[1:]))
    steps = []
    for (index, score), (lo, _), (_, hi) in zip(cuts, segments[:-1], segments[1:]):
        # Levels next to the step: a drift farther away in a segment must not move them.
        before = float(np.median(clean[max(lo, index - window):index]))
        after = float(np.median(clean[index:min(hi, index + window)]))
        steps.append(Step(index=index, label=names[index], change=math.expm1(after - before),
                          before=math.exp(before), after=math.exp(after), z=score))
    drifts = []
    for lo, hi in segments:
        found = _drift(clean[lo:hi], sigma, jump_floor, min_size, z)
        if found is not None:
            start, end, total = found[0] + lo, found[1] + lo, found[2]
            drifts.append(Drift(start=start, end=end, first_label=names[start],
                                last_label=names[end], change=math.expm1(total),
                                per_point=math.expm1(total / max(end - start + 1, 1))))
    return Detection(tuple(steps), tuple(drifts), tuple(outliers), float(math.expm1(sigma)),
                     segments)


def noise(y: np.ndarray) -> float:
    """Return the robust standard deviation of one point of y, from its first differences."""
    if y.size < 3:
        return NOISE_FLOOR
    diffs = np.diff(y)
    mad = float(np.median(np.abs(diffs - np.median(diffs))))
    return max(MAD_TO_SIGMA * mad / math.sqrt(2), NOISE_FLOOR)


def _checked(values: Sequence[float]) -> np.ndarray:
    """Return values as floats, all positive and finite (medians of timings)."""
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if array.size and not (np.all(np.isfinite(array)) and np.all(array > 0)):
        raise ValueError("values must be positive and finite (medians in seconds)")
    return array


def _despike(y: np.ndarray, limit: float) -> tuple[np.ndarray, list[int]]:
    """Return y with lone outliers set to their running median, and their indexes."""
    clean = y.copy()
    outliers = []
    for i in range(y.size):
        lo, hi = max(0, i - 2), min(y.size, i + 3)
        if hi - lo < 5:
            continue  # at the ends the window is too short to tell a spike from a step
        local = float(np.median(y[lo:hi]))
        if abs(y[i] - local) > limit:
            clean[i] = local
            outliers.append(i)
    return clean, outliers


def _segment(y: np.ndarray, lo: int, hi: int, sigma: float, jump_floor: float,
             min_size: int, z: float, window: int, cuts: list[tuple[int, float]]) -> None:
    """Binary segmentation of y[lo:hi]: append (index, score) of each step found."""
    if hi - lo < 2 * min_size:
        return
    scores = _split_scores(y[lo:hi], min_size, sigma)
    for offset in np.argsort(-scores, kind="stable"):
        if scores[offset] < z:
            return  # no split left that the segment's means call significant
        tau = lo + min_size + int(offset)
        if _is_step(y, lo, hi, tau, sigma, jump_floor, window, min_size):
            cuts.append((tau, float(scores[offset])))
            _segment(y, lo, tau, sigma, jump_floor, min_size, z, window, cuts)
            _segment(y, tau, hi, sigma, jump_floor, min_size, z, window, cuts)
            return


def _is_step(y: np.ndarray, lo: int, hi: int, tau: int, sigma: float, jump_floor: float,
             window: int, min_size: int) -> bool:
    """Return whether the significant split at tau is a jump of about the threshold or more.

    Size: the difference of the means of up to `window` points each side must reach the
    floor within CI_Z standard errors (a step planted at the threshold is found though
    noise makes its estimate a little smaller). Shape: within twice that window, two flat
    levels split at tau must fit at least as well as the best ramp of min_size or more
    commits (a drift), which has one parameter more and pays 2 sigma^2 for it (AIC).
    """
    left, right = y[max(lo, tau - window):tau], y[tau:min(hi, tau + window)]
    d = float(right.mean() - left.mean())
    se_d = sigma * math.sqrt(1.0 / left.size + 1.0 / right.size)
    if abs(d) + CI_Z * se_d < jump_floor:
        return False
    start, stop = max(lo, tau - 2 * window), min(hi, tau + 2 * window)
    before, after = y[start:tau], y[tau:stop]
    step_rss = float(((before - before.mean()) ** 2).sum() + ((after - after.mean()) ** 2).sum())
    ramp = _best_ramp(y[start:stop], min_size)
    return ramp is None or step_rss <= ramp[0] + 2 * sigma**2


def _split_scores(y: np.ndarray, min_size: int, sigma: float) -> np.ndarray:
    """Return, for each split tau in [min_size, n - min_size], |mean difference| / its se."""
    n = y.size
    taus = np.arange(min_size, n - min_size + 1)
    total = np.concatenate([[0.0], np.cumsum(y)])
    left = total[taus] / taus
    right = (total[n] - total[taus]) / (n - taus)
    se = sigma * np.sqrt(1.0 / taus + 1.0 / (n - taus))
    scores: np.ndarray = np.abs(right - left) / se
    return scores


def _best_ramp(y: np.ndarray, min_length: int = 1) -> tuple[float, int, int, float] | None:
    """Return the best "flat, ramp, flat" fit of y: (squared error, i, j, total change).

    The fit is a continuous line: level L up to point i, R from point j on, straight in
    between; j - i >= min_length (1 is a plain step). None when y is too short. Every
    (i, j) at once from prefix sums: O(n^2), so long histories stay fast.
    """
    n = y.size
    if n < min_length + 1:
        return None
    centred = y - y.mean()
    t = np.arange(n, dtype=np.float64)
    p1, p2 = _prefix(t), _prefix(t * t)
    py, pty = _prefix(centred), _prefix(t * centred)
    i, j = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n), indexing="ij"))
    keep = j - i >= min_length
    i, j = i[keep], j[keep]
    fi, h = i.astype(np.float64), (j - i).astype(np.float64)
    # g(t) = 0 up to i, (t - i) / h between, 1 from j on; sums over i < t < j first.
    inner = (j - i - 1).astype(np.float64)
    s_t, s_t2 = p1[j] - p1[i + 1], p2[j] - p2[i + 1]
    s_y, s_ty = py[j] - py[i + 1], pty[j] - pty[i + 1]
    tail = (n - j).astype(np.float64)
    sum_g = (s_t - fi * inner) / h + tail
    sum_g2 = (s_t2 - 2 * fi * s_t + fi * fi * inner) / (h * h) + tail
    sum_gy = (s_ty - fi * s_y) / h + (py[n] - py[j])  # centred y: sum y = 0
    var = sum_g2 - sum_g * sum_g / n
    ok = var > 1e-12
    if not ok.any():
        return None
    rss = np.where(ok, float(centred @ centred) - sum_gy**2 / np.where(ok, var, 1.0), np.inf)
    k = int(np.argmin(rss))
    return float(rss[k]), int(i[k]), int(j[k]), float(sum_gy[k] / var[k])


def _prefix(values: np.ndarray) -> np.ndarray:
    """Return the prefix sums of values, 0 first: sum of values[a:b] = p[b] - p[a]."""
    return np.concatenate([[0.0], np.cumsum(values)])


def _drift(y: np.ndarray, sigma: float, jump_floor: float, min_size: int,
           z: float) -> tuple[int, int, float] | None:
    """Return (first moved, first at the final level, total log change) of a drift in y."""
    best = _best_ramp(y)
    if best is None:
        return None
    rss, i, j, total = best
    if j - i < min_size:
        return None  # the best ramp is short: a jump (below the step rules), not a drift
    centred = y - y.mean()
    if float(centred @ centred) - rss < (z * sigma) ** 2 or abs(total) < jump_floor:
        return None
    return i + 1, j, total
