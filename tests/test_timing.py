"""The measurement policy, driven by a fake clock and a fake kernel."""

from __future__ import annotations

import itertools
import re
import time

import pytest

from cudabench.common.stats import median_precision
from cudabench.engines.fake_engine import FakeEngine, FakeSpec
from cudabench.errors import UsageError
from cudabench.measure import sampling
from cudabench.measure.sampling import warm_up_on
from cudabench.planning.plan import Request, make_plan
from cudabench.planning.timing import (
    Sampling,
    StopReason,
    TimingPolicy,
    collect,
    launch_overhead_warning,
    measurement_warnings,
    warm_up,
)

STEADY = [1e-3]  # every sample the same: the median is known at once
NOISY = [1e-3, 2e-3, 1.5e-3, 3e-3, 0.5e-3]  # a relative spread far above any target


class FakeGpu:
    """A clock and a kernel: each run advances the clock by wall_s, samples cycle values."""

    def __init__(self, values=STEADY, wall_s: float = 0.01) -> None:
        self.now = 0.0
        self.wall_s = wall_s
        self.values = itertools.cycle(values)
        self.runs = 0

    def clock(self) -> float:
        return self.now

    def run(self) -> None:
        self.now += self.wall_s
        self.runs += 1

    def sample(self) -> float:
        self.run()
        return next(self.values)


def take(gpu: FakeGpu, **policy) -> Sampling:
    """Collect samples from gpu under a policy built from keyword arguments."""
    return collect(gpu.sample, TimingPolicy(**policy), clock=gpu.clock)


@pytest.mark.parametrize("min_samples", [1, 2, 5, 20, 37])
def test_stops_at_min_samples_when_precise(min_samples):
    gpu = FakeGpu(STEADY)
    sampling = take(gpu, min_samples=min_samples)
    # one sample has no precision yet (its interval is infinite), two identical ones do
    assert len(sampling.samples_s) == max(min_samples, 2)
    assert sampling.stopped_by is StopReason.PRECISION
    assert sampling.samples_s[0] == 1e-3


