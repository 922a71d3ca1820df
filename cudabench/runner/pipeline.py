"""Run checked plans: every variant and reference row, in watched worker processes.

The GPU work runs in a worker (workers.py) that the parent can kill when a job outlasts
its timeout. A kernel that faults (an illegal address, say) leaves CUDA unusable in its
process, for good: the jobs after it, or after a timeout, run in a fresh worker, so that
one broken variant never hides the results of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from cudabench.runner.devices import Slot
from cudabench.engines.protocol import EngineSpec
from cudabench.measure.jobs import Job, jobs_of, record, remaining
from cudabench.planning.plan import Plan, shown_notes
from cudabench.runner.starting import new_worker, take_prestarted
from cudabench.runner.workers import keep, take_kept
from cudabench.results.model import BenchmarkResult, RunOutcome

if TYPE_CHECKING:  # the command's process runs no job itself: its workers import it
    from cudabench.runner.execute import OnResult
    from cudabench.runner.gpus import Fleet

OnStart = Callable[[Mapping[str, str]], None]  # receives the engine's versions
__all__ = ["OnStart", "count_rows", "run_plans"]


def count_rows(plans: Sequence[Plan], copies: int = 1) -> int:
    """Return how many result rows running the plans gives (for progress bars), each job
    run `copies` times (--replicate: once per GPU)."""
    return copies * len(jobs_of(list(plans))) + sum(len(plan.skipped) for plan in plans)


def run_plans(plans: Sequence[Plan], spec: EngineSpec, on_result: OnResult | None = None,
              on_start: OnStart | None = None, devices: Sequence[Slot] | None = None,
              replicate: bool = False, keep_worker: bool = False,
              jobs: Sequence[Job] | None = None, fleet: Fleet | None = None) -> RunOutcome:
    """Run every job of the plans (jobs_of's, or the jobs given: `ab`'s interleaved rounds)
    in watched worker processes; stream each row.

    Without devices, on spec's GPU in order, in the worker a previous run kept or a fresh
    one; keep_worker keeps it warm for the command's next run (workers.keep). With devices
    (--devices), one worker per GPU takes whole benchmarks from one queue (gpus.py); with
    replicate every GPU runs every benchmark; fleet (gpus.Fleet) carries the GPUs' warm
    workers, and those given up, from one run of the command to its next.
    """
    plans = list(plans)
    jobs = list(jobs) if jobs is not None else jobs_of(plans)
    emit = on_result or _ignore
    if devices is not None:
        from cudabench.runner.gpus import run_on_devices

        results, notes = run_on_devices(plans, jobs, spec, devices, replicate, emit, on_start,
                                        fleet)
    else:
        results, notes = run_on_one(plans, jobs, spec, emit, on_start, keep_worker), []
    return outcome_of(plans, results, notes, emit)


def outcome_of(plans: Sequence[Plan], results: list[BenchmarkResult], notes: list[str],
               emit: OnResult) -> RunOutcome:
    """Add a SKIP row for each variant a plan left out (saying why, streamed too) and the
    plans' notes to the measured rows."""
    device = next((r.device for r in results if r.device is not None), None)
    for plan in plans:
        for variant, reason, params in plan.skipped:
            row = record(plan, variant.name, dict(params), str(variant.path), device, None,
                         skipped=reason)
            results.append(row)
            emit(row)
    notes += shown_notes(plans)
    return RunOutcome(tuple(results), tuple(notes))


def run_on_one(plans: Sequence[Plan], jobs: Sequence[Job], spec: EngineSpec,
               on_result: OnResult, on_start: OnStart | None = None,
               keep_worker: bool = False) -> list[BenchmarkResult]:
    """Run jobs in order on spec's GPU, in a worker replaced whenever one stops."""
    results: list[BenchmarkResult] = []
    worker = take_kept(spec, plans) or take_prestarted(spec, plans) or new_worker(spec, plans)
    done = False
    try:
        while len(results) < len(jobs):
            results += worker.run(remaining(jobs, results), on_result,
                                  on_start if not results else None, first=not results)
        done = True
    finally:
        if done and keep_worker:
            keep(worker)  # warm for the command's next run (--best's re-measure)
        else:
            worker.close(wait=False)  # it releases the GPU while the tables are printed
    return results


def _ignore(result: BenchmarkResult) -> None:
    """Drop a result (no one listens)."""


