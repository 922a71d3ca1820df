"""Statistics of timing samples: summaries, robust spread, precision, Mann-Whitney U."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cudabench.common.stats import (
    MAD_TO_SIGMA,
    mann_whitney_u,
    median_precision,
    pooled_precision,
    relative_spread,
    summarize,
)


def test_summarize():
    summary = summarize([3.0, 1.0, 2.0, 10.0])
    assert summary.count == 4
    assert summary.median_s == 2.5
    assert (summary.min_s, summary.max_s, summary.mean_s) == (1.0, 10.0, 4.0)
    # |x - 2.5| = 0.5, 1.5, 0.5, 7.5: their median is 1.0
    assert summary.spread == pytest.approx(MAD_TO_SIGMA * 1.0 / 2.5)
    assert summary.to_dict() == {"count": 4, "median_s": 2.5, "min_s": 1.0, "max_s": 10.0,
                                 "mean_s": 4.0, "spread": summary.spread}


def test_summarize_one_sample():
    summary = summarize((0.25,))
    assert (summary.count, summary.median_s, summary.spread) == (1, 0.25, 0.0)


def test_summarize_nothing_is_an_error():
    with pytest.raises(ValueError, match="no samples"):
        summarize([])


def test_relative_spread_of_normal_data_is_its_relative_sigma():
    samples = np.random.default_rng(1).normal(100.0, 2.0, 100_000)
    assert relative_spread(samples) == pytest.approx(0.02, rel=0.02)


def test_relative_spread_is_robust_to_one_outlier():
    samples = list(np.random.default_rng(2).normal(1.0, 0.01, 50))
    clean = relative_spread(samples)
    dirty = relative_spread([*samples, 1000.0])
    assert dirty == pytest.approx(clean, rel=0.1)
    assert np.std([*samples, 1000.0]) > 100 * np.std(samples)  # what a std would have done


@pytest.mark.parametrize(
    ("samples", "expected"),
    [([5.0] * 10, 0.0), ([], 0.0), ([2.0], 0.0), ([0.0, 0.0, 1.0], math.inf),
     ([1.0, 2.0, 3.0], MAD_TO_SIGMA / 2.0)],
)
def test_relative_spread_edges(samples, expected):
    assert relative_spread(samples) == expected


def test_median_precision_formula():
    samples = [1.0, 1.1, 0.9, 1.05, 0.95]
    expected = 1.96 * 1.2533 * relative_spread(samples) / math.sqrt(5)
    assert median_precision(samples) == pytest.approx(expected)


@pytest.mark.parametrize("samples", [[], [1.0]])
def test_median_precision_needs_two_samples(samples):
    assert median_precision(samples) == math.inf


def test_median_precision_shrinks_with_n():
    base = [1.0, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0]
    precisions = [median_precision(base * k) for k in (1, 4, 16, 64)]
    assert precisions[0] > 0
    for fewer, more in zip(precisions, precisions[1:]):
        assert more == pytest.approx(fewer / 2)  # same spread, 4x the samples


def test_median_precision_of_identical_samples_is_zero():
    assert median_precision([3e-3] * 20) == 0.0


# Reference p-values from scipy.stats.mannwhitneyu(x, y, method="asymptotic",
# alternative="two-sided") (SciPy 1.17.1), computed once; SciPy is not a test dependency.
MANN_WHITNEY_CASES = {
    "no ties": (
        [1.1, 2.3, 3.0, 4.7, 5.2, 6.1, 7.4, 8.8, 9.0, 10.5],
        [3.2, 4.4, 5.9, 6.6, 7.7, 8.1, 9.9, 11.3, 12.0, 13.6],
        0.14046504815835495,
    ),
    "ties": (
        [1, 2, 2, 3, 3, 3, 4, 5, 5, 6, 7, 7],
        [3, 4, 4, 5, 5, 6, 6, 7, 8, 8, 9, 9],
        0.023268548710176612,
    ),
    "heavy ties": ([1] * 8 + [2] * 4, [1] * 3 + [2] * 9, 0.04863047072771887),
    "unequal sizes": (
        [0.51, 0.48, 0.55, 0.47, 0.52, 0.50, 0.49],
        [0.53, 0.56, 0.58, 0.51, 0.60, 0.57, 0.54, 0.59, 0.61, 0.55, 0.62, 0.52, 0.58],
        0.0022472366887319236,
    ),
    "separated": (list(range(20)), list(range(100, 120)), 6.795615128173358e-08),
    "overlapping": (
        [10.0, 10.2, 10.1, 9.9, 10.3, 10.0, 10.1, 9.8, 10.2, 10.4, 10.1],
        [10.1, 10.0, 10.3, 10.2, 9.9, 10.1, 10.2, 10.0, 10.3, 10.1, 10.2],
        0.6876728942554107,
    ),
}


@pytest.mark.parametrize(("x", "y", "p"), MANN_WHITNEY_CASES.values(),
                         ids=MANN_WHITNEY_CASES.keys())
def test_mann_whitney_u_matches_scipy(x, y, p):
    assert mann_whitney_u(x, y) == pytest.approx(p, rel=1e-9)
    assert mann_whitney_u(y, x) == pytest.approx(p, rel=1e-9)  # two-sided: symmetric


def test_mann_whitney_u_without_tie_correction_would_differ():
    # the heavy-ties case without the tie term gives 0.0885: the correction matters
    x, y, _ = MANN_WHITNEY_CASES["heavy ties"]
    assert abs(mann_whitney_u(x, y) - 0.08853377201422961) > 0.03


@pytest.mark.parametrize(
    ("x", "y"),
    [([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]), ([5.0] * 12, [5.0] * 9),
     ([2.0, 1.0, 3.0], [3.0, 2.0, 1.0]), ([1.0], [1.0])],
)
def test_mann_whitney_u_of_identical_samples_is_one(x, y):
    assert mann_whitney_u(x, y) == 1.0


def test_mann_whitney_u_needs_samples():
    with pytest.raises(ValueError, match="non-empty"):
        mann_whitney_u([], [1.0])
    with pytest.raises(ValueError, match="non-empty"):
        mann_whitney_u([1.0], [])


def test_pooled_precision_is_the_wider_of_the_samples_and_the_rounds():
    samples = [1.0, 1.01, 0.99, 1.02, 0.98] * 20
    assert pooled_precision(samples) == median_precision(samples)
    assert pooled_precision(samples, [1.0]) == median_precision(samples)  # one round: none
    wide = [0.8, 1.0, 1.2, 0.9, 1.1]
    assert pooled_precision(samples, wide) == median_precision(wide) > median_precision(samples)
    assert pooled_precision(samples, [1.0, 1.0, 1.0]) == median_precision(samples)
