"""Step and drift detection on synthetic histories with the noise of real H100/H200 samples.

Each synthetic run's median is the median of a bootstrap resample of one benchmark's real
samples (tests/data): the run-to-run noise of a median is the real one, not a guess.
Seeded, so every run of the suite sees the same histories.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pytest

from cudabench.history.steps import Drift, Step, detect, noise
from cudabench.results import load_results

DATA = Path(__file__).parent / "data"
SOURCES = ("h100/v1-matmul.json", "h100/v2-matmul.json", "compare/baseline.json")
LENGTH = 30  # commits in a synthetic history
HISTORIES = 60  # per test: a rate below 1 in 20 is then at most 2 misses


@functools.lru_cache(maxsize=1)
def pools() -> tuple[np.ndarray, ...]:
    """Return the raw samples of every timed benchmark in SOURCES."""
    found = []
    for name in SOURCES:
        for result in load_results(DATA / name).benchmarks:
            if len(result.samples_s) >= 10:
                found.append(np.asarray(result.samples_s))
    return tuple(found)


def history(seed: int, factors: np.ndarray) -> np.ndarray:
    """Return per-commit medians: bootstrap medians of one real benchmark, times factors."""
    rng = np.random.default_rng(seed)
    samples = pools()[seed % len(pools())]
    medians = [np.median(rng.choice(samples, samples.size)) for _ in factors]
    return np.asarray(medians) * factors


def planted_step(seed: int) -> tuple[int, np.ndarray]:
    """Return where a 5% step (slower on odd seeds, faster on even) starts, and factors."""
    at = int(np.random.default_rng(10_000 + seed).integers(8, LENGTH - 7))
    factors = np.ones(LENGTH)
    factors[at:] = 1.05 if seed % 2 else 1 / 1.05
    return at, factors


def test_the_pools_hold_real_noise():
    # The test means nothing without noise: every pool's samples spread, and so do medians.
    assert len(pools()) >= 9
    for seed in range(len(pools())):
        medians = history(seed, np.ones(LENGTH))
        assert noise(np.log(medians)) > 1e-5, seed


def test_planted_5_percent_steps_are_found_at_their_commit():
    labels = [f"c{i:02d}" for i in range(LENGTH)]
    found = 0
    for seed in range(HISTORIES):
        at, factors = planted_step(seed)
        detection = detect(history(seed, factors), labels, threshold=0.05)
        if [s.index for s in detection.steps] == [at] and not detection.drifts:
            step = detection.steps[0]
            assert step.label == f"c{at:02d}"
            assert step.change == pytest.approx(factors[-1] - 1, abs=0.01)
            found += 1
    assert found >= HISTORIES * 19 / 20, found


def test_histories_without_a_step_report_none():
    false = 0
    for seed in range(HISTORIES):
        detection = detect(history(seed, np.ones(LENGTH)))
        false += bool(detection.steps or detection.drifts)
    assert false < HISTORIES / 20, false


def drift_factors(seed: int) -> tuple[int, np.ndarray]:
    """Return the first drifting commit and factors: 1% slower per commit for ten commits."""
    start = int(np.random.default_rng(20_000 + seed).integers(5, LENGTH - 14))
    factors = np.ones(LENGTH)
    for k in range(10):
        factors[start + k:] *= 1.01
    return start, factors


def test_a_slow_drift_is_a_drift_over_its_range_not_a_step():
    labels = [f"c{i:02d}" for i in range(LENGTH)]
    right = 0
    for seed in range(HISTORIES // 3):
        start, factors = drift_factors(seed)
        detection = detect(history(seed, factors), labels, threshold=0.05)
        assert not detection.steps, (seed, detection.steps)
        if len(detection.drifts) == 1:
            drift = detection.drifts[0]
            if abs(drift.start - start) <= 1 and abs(drift.end - (start + 9)) <= 1:
                assert drift.first_label == labels[drift.start]
                assert drift.last_label == labels[drift.end]
                assert drift.change == pytest.approx(1.01**10 - 1, abs=0.02)
                assert drift.per_point == pytest.approx(0.01, abs=0.003)
                right += 1
    assert right >= HISTORIES // 3 * 19 / 20, right


def test_last_change_is_the_drift_when_it_comes_after_a_step():
    factors = np.ones(40)
    factors[6:] = 1.08
    for k in range(10):
        factors[22 + k:] *= 1.01
    detection = detect(history(3, factors))
    assert [s.index for s in detection.steps] == [6]
    assert isinstance(detection.last_change, Drift)
    assert detection.current_segment == (6, 40)


def test_a_step_and_its_revert_are_two_steps():
    factors = np.ones(LENGTH)
    factors[10:20] = 1.06
    detection = detect(history(5, factors))
    assert [s.index for s in detection.steps] == [10, 20]
    assert detection.steps[0].change > 0 > detection.steps[1].change
    assert isinstance(detection.last_change, Step) and detection.last_change.index == 20


def test_one_slow_run_is_an_outlier_not_a_step():
    factors = np.ones(LENGTH)
    factors[15] = 1.25  # a run on a throttled GPU
    detection = detect(history(7, factors))
    assert detection.steps == () and detection.drifts == ()
    assert detection.outliers == (15,)


def test_a_step_three_commits_before_the_end_is_found():
    factors = np.ones(LENGTH)
    factors[LENGTH - 3:] = 1.05
    detection = detect(history(11, factors))
    assert [s.index for s in detection.steps] == [LENGTH - 3]


def test_a_step_below_the_threshold_is_not_reported_unless_asked():
    factors = np.ones(LENGTH)
    factors[14:] = 1.02
    values = history(1, factors)  # an H100 pool: noise about 0.1%
    assert detect(values, threshold=0.05).steps == ()
    assert [s.index for s in detect(values, threshold=0.02).steps] == [14]


@pytest.mark.parametrize("length", [0, 1, 2, 5])
def test_short_series_hold_nothing(length):
    detection = detect(np.full(length, 1e-4))
    assert detection.steps == () and detection.drifts == ()
    assert math.isfinite(detection.noise)


def test_identical_medians_do_not_divide_by_zero():
    values = np.full(20, 2e-4)
    values[10:] = 3e-4
    detection = detect(values)
    assert [s.index for s in detection.steps] == [10]
    assert detection.steps[0].change == pytest.approx(0.5)


@pytest.mark.parametrize("values", [[1e-4, 0.0, 1e-4], [1e-4, -1e-4], [1e-4, math.nan],
                                    [math.inf]])
def test_values_must_be_positive_and_finite(values):
    with pytest.raises(ValueError, match="positive and finite"):
        detect(values)


def test_labels_must_match_the_values():
    with pytest.raises(ValueError, match="labels"):
        detect([1.0, 1.0, 1.0], ["a", "b"])
