"""Warm up, then take event-timed samples of a run on an engine, with their warnings."""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.common.phases import phase
from cudabench.common.stats import mann_whitney_u, relative_spread
from cudabench.engines.protocol import Engine, Run
from cudabench.planning.plan import Plan
from cudabench.engines.telemetry import throttled
from cudabench.planning.timing import collect, measurement_warnings, warm_up
from cudabench.results.model import SLOW_CLOCK


# The warm-up brings the SM clock up and the kernel's module, code and buffers in. The clock
# is the GPU's, not the row's: once a row's samples have kept it busy, the next row that
# starts soon after needs the warm-up only for its own first launches. So the policy's full
# warm-up runs when the GPU has been idle (a worker's first row, a pause for a long CPU
# reference), and a share of it otherwise. Every sample's SM clock is still measured, and a
# sample below SLOW_CLOCK set aside: a clock that did drop cannot go unseen.
WARM_GAP_S = 0.5  # the GPU counts as warm this long after a row's last warm-up or samples
REWARM_SHARE = 0.2  # a warm GPU's warm-up: this share of the policy's (at least 2 runs)
_BUSY_UNTIL: dict[int, float] = {}  # engine id -> when its GPU last finished timed work


def warm_up_on(engine: Engine, run: Run, plan: Plan) -> None:
    """Run untimed until the warm-up is done (waiting for the GPU each time): the policy's,
    or a share of it where the GPU ran timed work moments ago."""
    def once() -> None:
        run()
        engine.synchronize()

    policy = plan.timing
    if time.perf_counter() - _BUSY_UNTIL.get(id(engine), -math.inf) < WARM_GAP_S:
        policy = dataclasses.replace(policy, warmup_s=policy.warmup_s * REWARM_SHARE)
    warm_up(once, policy)
    kept_busy(engine)


def kept_busy(engine: Engine) -> None:
    """Note that the engine's GPU has just finished timed work (warm-up, samples)."""
    _BUSY_UNTIL[id(engine)] = time.perf_counter()


BATCH_TARGET_S = 2e-3  # a batch of back-to-back launches lasts about this long...
BATCH_LAUNCHES = (3, 200)  # ...within these launch counts (the queue holds ~1000 launches)
BATCH_BUDGET_S = 0.25  # and the batches of one row about this much GPU time in all
BATCHES = (3, 7)


@dataclass(frozen=True)
class Measured:
    """A row's samples: those kept, those set aside for a slow clock, and around them."""

    samples_s: tuple[float, ...]
    warnings: tuple[str, ...]
    sample_clocks_mhz: tuple[float | None, ...] = ()
    slow_clock_samples_s: tuple[float, ...] = ()
    telemetry: Mapping[str, Any] = field(default_factory=dict)
    batch_samples_s: tuple[float, ...] = ()
    writeback_after_run_s: tuple[float, ...] = ()
    writeback_baseline_s: tuple[float, ...] = ()

    def fields(self) -> dict[str, Any]:
        """Return the result fields these fill in."""
        return {"samples_s": self.samples_s, "warnings": self.warnings,
                "sample_clocks_mhz": self.sample_clocks_mhz,
                "slow_clock_samples_s": self.slow_clock_samples_s,
                "telemetry": dict(self.telemetry), "batch_samples_s": self.batch_samples_s,
                "writeback_after_run_s": self.writeback_after_run_s,
                "writeback_baseline_s": self.writeback_baseline_s}


