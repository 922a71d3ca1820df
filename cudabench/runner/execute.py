"""Run jobs in this process, in order, on an open engine: what a worker process (and the
sanitizer's child) does with the jobs it is given. Below the pipeline and the workers, so
that neither imports the other to reach it."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

from cudabench.common.phases import CLOCK
from cudabench.engines.protocol import Engine
from cudabench.errors import OpFileError
from cudabench.planning.plan import Plan
from cudabench.measure.ahead import compile_requests
from cudabench.measure.placement import Spacer
from cudabench.measure.references import run_reference
from cudabench.measure.resident import RESIDENT
from cudabench.measure.variant import run_variant
from cudabench.measure.vendor_rows import run_vendor
from cudabench.results.model import BenchmarkResult, Kind
from cudabench.measure.jobs import (
    NOT_REPEATED,
    Job,
    Prepared,
    error_row,
    full_check,
    inputs_key,
    prepare,
    repeated,
    round_key,
)

OnResult = Callable[[BenchmarkResult], None]
OnPhase = Callable[[str, int], None]


def _no_phase(kind: str, index: int) -> None:
    """Ignore a phase (no watchdog listens)."""


def run_jobs(plans: Sequence[Plan], jobs: Sequence[Job], engine: Engine,
             on_result: OnResult | None = None, on_phase: OnPhase | None = None
             ) -> list[BenchmarkResult]:
    """Run jobs in order until done or until a kernel faults; return their results.

    on_phase hears ("job", i) when job i starts, ("ready", i) when its inputs and CPU
    reference are ready, and ("gpu", i) when its GPU work starts (after its compile): the
    watchdog's clock. Every variant's compile starts at once, on
    the CPU's cores, while the first jobs run (measure/ahead.py).
    """
    engine.compile_ahead(compile_requests(plans, jobs, engine.info.compute_capability))
    prepared: dict[object, Prepared] = {}
    results: list[BenchmarkResult] = []
    phase: OnPhase = on_phase or _no_phase
    spacer = Spacer()
    failed: dict[tuple[object, ...], BenchmarkResult] = {}  # by round_key: not run again
    for index, job in enumerate(jobs):
        plan = plans[job.plan_index]
        phase("job", index)
        # failed in an earlier round: in this batch, or before a worker died (the parent's)
        earlier = job.failed_round or (failed.get(round_key(job)) if job.round else None)
        if earlier is not None:
            result = repeated(job, earlier)
        else:
            CLOCK.take()  # this row's phases start now
            with CLOCK.phase("other"):  # what no phase below names
                # a later round's buffers land elsewhere
                spacer.move(engine, job.round or plan.placement)
                result, prepared = _run_job(plans, job, engine, prepared,
                                            functools.partial(phase, "gpu", index),
                                            functools.partial(phase, "ready", index))
            spent = CLOCK.take()
            if plan.insight.profile_time:
                result = dataclasses.replace(result, phases=spent)
            if job.round:
                result = dataclasses.replace(result, round_index=job.round)
            if result.status in NOT_REPEATED:
                failed.setdefault(round_key(job), result)
        results.append(result)
        if on_result is not None:
            on_result(result)
        if engine.faulted:
            break
    spacer.release(engine)
    RESIDENT.release(engine)
    return results


def _run_job(plans: Sequence[Plan], job: Job, engine: Engine, prepared: dict[object, Prepared],
             on_gpu: Callable[[], None], on_ready: Callable[[], None] = lambda: None
             ) -> tuple[BenchmarkResult, dict[object, Prepared]]:
    """Run one job; return its row and the prepared inputs kept for the next (on_ready
    hears when they are)."""
    plan = plans[job.plan_index]
    if job.round:  # what a row measures once (results/rounds.py keeps the first round's);
        # full_check kept as it was: --transfers implies it, and it keys the inputs
        plan = dataclasses.replace(plan, sanitize=None, full_check=full_check(plan),
                                   insight=dataclasses.replace(plan.insight, counters=(),
                                                               energy_s=0.0, transfers=False))
    key = inputs_key(plan)
    if key not in prepared:
        RESIDENT.release(engine)  # the last benchmark's inputs are done with
        try:  # one benchmark's inputs in memory at a time
            prepared = {key: prepare(plan)}
        except OpFileError as exc:  # the op's inputs or reference raised: its rows say so
            return error_row(plan, job, engine.info, str(exc)), {}
    on_ready()
    ready = prepared[key]
    if job.variant is not None:
        return run_variant(plan, engine, job.variant, ready, on_compiled=on_gpu), prepared
    on_gpu()
    if job.kind is Kind.VENDOR:
        with CLOCK.phase("vendor row"):
            return run_vendor(plan, engine, ready), prepared
    with CLOCK.phase("reference rows"):
        return run_reference(plan, engine, job.reference, ready.cpu_reference_s), prepared
