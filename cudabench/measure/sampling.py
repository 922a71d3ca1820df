"""Warm up, then take event-timed samples of a run on an engine, with their warnings."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from cudabench.analysis.stats import mann_whitney_u, relative_spread
from cudabench.measure.engine import Engine, Run
from cudabench.measure.plan import Plan
from cudabench.measure.timing import collect, measurement_warnings, warm_up


def warm_up_on(engine: Engine, run: Run, plan: Plan) -> None:
    """Run untimed until the policy's warm-up is done (waiting for the GPU each time)."""
    def once() -> None:
        run()
        engine.synchronize()

    warm_up(once, plan.timing)


def sample(engine: Engine, run: Run, plan: Plan, working_set_bytes: int
           ) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """Take samples (L2 flushed before each unless --hot); return them and the warnings."""
    sampling = collect(lambda: engine.time_once(run, flush_l2=not plan.hot), plan.timing)
    warnings = measurement_warnings(sampling, plan.timing, plan.hot, working_set_bytes,
                                    engine.info.l2_bytes)
    return sampling.samples_s, warnings


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
                                 max_time_s=plan.timing.max_time_s / 4)
    zeros = collect(lambda: engine.time_once(run, flush_l2=not plan.hot), policy)
    before, after = float(np.median(samples_s)), float(np.median(zeros.samples_s))
    change = after / before - 1
    beyond_noise = -change > max(ZERO_SHIFT, 3 * relative_spread(samples_s))
    if beyond_noise and mann_whitney_u(samples_s, zeros.samples_s) < ZERO_ALPHA:
        return (f"runs {-change:.0%} faster on all-zero inputs ({after * 1e6:.4g} us against "
                f"{before * 1e6:.4g} us): a benchmark on zeros would flatter it"), zeros.samples_s
    return None, zeros.samples_s