def sample(engine: Engine, run: Run, plan: Plan, working_set_bytes: int) -> Measured:
    """Take samples (L2 flushed before each unless --hot) with each one's SM clock and NVML
    around them; set aside samples taken at a slow clock; then time batches (see batch)."""
    monitor = engine.monitor
    window = monitor.window() if monitor is not None else None
    engine.clock_log(start=True)

    def once() -> float:
        seconds = engine.time_once(run, plan.flush)
        if window is not None:
            window.poll()
        return seconds

    sampling = collect(once, plan.timing)
    kept_busy(engine)
    clocks = engine.clock_log()
    clocks += [None] * (len(sampling.samples_s) - len(clocks))
    telemetry = window.close() if window is not None else {}
    kept, clocks_kept, slow = split_slow(sampling.samples_s, clocks, max_clock_mhz(engine))
    # said of the samples the row keeps (its median, spread and compare's), not of those
    # set aside: "known to ±12.4% (spread 30%)" beside a row of ±0.7%
    judged = dataclasses.replace(sampling, samples_s=tuple(kept)) if kept and slow else sampling
    # the warnings after measurement_warnings', gathered while the GPU work goes on
    later = []
    if slow:
        later.append(f"{len(slow)} of {len(sampling.samples_s)} samples ran below "
                     f"{SLOW_CLOCK:.0%} of the maximum SM clock and were set aside")
    known = [clock for clock in clocks_kept if clock is not None]
    slow_kept = sum(clock < SLOW_CLOCK * max_clock_mhz(engine) for clock in known)
    if 0 < slow_kept < len(known):
        # too few at full clock to set the slow ones aside: kept, and the median mixes them
        later.append(
            f"{slow_kept} of {len(sampling.samples_s)} samples ran below {SLOW_CLOCK:.0%} of "
            f"the maximum SM clock and were kept, as fewer than {MIN_KEPT} would remain "
            "without them: the median mixes the two clocks; more samples (--min-samples) "
            "let the slow ones be set aside")
    elif known and slow_kept == len(known):
        later.append(
            f"the SM clock ran at {statistics.median(known):,.0f} MHz (median) while this "
            f"kernel ran, below {SLOW_CLOCK:.0%} of its {max_clock_mhz(engine):,.0f} MHz "
            "maximum throughout: the card cannot hold its clock under this load (power or "
            "heat), so the time is the card's sustained one, not its peak")
    throttle = throttled(telemetry) if telemetry else None
    if throttle:
        later.append(throttle)
    after: tuple[float, ...] = ()
    baseline: tuple[float, ...] = ()
    if plan.insight.writeback and plan.flush is not None and kept:
        median = statistics.median(kept)
        if median * WRITEBACK_PAIRS[0] > WRITEBACK_BUDGET_S:
            later.append(
                f"--writeback: not timed beside a median of {median * 1e3:,.0f} ms: a "
                "write-back is at most the L2's size of dirty lines, a few tens of us, "
                "too little to matter here")
        else:
            with phase("write-back"):
                after, baseline = writeback(engine, run, plan.flush, median)
    batches: tuple[float, ...] = ()
    if plan.batch:
        with phase("batches"):
            batches = batch(engine, run, kept)
    # after the batches: whether a short median is mostly the launch, the row's batch time
    # says (planning/timing.py: launch_overhead_warning)
    warnings = measurement_warnings(judged, plan.timing, plan.hot, working_set_bytes,
                                    engine.info.l2_bytes,
                                    statistics.median(batches) if batches else None)
    return Measured(kept, (*warnings, *later), clocks_kept, slow, telemetry,
                    batch_samples_s=batches, writeback_after_run_s=after,
                    writeback_baseline_s=baseline)


WRITEBACK_PAIRS = (5, 21)  # flushes timed after a run and after none: this many pairs...
WRITEBACK_BUDGET_S = 0.25  # ...or as many as the row's runs fill this much GPU time; a
# row whose 5 runs would take longer is not timed (its write-back is lost in its median)
WRITEBACK_ALLOWANCE_S = 1.0  # the pass's time on top of --timeout: the budget and flushes


