"""Run checked plans on one engine: every variant and reference row, a fault isolated.

A kernel that faults (an illegal address, say) leaves CUDA unusable in its process, for
good: even a new context cannot be created. The jobs after it then run in a fresh process
(workers.py), so that one broken variant never hides the results of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from cudabench.errors import OpFileError
from cudabench.measure.engine import Engine, EngineSpec
from cudabench.measure.jobs import Job, Prepared, error_row, jobs_of, prepare
from cudabench.measure.plan import Plan
from cudabench.measure.references import run_reference
from cudabench.measure.variant import run_variant
from cudabench.measure.workers import run_in_fresh_process
from cudabench.results.model import BenchmarkResult, RunOutcome

OnResult = Callable[[BenchmarkResult], None]
OnStart = Callable[[Mapping[str, str]], None]  # receives the engine's versions


def count_rows(plans: Sequence[Plan]) -> int:
    """Return how many result rows running the plans gives (for progress bars)."""
    return len(jobs_of(list(plans)))


def run_plans(plans: Sequence[Plan], spec: EngineSpec, on_result: OnResult | None = None,
              on_start: OnStart | None = None) -> RunOutcome:
    """Run every job of the plans on the engine spec opens, in order; stream each result."""
    plans = list(plans)
    jobs = jobs_of(plans)
    engine = spec.open()
    try:
        if on_start is not None:
            on_start(engine.versions)
        results = run_jobs(plans, jobs, engine, on_result)
    finally:
        engine.close()
    while len(results) < len(jobs):
        results += run_in_fresh_process(spec, plans, jobs[len(results):], engine.info,
                                        on_result or _ignore)
    notes = tuple(note for plan in plans for note in plan.notes)
    return RunOutcome(tuple(results), notes)


def _ignore(result: BenchmarkResult) -> None:
    """Drop a result (no one listens)."""


def run_jobs(plans: Sequence[Plan], jobs: Sequence[Job], engine: Engine,
             on_result: OnResult | None = None) -> list[BenchmarkResult]:
    """Run jobs in order until done or until a kernel faults; return their results."""
    prepared: dict[int, Prepared] = {}
    results = []
    for job in jobs:
        plan = plans[job.plan_index]
        if job.plan_index not in prepared:
            try:  # one plan's inputs in memory at a time
                prepared = {job.plan_index: prepare(plan)}
            except OpFileError as exc:  # the op's inputs or reference raised: its rows say so
                prepared = {}
                result = error_row(plan, job, engine.info, str(exc))
                results.append(result)
                if on_result is not None:
                    on_result(result)
                continue
        ready = prepared[job.plan_index]
        if job.variant is not None:
            result = run_variant(plan, engine, job.variant, ready)
        else:
            result = run_reference(plan, engine, job.reference, ready.cpu_reference_s)
        results.append(result)
        if on_result is not None:
            on_result(result)
        if engine.faulted:
            break
    return results
