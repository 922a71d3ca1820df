"""Run checked plans: every variant and reference row, in watched worker processes.

The GPU work runs in a worker (workers.py) that the parent can kill when a job outlasts
its timeout. A kernel that faults (an illegal address, say) leaves CUDA unusable in its
process, for good: the jobs after it, or after a timeout, run in a fresh worker, so that
one broken variant never hides the results of the others.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

from cudabench.errors import OpFileError
from cudabench.measure.devices import Slot
from cudabench.measure.engine import Engine, EngineSpec
from cudabench.measure.jobs import Job, Prepared, error_row, jobs_of, prepare, record
from cudabench.measure.plan import Plan
from cudabench.measure.references import run_reference
from cudabench.measure.variant import run_variant
from cudabench.measure.vendor_rows import run_vendor
from cudabench.measure.workers import Worker, take_prestarted
from cudabench.results.model import BenchmarkResult, Kind, RunOutcome

OnResult = Callable[[BenchmarkResult], None]
OnStart = Callable[[Mapping[str, str]], None]  # receives the engine's versions
OnPhase = Callable[[str, int], None]


def count_rows(plans: Sequence[Plan], copies: int = 1) -> int:
    """Return how many result rows running the plans gives (for progress bars), each job
    run `copies` times (--replicate: once per GPU)."""
    return copies * len(jobs_of(list(plans))) + sum(len(plan.skipped) for plan in plans)


def run_plans(plans: Sequence[Plan], spec: EngineSpec, on_result: OnResult | None = None,
              on_start: OnStart | None = None, devices: Sequence[Slot] | None = None,
              replicate: bool = False) -> RunOutcome:
    """Run every job of the plans in watched worker processes; stream each row.

    Without devices, on spec's GPU in order. With devices (--devices), one worker per GPU
    takes whole benchmarks from one queue (fleet.py); with replicate every GPU runs every
    benchmark.
    """
    plans = list(plans)
    jobs = jobs_of(plans)
    emit = on_result or _ignore
    if devices is not None:
        from cudabench.measure.fleet import run_on_devices

        results, notes = run_on_devices(plans, jobs, spec, devices, replicate, emit, on_start)
    else:
        results, notes = run_on_one(plans, jobs, spec, emit, on_start), []
    return outcome_of(plans, results, notes, emit)


def outcome_of(plans: Sequence[Plan], results: list[BenchmarkResult], notes: list[str],
               emit: OnResult) -> RunOutcome:
    """Add a SKIP row for each variant a plan left out (saying why, streamed too) and the
    plans' notes to the measured rows."""
    device = next((r.device for r in results if r.device is not None), None)
    for plan in plans:
        for variant, reason in plan.skipped:
            row = record(plan, variant.name, {}, str(variant.path), device, None,
                         skipped=reason)
            results.append(row)
            emit(row)
    notes += [note for plan in plans for note in plan.notes]
    return RunOutcome(tuple(results), tuple(notes))


def run_on_one(plans: Sequence[Plan], jobs: Sequence[Job], spec: EngineSpec,
               on_result: OnResult, on_start: OnStart | None = None) -> list[BenchmarkResult]:
    """Run jobs in order on spec's GPU, in a worker replaced whenever one stops."""
    results: list[BenchmarkResult] = []
    worker = take_prestarted(spec, plans) or Worker(spec, plans)
    try:
        while len(results) < len(jobs):
            results += worker.run(jobs[len(results):], on_result,
                                  on_start if not results else None, first=not results)
    finally:
        worker.close(wait=False)  # it releases the GPU while the tables are printed
    return results


def _ignore(result: BenchmarkResult) -> None:
    """Drop a result (no one listens)."""


def _no_phase(kind: str, index: int) -> None:
    """Ignore a phase (no watchdog listens)."""


def run_jobs(plans: Sequence[Plan], jobs: Sequence[Job], engine: Engine,
             on_result: OnResult | None = None, on_phase: OnPhase | None = None
             ) -> list[BenchmarkResult]:
    """Run jobs in order until done or until a kernel faults; return their results.

    on_phase hears ("job", i) when job i starts and ("gpu", i) when its GPU work starts
    (after its compile): the watchdog's clock.
    """
    prepared: dict[int, Prepared] = {}
    results = []
    phase: OnPhase = on_phase or _no_phase
    for index, job in enumerate(jobs):
        plan = plans[job.plan_index]
        phase("job", index)
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
            result = run_variant(plan, engine, job.variant, ready,
                                 on_compiled=functools.partial(phase, "gpu", index))
        elif job.kind is Kind.VENDOR:
            phase("gpu", index)
            result = run_vendor(plan, engine, ready)
        else:
            phase("gpu", index)
            result = run_reference(plan, engine, job.reference, ready.cpu_reference_s)
        results.append(result)
        if on_result is not None:
            on_result(result)
        if engine.faulted:
            break
    return results
