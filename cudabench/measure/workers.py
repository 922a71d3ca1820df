"""Run jobs in a worker process that the parent watches: the watchdog.

All GPU work happens in a spawned worker (a fork would inherit CUDA state). The worker
says when each job starts, when its GPU work starts (after the compile), and streams each
result back, so progress and the results file keep up and an interrupted run loses
nothing it measured. The parent kills the worker when a job's compile outlasts
`compile_timeout_s` or its GPU work `timeout_s`: that job's row says TIMEOUT, and the jobs
after it run in a fresh worker. A worker that dies (a driver crash, the OOM killer) costs
the job it was running an ERROR row; one that stops after a kernel fault hands the rest to
a fresh worker too.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cudabench.errors import CudabenchError, GpuEnvironmentError
from cudabench.measure.engine import EngineSpec
from cudabench.measure.jobs import Job, error_row
from cudabench.measure.plan import Plan
from cudabench.results.model import BenchmarkResult, DeviceInfo

POLL_S = 0.25  # how often the parent looks at a silent worker
DONE = "done"  # the worker's last message when it stopped on its own


@dataclass
class Watch:
    """What the parent knows of its worker: the device, the current job, its deadline."""

    device: DeviceInfo | None = None
    current: int | None = None  # index into the jobs given to the worker
    deadline: float | None = None  # time.monotonic() by which the current phase must end
    phase: str = ""  # "compile" or "GPU work"


def run_in_worker(spec: EngineSpec, plans: Sequence[Plan], jobs: Sequence[Job],
                  on_result: Callable[[BenchmarkResult], None],
                  on_start: Callable[[Mapping[str, str]], None] | None = None,
                  device: DeviceInfo | None = None, first: bool = True
                  ) -> list[BenchmarkResult]:
    """Run jobs in a new worker process until they are done or it stops.

    Returns the rows of the jobs it got through: all of them, or those up to and including
    one that faulted, timed out (TIMEOUT row) or killed the worker (ERROR row). If the
    first worker of a run cannot open the GPU, GpuEnvironmentError says why.
    """
    context = multiprocessing.get_context("spawn")
    messages: Any = context.Queue()
    worker = context.Process(target=_worker, args=(spec, list(plans), list(jobs), messages),
                             daemon=True)
    worker.start()
    watch = Watch(device=device)
    results: list[BenchmarkResult] = []
    reason, timed_out = "", False
    try:
        while True:
            now = time.monotonic()
            wait = POLL_S if watch.deadline is None else max(0.0, min(POLL_S,
                                                                      watch.deadline - now))
            try:
                message = messages.get(timeout=wait)
            except queue.Empty:
                if watch.deadline is not None and time.monotonic() >= watch.deadline:
                    reason, timed_out = _timeout_reason(watch, plans, jobs), True
                    break
                if not worker.is_alive():
                    reason = f"its worker process died (exit code {worker.exitcode})"
                    break
                continue
            if isinstance(message, BenchmarkResult):
                results.append(message)
                on_result(message)
                watch.current = watch.deadline = None
            elif isinstance(message, tuple) and message[0] == "unusable":
                if first:  # the run cannot start: the user's environment is the error
                    raise GpuEnvironmentError(message[1])
                reason = f"a fresh worker could not open the GPU: {message[1]}"
                break
            elif isinstance(message, tuple):
                _follow(watch, message, plans, jobs, on_start)
            else:  # DONE, or the text of an error in the worker
                reason = "" if message == DONE else f"its worker process failed: {message}"
                break
    finally:
        _stop(worker)
    if reason and len(results) < len(jobs):
        job = jobs[len(results)]
        row = error_row(plans[job.plan_index], job, watch.device,
                        f"{reason}; the jobs after it ran in a fresh worker",
                        timed_out=timed_out)
        results.append(row)
        on_result(row)
    return results


def _follow(watch: Watch, message: tuple[Any, ...], plans: Sequence[Plan],
            jobs: Sequence[Job], on_start: Callable[[Mapping[str, str]], None] | None) -> None:
    """Update the watch from a worker's message: started, a job began, its GPU work began."""
    kind = message[0]
    if kind == "start":
        watch.device = message[1]
        if on_start is not None:
            on_start(message[2])
    elif kind in ("job", "gpu"):
        index = message[1]
        timing = plans[jobs[index].plan_index].timing
        watch.current = index
        watch.phase = "compile" if kind == "job" else "GPU work"
        limit = timing.compile_timeout_s if kind == "job" else timing.timeout_s
        watch.deadline = time.monotonic() + limit


def _timeout_reason(watch: Watch, plans: Sequence[Plan], jobs: Sequence[Job]) -> str:
    """Say which limit a job outlasted."""
    index = watch.current if watch.current is not None else 0
    timing = plans[jobs[index].plan_index].timing
    if watch.phase == "compile":
        return (f"its compile did not finish within {timing.compile_timeout_s:g} s "
                "(--compile-timeout) and was killed with its worker")
    return (f"did not finish within {timing.timeout_s:g} s of GPU work (--timeout) and was "
            "killed with its worker")


def _stop(worker: Any) -> None:
    """End the worker: it has finished, or it is stuck in a kernel and is killed."""
    worker.join(timeout=2)
    if worker.is_alive():
        worker.kill()
        worker.join(timeout=10)


def _worker(spec: EngineSpec, plans: list[Plan], jobs: list[Job], messages: Any) -> None:
    """Open an engine and run jobs, reporting each phase and result, then DONE."""
    from cudabench.measure.pipeline import run_jobs

    try:
        engine = spec.open()
    except CudabenchError as exc:  # no GPU, driver or PyCUDA: nothing can run
        messages.put(("unusable", str(exc)))
        return
    try:
        try:
            messages.put(("start", engine.info, dict(engine.versions)))
            run_jobs(plans, jobs, engine, on_result=messages.put,
                     on_phase=lambda kind, index: messages.put((kind, index)))
        finally:
            engine.close()
    except Exception as exc:  # a bug or a lost GPU: the parent records it and goes on
        messages.put(f"{type(exc).__name__}: {exc}")
        return
    messages.put(DONE)
    if engine.faulted:
        # CUDA is dead here: end without collecting its objects (PyCUDA would warn about
        # each allocation it cannot free), once every message has left.
        messages.close()
        messages.join_thread()
        os._exit(0)
