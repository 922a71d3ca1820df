"""Pure statistics over timing samples: no CUDA, no Rich."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

# Scales the median absolute deviation to the standard deviation of normal data.
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Summary:
    """Summary statistics of timing samples, in seconds."""

    count: int
    median_s: float
    min_s: float
    max_s: float
    mean_s: float
    spread: float  # robust relative spread: 1.4826 * MAD / median

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return dict(self.__dict__)


def summarize(samples: Sequence[float]) -> Summary:
    """Summarise samples; raise ValueError when there are none."""
    if len(samples) == 0:
        raise ValueError("no samples to summarise")
    values = np.asarray(samples, dtype=np.float64)
    return Summary(
        count=int(values.size),
        median_s=float(np.median(values)),
        min_s=float(values.min()),
        max_s=float(values.max()),
        mean_s=float(values.mean()),
        spread=relative_spread(values),
    )


def relative_spread(samples: Sequence[float] | np.ndarray) -> float:
    """Return 1.4826 * MAD / median: the relative standard deviation, robust to outliers."""
    values = np.asarray(samples, dtype=np.float64)
    if values.size < 2:
        return 0.0
    median = float(np.median(values))
    if median <= 0:
        return math.inf
    return MAD_TO_SIGMA * float(np.median(np.abs(values - median))) / median


def median_precision(samples: Sequence[float]) -> float:
    """Return the relative half-width of an approximate 95% confidence interval of the median.

    Uses the median's asymptotic standard error, 1.2533 sigma / sqrt(n), with the robust
    spread standing in for sigma / median; infinite below 2 samples.
    """
    n = len(samples)
    if n < 2:
        return math.inf
    return 1.96 * 1.2533 * relative_spread(samples) / math.sqrt(n)


def pooled_precision(samples: Sequence[float], round_medians: Sequence[float] = ()) -> float:
    """Return median_precision of a row's samples, or of its rounds' medians where that is
    wider: samples pooled from rounds (--rounds) are not independent (each round has its
    own placement and moment), so the median is known no better than the rounds agree."""
    precision = median_precision(samples)
    if len(round_medians) >= 2:
        precision = max(precision, median_precision(round_medians))
    return precision


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> float:
    """Return the two-sided p-value of the Mann-Whitney U test that x and y differ in location.

    Normal approximation with tie correction and continuity correction, as SciPy's
    `mannwhitneyu(method="asymptotic")`; fine for the 10+ samples per side cudabench takes.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples must be non-empty")
    combined = np.concatenate([a, b])
    ranks = _average_ranks(combined)
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    _, counts = np.unique(combined, return_counts=True)
    n = n1 + n2
    tie_term = float((counts**3 - counts).sum()) / (n * (n - 1)) if n > 1 else 0.0
    return _u_p_value(u1, n1, n2, tie_term)


def u_p_value(u: float, n1: int, n2: int) -> float:
    """Return mann_whitney_u's p-value for a U of u between n1 and n2 samples with no ties
    (what --power and the smallest reachable p are worked out from)."""
    return _u_p_value(u, n1, n2, 0.0)


def _u_p_value(u: float, n1: int, n2: int, tie_term: float) -> float:
    variance = n1 * n2 / 12.0 * ((n1 + n2 + 1) - tie_term)
    if variance <= 0:
        return 1.0  # every value equal: no evidence of a difference
    z = (abs(u - n1 * n2 / 2.0) - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0)))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(values.size, dtype=np.float64)
    sorted_values = values[order]
    i = 0
    while i < values.size:
        j = i
        while j + 1 < values.size and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0  # ties share their average rank
        i = j + 1
    return ranks