def test_stops_as_soon_as_precision_is_reached():
    values = [1.0, 1.01, 1.02, 1.03]  # a spread of about 1.5%: needs many samples for 0.1%
    gpu = FakeGpu(values, wall_s=1e-6)
    sampling = take(gpu, min_samples=2, precision=0.001, max_time_s=100.0)
    stream = [values[i % 4] for i in range(5000)]
    first = next(n for n in range(2, 5000) if median_precision(stream[:n]) <= 0.001)
    assert first > 1000
    # Precision is checked at min_samples, then each time the count grew by a tenth.
    checkpoints = [2]
    while checkpoints[-1] < 5000:
        checkpoints.append(checkpoints[-1] + max(1, checkpoints[-1] // 10))
    taken = len(sampling.samples_s)
    assert sampling.stopped_by is StopReason.PRECISION and taken in checkpoints
    assert median_precision(stream[:taken]) <= 0.001
    assert first <= taken <= first * 1.1 + 1


def test_keeps_sampling_when_noisy_until_the_budget():
    gpu = FakeGpu(NOISY, wall_s=0.01)
    sampling = take(gpu, min_samples=20, max_time_s=1.0)
    assert sampling.stopped_by is StopReason.BUDGET
    assert len(sampling.samples_s) == pytest.approx(100, abs=1)
    assert gpu.now >= 1.0


@pytest.mark.parametrize(("min_samples", "expected"), [(20, 5), (5, 5), (3, 3), (1, 1)])
def test_budget_never_stops_below_min_of_min_samples_and_five(min_samples, expected):
    gpu = FakeGpu(NOISY, wall_s=10.0)  # every sample blows the 1 s budget
    sampling = take(gpu, min_samples=min_samples, max_time_s=1.0)
    assert len(sampling.samples_s) == expected
    assert sampling.stopped_by is StopReason.BUDGET


def test_max_samples_caps_sampling():
    gpu = FakeGpu(NOISY, wall_s=1e-6)
    sampling = take(gpu, min_samples=20, max_samples=50, max_time_s=1e9)
    assert (len(sampling.samples_s), sampling.stopped_by) == (50, StopReason.MAX_SAMPLES)


def test_max_samples_wins_over_precision():
    sampling = take(FakeGpu(STEADY), min_samples=10, max_samples=10)
    assert (len(sampling.samples_s), sampling.stopped_by) == (10, StopReason.MAX_SAMPLES)


def test_samples_are_kept_in_order():
    sampling = take(FakeGpu(NOISY, wall_s=10.0), min_samples=20)
    assert sampling.samples_s == tuple(NOISY)


@pytest.mark.parametrize(
    ("warmup_s", "wall_s", "runs"),
    [(0.0, 0.01, 2), (0.05, 1.0, 2), (0.0625, 0.015625, 4), (1.0, 0.125, 8)],
)
def test_warm_up_runs_at_least_twice_and_for_warmup_s(warmup_s, wall_s, runs):
    gpu = FakeGpu(wall_s=wall_s)
    assert warm_up(gpu.run, TimingPolicy(warmup_s=warmup_s), clock=gpu.clock) == runs
    assert gpu.runs == runs
    assert gpu.now >= warmup_s


@pytest.mark.parametrize(
    ("fields", "flag"),
    [
        ({"warmup_s": -0.1}, "--warmup must be >= 0"),
        ({"min_samples": 0}, "--min-samples must be >= 1"),
        ({"min_samples": 30, "max_samples": 29}, "--max-samples must be >= --min-samples"),
        ({"precision": 0.0}, "--precision must be > 0"),
        ({"precision": -0.01}, "--precision must be > 0"),
        ({"max_time_s": 0.0}, "--max-time must be > 0"),
    ],
)
def test_validate_names_the_flag(fields, flag):
    with pytest.raises(UsageError, match=re.escape(flag)):
        TimingPolicy(**fields).validate()


def test_default_policy_resolves_a_typical_kernel_to_half_a_percent():
    # 1% lognormal noise, as a GPU kernel shows: the defaults must stop on precision,
    # with enough samples for a significance test, long before the budget.
    rng = __import__("numpy").random.default_rng(3)
    ticks = itertools.count()
    sampling = collect(lambda: 1e-3 * rng.lognormal(0, 0.01), TimingPolicy(),
                       clock=lambda: next(ticks) * 1e-4)
    assert sampling.stopped_by is StopReason.PRECISION
    assert 20 <= len(sampling.samples_s) < 200
    assert median_precision(sampling.samples_s) <= 0.005


POLICY = TimingPolicy(precision=0.005, max_time_s=1.0)
L2 = 50 * 2**20


def kinds(sampling: Sampling, hot: bool = False, working_set: int = 4 * L2) -> set[str]:
    """Return which warnings apply: noisy, overhead and/or l2."""
    found = set()
    for text in measurement_warnings(sampling, POLICY, hot, working_set, L2):
        if text.startswith("noisy:") and "--max-samples cap" in text:
            assert "raise --max-samples" in text
            found.add("capped")
        elif text.startswith("noisy:"):
            assert "--max-time" in text
            found.add("noisy")
        elif "launch overhead" in text:
            assert "--size" in text
            found.add("overhead")
        elif text.startswith("--hot"):
            assert "MiB L2 cache" in text and "drop --hot" in text
            found.add("l2")
        else:
            raise AssertionError(f"unexpected warning {text!r}")
    return found


SLOW_STEADY = (1e-3,) * 20
SLOW_NOISY = tuple(NOISY) * 4


@pytest.mark.parametrize(
    ("samples", "stopped_by", "hot", "working_set", "expected"),
    [
        (SLOW_STEADY, "precision", False, 4 * L2, set()),
        (SLOW_NOISY, "budget", False, 4 * L2, {"noisy"}),
        (SLOW_NOISY, "max_samples", False, 4 * L2, {"capped"}),  # the cap's, said so
        (SLOW_STEADY, "max_samples", False, 4 * L2, set()),  # capped, but precise enough
        (SLOW_STEADY, "budget", False, 4 * L2, set()),  # budget, but precise enough
        ((5e-6,) * 20, "precision", False, 4 * L2, {"overhead"}),
        ((19.9e-6,) * 20, "precision", False, 4 * L2, {"overhead"}),
        ((20e-6,) * 20, "precision", False, 4 * L2, set()),
        (SLOW_STEADY, "precision", True, L2, {"l2"}),
        (SLOW_STEADY, "precision", True, L2 + 1, set()),
        (SLOW_STEADY, "precision", False, L2 // 2, set()),  # cold cache: flushed anyway
        ((5e-6, 10e-6) * 10, "budget", True, 1024, {"noisy", "overhead", "l2"}),
    ],
)
def test_measurement_warnings_only_when_they_apply(samples, stopped_by, hot, working_set,
                                                   expected):
    assert kinds(Sampling(samples, StopReason(stopped_by)), hot, working_set) == expected


def test_a_batch_as_slow_as_the_median_shows_no_launch_overhead_to_warn_of():
    # on an H200 an 18.5 us median beside a 19.2 us batch (launch cost off the clock) was
    # "close to launch overhead (a few us)": the batch said the launch added nothing
    steady = Sampling((18.5e-6,) * 20, StopReason.PRECISION)
    assert measurement_warnings(steady, POLICY, False, 4 * L2, L2, batch_s=19.2e-6) == ()
    assert launch_overhead_warning(18.5e-6, 0.9 * 18.5e-6) is None  # at the bound: none
    # a batch clearly below the median: the launch is in it, and the batch times the kernel
    (text,) = measurement_warnings(steady, POLICY, False, 4 * L2, L2, batch_s=12e-6)
    assert text == ("median 18.5 us is close to launch overhead (a few us): the batch "
                    "(warm) column, 12.0 us a launch, times the kernel without it (warm L2); "
                    "a larger --size measures it cold"), text
    # no batch (--no-batch): warned as before; past the zone, never
    assert "a larger --size measures the kernel" in launch_overhead_warning(18.5e-6, None)
    assert launch_overhead_warning(20e-6, None) is None
    assert launch_overhead_warning(20e-6, 1e-6) is None


def test_one_capped_sample_is_said_to_tell_nothing_of_the_median():
    (text,) = measurement_warnings(Sampling((1e-3,), StopReason.MAX_SAMPLES), POLICY, False,
                                   4 * L2, L2)
    assert text == ("noisy: one sample (the --max-samples cap) cannot say how well the "
                    "median is known (the ±0.5% target); raise --max-samples"), text


def test_a_budget_that_ends_before_the_minimum_count_says_so():
    # --min-samples 200 with a budget for 5 gave 5 samples and no word of it
    policy = TimingPolicy(min_samples=200, max_samples=500, max_time_s=0.1)
    warnings = measurement_warnings(Sampling(SLOW_STEADY[:5], StopReason.BUDGET), policy,
                                    False, 4 * L2, L2)
    assert warnings == ("5 samples, fewer than the 200 --min-samples asks: the 0.1 s budget "
                        "ran out first; raise --max-time for them",), warnings
    # --timeout holds the budget under --max-time: raising --max-time changes nothing
    held = TimingPolicy(min_samples=200, max_samples=500, max_time_s=5, timeout_s=0.3,
                        warmup_s=0)
    (said,) = measurement_warnings(Sampling(SLOW_STEADY[:5], StopReason.BUDGET), held, False,
                                   4 * L2, L2)
    assert said.endswith("raise --timeout, which holds --max-time under it for them"), said


def test_noisy_warning_reports_what_was_reached():
    sampling = Sampling(SLOW_NOISY, StopReason.BUDGET)
    (text,) = measurement_warnings(sampling, POLICY, False, 4 * L2, L2)
    assert "±0.5% target" in text and "after 20 samples in the 1 s budget" in text


def test_noisy_warning_tells_a_precision_just_past_the_target_from_it(monkeypatch):
    # ±0.5% "not the ±0.5% target" said nothing: as many decimals as tell them apart
    import cudabench.planning.timing as timing

    monkeypatch.setattr(timing, "median_precision", lambda samples: 0.00504)
    (text,) = measurement_warnings(Sampling(SLOW_NOISY, StopReason.BUDGET), POLICY, False,
                                   4 * L2, L2)
    assert "known to ±0.504%, not the ±0.500% target" in text
    monkeypatch.setattr(timing, "median_precision", lambda samples: 0.012)
    (text,) = measurement_warnings(Sampling(SLOW_NOISY, StopReason.BUDGET), POLICY, False,
                                   4 * L2, L2)
    assert "known to ±1.2%, not the ±0.5% target" in text
    tight = TimingPolicy(precision=0.0001, max_time_s=1.0)  # "not the ±0.0% target"
    (text,) = measurement_warnings(Sampling(SLOW_NOISY, StopReason.BUDGET), tight, False,
                                   4 * L2, L2)
    assert "known to ±1.20%, not the ±0.01% target" in text, text
    # past it by less than three decimals tell: the target, no warning ("±0.500%, not the
    # ±0.500% target" was seen)
    monkeypatch.setattr(timing, "median_precision", lambda samples: 0.005004)
    assert measurement_warnings(Sampling(SLOW_NOISY, StopReason.BUDGET), POLICY, False,
                                4 * L2, L2) == ()



# -- the warm-up of a row on a GPU that is already warm ---------------------------------

class LoggedRun:
    """A run that counts its launches and takes 1 ms of wall time each."""

    def __init__(self) -> None:
        self.launches = 0

    def __call__(self) -> None:
        self.launches += 1
        time.sleep(1e-3)


def warm_up_launches(engine, plan) -> int:
    """Return how many launches one warm-up of the plan's row takes on engine."""
    run = LoggedRun()
    warm_up_on(engine, run, plan)
    return run.launches


@pytest.fixture
def dot_plan():
    return make_plan(Request(op="dot", size="1000", timing=TimingPolicy(warmup_s=0.05)))


def test_a_row_right_after_another_warms_up_for_a_share_of_the_policy(dot_plan):
    engine = FakeEngine(FakeSpec())
    first = warm_up_launches(engine, dot_plan)  # an idle GPU: the policy's 50 ms
    second = warm_up_launches(engine, dot_plan)  # busy a moment ago: a fifth of it
    # launches of 1 ms: ~50 in the policy's 50 ms, ~10 in a fifth of it (slack for a busy
    # machine, where a sleep can last longer: the ratio, not the count, is the point)
    assert first >= 10 and 2 <= second <= first / 2, (first, second)


def test_a_gpu_idle_longer_than_the_gap_gets_the_full_warm_up(dot_plan, monkeypatch):
    monkeypatch.setattr(sampling, "WARM_GAP_S", 0.0)  # every pause is too long
    engine = FakeEngine(FakeSpec())
    first = warm_up_launches(engine, dot_plan)
    second = warm_up_launches(engine, dot_plan)
    assert second >= first / 2 and first >= 10, (first, second)


def test_the_typed_init_of_timing_policy_names_its_fields():
    # TimingPolicy's __init__ as type checkers see it (NumPy's numbers taken) is written out:
    # a field added to the dataclass must be added there too
    import ast
    import dataclasses
    import inspect

    import cudabench.planning.timing as timing

    tree = ast.parse(inspect.getsource(timing.TimingPolicy))
    (init,) = [node for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef) and node.name == "__init__"]
    assert [arg.arg for arg in init.args.args[1:]] == \
        [field.name for field in dataclasses.fields(timing.TimingPolicy)]
