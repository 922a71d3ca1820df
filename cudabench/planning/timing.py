"""The measurement policy: warm-up, repeated samples, and when to stop.

The sampling function is injected (the engine's event-timed launch on a GPU, a fake in
tests), and so is the wall clock that enforces the time budget.
"""

from __future__ import annotations

import enum
import math
import numbers
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cudabench.common.stats import median_precision, summarize
from cudabench.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

Clock = Callable[[], float]
MAX_ROUNDS = 100  # --rounds: beyond this the rounds' own overhead dwarfs what they average
MAX_SAMPLE_COUNT = 10**9  # more samples than any budget takes
MAX_PRECISION = 0.25  # looser, and sampling stops at min_samples whatever the noise


@dataclass(frozen=True)
class TimingPolicy:
    """How long to warm up and how many samples to take."""

    warmup_s: float = 0.05  # warm-up launches run at least this long (and at least twice)
    min_samples: int = 20  # enough for a significance test when comparing runs
    max_samples: int = 5000
    precision: float = 0.005  # stop once the median's 95% confidence half-width is this small
    max_time_s: float = 1.0  # wall-clock budget for sampling one variant
    timeout_s: float = 60.0  # a variant's GPU work (not its compile) must end within this
    compile_timeout_s: float = 600.0  # and its compile within this
    # Each benchmark's rows measured this many times, in alternating order, each round on
    # buffers placed afresh, and pooled (measure/jobs.py, results/rounds.py): the ratio
    # between two rows then averages the placement and drift that one round would give one
    # row and not the other.
    rounds: int = 1

    if TYPE_CHECKING:  # what __post_init__ takes: NumPy's numbers too (the fields hold Python's)
        def __init__(self, warmup_s: float | np.floating[Any] | np.integer[Any] = ...,
                     min_samples: int | np.integer[Any] = ...,
                     max_samples: int | np.integer[Any] = ...,
                     precision: float | np.floating[Any] | np.integer[Any] = ...,
                     max_time_s: float | np.floating[Any] | np.integer[Any] = ...,
                     timeout_s: float | np.floating[Any] | np.integer[Any] = ...,
                     compile_timeout_s: float | np.floating[Any] | np.integer[Any] = ...,
                     rounds: int | np.integer[Any] = ...) -> None: ...

    def __post_init__(self) -> None:
        """Take NumPy's numbers as Python's (a notebook's often are): np.int64(10) samples
        or np.float32(0.1) seconds were refused, and could not be written to JSON."""
        for name in ("min_samples", "max_samples", "rounds"):
            value = getattr(self, name)
            if isinstance(value, numbers.Integral) and not isinstance(value, (bool, int)):
                object.__setattr__(self, name, int(value))
        for name in ("warmup_s", "precision", "max_time_s", "timeout_s", "compile_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, numbers.Real) and not isinstance(value, (bool, int, float)):
                object.__setattr__(self, name, float(value))

    @property
    def sampling_budget_s(self) -> float:
        """Return the seconds sampling may take: --max-time, held under what --timeout
        leaves beside the warm-up and the other passes (a noisy, healthy kernel sampled to
        a --max-time near the timeout was killed as a hang: TIMEOUT, exit 3)."""
        room = (self.timeout_s - self.warmup_s - OTHER_GPU_WORK_S) / GPU_WORK_PER_SAMPLING_S
        return max(min(self.max_time_s, room), 0.0)

    def validate(self) -> TimingPolicy:
        """Raise UsageError naming the flag of the first bad value; return self."""
        counts = {"--min-samples": self.min_samples, "--max-samples": self.max_samples}
        for flag, count in counts.items():
            if isinstance(count, bool) or not isinstance(count, int):
                raise UsageError(f"{flag} {count!r}: expected a whole number")
        finite = {"--warmup": self.warmup_s, "--precision": self.precision,
                  "--max-time": self.max_time_s, "--timeout": self.timeout_s,
                  "--compile-timeout": self.compile_timeout_s}
        for flag, value in finite.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(f"{flag} {value!r}: expected a number")
            if not math.isfinite(value):
                raise UsageError(f"{flag} {value}: must be a finite number")
        checks = [
            (self.warmup_s >= 0, "--warmup must be >= 0 seconds"),
            (self.min_samples >= 1, "--min-samples must be >= 1"),
            # before the order of the two: 1e30 alone blamed --max-samples, left as it was
            (self.min_samples <= MAX_SAMPLE_COUNT, f"--min-samples must be at most "
             f"{MAX_SAMPLE_COUNT:,} (--max-time ends sampling long before)"),
            (self.max_samples >= self.min_samples, "--max-samples must be >= --min-samples"),
            # 1e300 in a suite printed a 300-digit count: no budget reaches this many
            (self.max_samples <= MAX_SAMPLE_COUNT, f"--max-samples must be at most "
             f"{MAX_SAMPLE_COUNT:,} (--max-time ends sampling long before)"),
            (self.precision > 0, "--precision must be > 0 (e.g. 0.005 for 0.5%)"),
            # a fraction: --precision 0.5 meant as 0.5% asked for ±50%, so min_samples
            # both forms: 50% was named as 0.5 alone, not as typed
            (self.precision <= MAX_PRECISION, f"--precision {self.precision:g} "
             f"(±{self.precision * 100:g}%) is a fraction of the median (0.005 is ±0.5%): at "
             f"most {MAX_PRECISION:g} (±{MAX_PRECISION * 100:g}%)"),
            (self.max_time_s > 0, "--max-time must be > 0 seconds"),
            (self.timeout_s > 0, "--timeout must be > 0 seconds"),
            (self.compile_timeout_s > 0, "--compile-timeout must be > 0 seconds"),
            (isinstance(self.rounds, int) and not isinstance(self.rounds, bool)
             and 1 <= self.rounds <= MAX_ROUNDS,
             f"--rounds must be a whole number from 1 to {MAX_ROUNDS}"),
            # The warm-up runs whole, within a variant's timeout: one that fills it would kill
            # every variant and blame the kernel; one that leaves no room for the other
            # passes left a 0 s sampling budget, every row warned of it. (--max-time is held
            # under it as it runs: sampling_budget_s.)
            (self.sampling_budget_s > 0,
             f"--timeout {self.timeout_s:g} s leaves no time to sample: a variant's warm-up "
             f"(--warmup {self.warmup_s:g} s), its samples and {OTHER_GPU_WORK_S:g} s of "
             "other passes run within it; raise --timeout"
             + (" or lower --warmup" if self.warmup_s > 0 else "")),
        ]
        for ok, message in checks:
            if not ok:
                raise UsageError(message)
        return self


# A variant's GPU work per second of sampling: its samples, and the zero-input pass
# (measure/sampling.py, a quarter of the budget); the watchdog's --timeout covers it all,
# with the warm-up and the batch pass (at most a quarter second) on top.
GPU_WORK_PER_SAMPLING_S = 1.25
OTHER_GPU_WORK_S = 0.25


class StopReason(str, enum.Enum):
    """Why sampling stopped."""

    PRECISION = "precision"  # the median is known to the target precision
    BUDGET = "budget"  # the time budget ran out
    MAX_SAMPLES = "max_samples"  # the sample cap was reached


@dataclass(frozen=True)
class Sampling:
    """The samples taken and why sampling stopped."""

    samples_s: tuple[float, ...]
    stopped_by: StopReason


def warm_up(run: Callable[[], object], policy: TimingPolicy, clock: Clock = time.perf_counter
            ) -> int:
    """Run until warmup_s has passed and at least twice; return the number of runs."""
    start = clock()
    runs = 0
    while runs < 2 or clock() - start < policy.warmup_s:
        run()
        runs += 1
    return runs


def collect(
    sample: Callable[[], float], policy: TimingPolicy, clock: Clock = time.perf_counter
) -> Sampling:
    """Take samples (each returns seconds) until the precision target, the budget or the cap."""
    samples: list[float] = []
    start = clock()
    next_check = policy.min_samples
    while True:
        samples.append(float(sample()))
        n = len(samples)
        if n >= policy.max_samples:
            return Sampling(tuple(samples), StopReason.MAX_SAMPLES)
        # The precision needs two medians over all samples: checked when the count has grown
        # by a tenth, not after every sample, so short kernels spend the budget on the GPU.
        if n >= next_check:
            if median_precision(samples) <= policy.precision:
                return Sampling(tuple(samples), StopReason.PRECISION)
            next_check = n + max(1, n // 10)
        # The budget stops sampling only once a minimum exists, however slow the kernel:
        # fewer samples than that cannot be summarised or compared honestly.
        if clock() - start >= policy.sampling_budget_s and n >= min(policy.min_samples, 5):
            return Sampling(tuple(samples), StopReason.BUDGET)


def _apart(reached: float, target: float) -> tuple[str, str]:
    """Return the two shares as percentages with the fewest decimals (1 to 3) that tell
    them apart: ±0.5% "not the ±0.5% target" said nothing."""
    for digits in (1, 2, 3, 4, 5):
        texts = f"{reached:.{digits}%}", f"{target:.{digits}%}"
        # and enough for the target itself: --precision 0.0001 is not "the ±0.0% target"
        if texts[0] != texts[1] and float(texts[1].rstrip("%")) > 0:
            break
    return texts


def _raise_budget(policy: TimingPolicy) -> str:
    """Say which flag gives sampling more time: --max-time, or --timeout where it holds
    the sampling budget under --max-time."""
    return ("raise --max-time" if policy.sampling_budget_s >= policy.max_time_s else
            "raise --timeout, which holds --max-time under it")


LAUNCH_ZONE_S = 20e-6  # a median below this may be mostly the launch...
LAUNCH_SHOWN = 0.9  # ...unless the row's batch per launch is at least this share of it


def launch_overhead_warning(median_s: float, batch_s: float | None) -> str | None:
    """Return the warning that a median may time the launch more than the kernel, or None.

    A batch (launches back to back, the launch cost off the clock, warm L2) tells: one at
    or above LAUNCH_SHOWN of the median shows no launch cost in it (on an H200 an 18.5 us
    median beside a 19.2 us batch was called "close to launch overhead"). Without a batch
    (--no-batch, or none timed) a short median is warned of as it may be.
    """
    if median_s >= LAUNCH_ZONE_S or (batch_s is not None and batch_s >= LAUNCH_SHOWN * median_s):
        return None
    advice = ("a larger --size measures the kernel rather than the launch" if batch_s is None
              else f"the batch (warm) column, {batch_s * 1e6:.1f} us a launch, times the "
              "kernel without it (warm L2); a larger --size measures it cold")
    return f"median {median_s * 1e6:.1f} us is close to launch overhead (a few us): " + advice


def measurement_warnings(
    sampling: Sampling, policy: TimingPolicy, hot: bool, working_set_bytes: int, l2_bytes: int,
    batch_s: float | None = None,
) -> tuple[str, ...]:
    """Return what a reader should know about these samples, each with a hint to fix it;
    batch_s is the row's batch time per launch (None: not measured)."""
    stats = summarize(sampling.samples_s)
    warnings = []
    reached = median_precision(sampling.samples_s)
    # within 0.2% of the target (±0.501% of ±0.5%) it is the target ("known to ±0.500%,
    # not the ±0.500% target" said nothing)
    short = reached > policy.precision * 1.002
    if sampling.stopped_by is StopReason.BUDGET and short:
        known, target = _apart(reached, policy.precision)
        warnings.append(
            f"noisy: the median is known to ±{known}, not the ±{target} "
            f"target, after {stats.count} samples in the {policy.sampling_budget_s:g} s budget "
            f"(spread {stats.spread:.1%}); "
            + (_raise_budget(policy) + ", or check for other work on the GPU"
               if policy.sampling_budget_s >= policy.max_time_s else _raise_budget(policy))
        )
    elif sampling.stopped_by is StopReason.MAX_SAMPLES and short:
        # the cap a CI suite lowers to save time: its rows are no more precise for it
        known, target = _apart(reached, policy.precision)
        warnings.append(
            f"noisy: the median is known to ±{known}, not the ±{target} target, at the "
            f"--max-samples cap of {stats.count} samples (spread {stats.spread:.1%}); raise "
            "--max-samples, or check for other work on the GPU" if math.isfinite(reached) else
            "noisy: one sample (the --max-samples cap) cannot say how well the median is "
            f"known (the ±{policy.precision:.1%} target); raise --max-samples")
    if sampling.stopped_by is StopReason.BUDGET and stats.count < policy.min_samples:
        # a slow kernel: the budget ends sampling before the minimum (at least 5 are taken)
        warnings.append(
            f"{stats.count} samples, fewer than the {policy.min_samples} --min-samples asks: "
            f"the {policy.sampling_budget_s:g} s budget ran out first; "
            + _raise_budget(policy) + " for them")
    launch = launch_overhead_warning(stats.median_s, batch_s)
    if launch:
        warnings.append(launch)
    if hot and working_set_bytes <= l2_bytes:
        warnings.append(
            f"--hot with {working_set_bytes / 2**20:.1f} MiB of data and a "
            f"{l2_bytes / 2**20:.0f} MiB L2 cache: this measures the cache, not memory; "
            "drop --hot for cold-cache numbers"
        )
    return tuple(warnings)
