"""Warm up, then take event-timed samples of a run on an engine, with their warnings."""

from __future__ import annotations

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