def writeback(engine: Engine, run: Run, flush: str, median_s: float
              ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Return seconds of the flush after a run and of the flush after none, in turns.

    A cold sample stops its clock when its last write reaches the L2; those dirty lines are
    written back to DRAM by the next flush, off the clock (up to the L2's size: on an H100
    8 us of a 175 us copy, 12 us of a transpose that keeps its output at evict-last
    priority). The first flush less the second is that write-back.
    """
    pairs = int(min(max(WRITEBACK_BUDGET_S // max(median_s, 1e-9), WRITEBACK_PAIRS[0]),
                    WRITEBACK_PAIRS[1]))
    times = [engine.time_writeback(run, flush) for _ in range(pairs)]
    kept_busy(engine)
    held = [t for t in times if t is not None]  # a pair the queue's hold gave up on: dropped
    return tuple(t[0] for t in held), tuple(t[1] for t in held)


def max_clock_mhz(engine: Engine) -> float:
    """Return the SM clock a sample is held against: NVML's maximum, else the attribute."""
    return engine.info.max_sm_clock_mhz


MIN_KEPT = 5  # samples at full clock below this: the slow ones are kept (and counted)


def split_slow(samples: Sequence[float], clocks: Sequence[float | None], max_mhz: float
               ) -> tuple[tuple[float, ...], tuple[float | None, ...], tuple[float, ...]]:
    """Return (kept samples, their clocks, samples set aside for a slow clock).

    Set aside only while enough remain to summarise: a GPU that ran slow throughout is
    reported by its warning, not left without a time.
    """
    slow = [i for i, clock in enumerate(clocks)
            if clock is not None and clock < SLOW_CLOCK * max_mhz]
    if len(samples) - len(slow) < MIN_KEPT:
        return tuple(samples), tuple(clocks), ()
    dropped = set(slow)
    return (tuple(s for i, s in enumerate(samples) if i not in dropped),
            tuple(c for i, c in enumerate(clocks) if i not in dropped),
            tuple(samples[i] for i in slow))


def batch(engine: Engine, run: Run, samples_s: Sequence[float]) -> tuple[float, ...]:
    """Return seconds per launch of a few batches of back-to-back launches (warm L2).

    Below ~20 us a cold event pair times mostly the launch; a batch keeps the launch cost
    off the clock (nvbench's method), so small kernels are measured, not their launch.
    """
    if not samples_s:
        return ()
    median = float(np.median(samples_s))
    launches = int(min(max(math.ceil(BATCH_TARGET_S / median), BATCH_LAUNCHES[0]),
                       BATCH_LAUNCHES[1]))
    count = int(min(max(BATCH_BUDGET_S // (launches * median), BATCHES[0]), BATCHES[1]))
    run()  # one untimed run: the batches measure a warm, steady state
    engine.synchronize()
    times = [engine.time_batch(run, launches) for _ in range(count)]
    kept_busy(engine)
    return tuple(t for t in times if t is not None and t > 0)


ZERO_SHIFT = 0.02  # a median this much lower on zeros (and 3 spreads, and significant)
ZERO_ALPHA = 0.05  # few samples a side: a loose test, held in check by the shift


def zero_input_note(engine: Engine, run: Run, plan: Plan, samples_s: tuple[float, ...],
                    upload_zeros: Callable[[], None]) -> tuple[str | None, tuple[float, ...]]:
    """Time the kernel again on all-zero inputs; note it when it runs faster on them.

    Tensor cores and sparse paths can skip work on zeros: a benchmark whose inputs were
    zeros would flatter such a kernel. The note says by how much, beyond the noise; the
    samples on zeros are returned too.
    """
    upload_zeros()
    policy = dataclasses.replace(plan.timing, min_samples=min(plan.timing.min_samples, 10),
                                 max_time_s=plan.timing.sampling_budget_s / 4)
    zeros = collect(lambda: engine.time_once(run, plan.flush), policy)
    kept_busy(engine)
    before, after = float(np.median(samples_s)), float(np.median(zeros.samples_s))
    change = after / before - 1
    beyond_noise = -change > max(ZERO_SHIFT, 3 * relative_spread(samples_s))
    if beyond_noise and mann_whitney_u(samples_s, zeros.samples_s) < ZERO_ALPHA:
        return (f"runs {-change:.0%} faster on all-zero inputs ({after * 1e6:.4g} us against "
                f"{before * 1e6:.4g} us): a benchmark on zeros would flatter it"), zeros.samples_s
    return None, zeros.samples_s
