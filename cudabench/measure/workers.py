"""Run jobs in a fresh process: after a kernel fault, CUDA in the old one is lost for good.

The worker streams each result back as it finishes, so progress and the results file keep
up and an interrupted run loses nothing it measured. A worker that dies (killed for
memory, a crash in the driver) costs the job it was running an ERROR row, not the run.
"""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable, Sequence
from typing import Any

from cudabench.measure.engine import EngineSpec
from cudabench.measure.jobs import Job, error_row
from cudabench.measure.plan import Plan
from cudabench.results.model import BenchmarkResult, DeviceInfo

POLL_S = 0.5  # how often the parent checks that a silent worker is still alive
DONE = "done"  # the worker's last message when it stopped on its own


def run_in_fresh_process(spec: EngineSpec, plans: Sequence[Plan], jobs: Sequence[Job],
                         device: DeviceInfo, on_result: Callable[[BenchmarkResult], None]
                         ) -> list[BenchmarkResult]:
    """Run jobs in a new process (spawned: a fork would inherit the broken CUDA state).

    Returns the results of the jobs it got through: all of them, or those up to and
    including one that faulted; a job its worker died on gets an ERROR row.
    """
    context = multiprocessing.get_context("spawn")
    messages: Any = context.Queue()
    worker = context.Process(target=_worker, args=(spec, list(plans), list(jobs), messages),
                             daemon=True)
    worker.start()
    results: list[BenchmarkResult] = []
    reason = ""
    try:
        while True:
            try:
                message = messages.get(timeout=POLL_S)
            except queue.Empty:
                if worker.is_alive():
                    continue
                reason = f"its worker process died (exit code {worker.exitcode})"
                break
            if isinstance(message, BenchmarkResult):
                results.append(message)
                on_result(message)
            else:  # DONE, or the text of an error in the worker
                reason = "" if message == DONE else f"its worker process failed: {message}"
                break
    finally:
        worker.join(timeout=10)
        if worker.is_alive():
            worker.terminate()
    if reason and len(results) < len(jobs):
        job = jobs[len(results)]
        row = error_row(plans[job.plan_index], job, device,
                        f"{reason}; the jobs after it ran in a fresh process")
        results.append(row)
        on_result(row)
    return results


def _worker(spec: EngineSpec, plans: list[Plan], jobs: list[Job], messages: Any) -> None:
    """Open an engine and run jobs, sending each result, then DONE (or the error's text)."""
    from cudabench.measure.pipeline import run_jobs

    try:
        engine = spec.open()
        try:
            run_jobs(plans, jobs, engine, on_result=messages.put)
        finally:
            engine.close()
    except Exception as exc:  # a bug or a lost GPU: the parent records it and goes on
        messages.put(f"{type(exc).__name__}: {exc}")
        return
    messages.put(DONE)
