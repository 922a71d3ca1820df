"""Run jobs in a fresh process: after a kernel fault, CUDA in the old one is lost for good."""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence

from cudabench.measure.engine import EngineSpec
from cudabench.measure.jobs import Job
from cudabench.measure.plan import Plan
from cudabench.results.model import BenchmarkResult


def run_in_fresh_process(spec: EngineSpec, plans: Sequence[Plan], jobs: Sequence[Job]
                         ) -> list[BenchmarkResult]:
    """Run jobs in a new process (spawned: a fork would inherit the broken CUDA state).

    Returns the results of the jobs it finished: all of them, or those up to and
    including the next one that faults.
    """
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return list(pool.apply(_child, (spec, list(plans), list(jobs))))


def _child(spec: EngineSpec, plans: list[Plan], jobs: list[Job]) -> list[BenchmarkResult]:
    from cudabench.measure.pipeline import run_jobs

    engine = spec.open()
    try:
        return run_jobs(plans, jobs, engine)
    finally:
        engine.close()
