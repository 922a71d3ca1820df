"""Where the main job's wall time goes on a GPU: the parent's imports and plan, a worker's
spawn, imports and engine open, each row of `cudabench matmul --size 1000 --tile 16` (run
in this process under cProfile) and the engine's close.

    python3 scripts/wall-time/profile.py [--no-vendor]
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

T0 = time.perf_counter()


def mark(what: str, since: float) -> float:
    """Print the seconds since `since` and return now."""
    now = time.perf_counter()
    print(f"{what}: {now - since:.3f} s", flush=True)
    return now


def main() -> None:
    t = mark("python to script", T0)
    from cudabench.cli import commands  # noqa: F401  (what a benchmark command imports)

    t = mark("import cudabench.cli.commands", t)
    from cudabench.engines.pycuda_engine import PycudaSpec
    from cudabench.measure.jobs import jobs_of
    from cudabench.runner.execute import run_jobs
    from cudabench.planning.plan import Insight, Request, make_plan
    from cudabench.runner.workers import Worker
    from cudabench.results import BenchmarkResult

    vendor = "--no-vendor" not in sys.argv
    plans = [make_plan(Request(op="matmul", size="1000", params={"TILE": 16},
                               insight=Insight(vendor=vendor, batch=True)))]
    jobs = jobs_of(plans)
    t = mark("plan", t)
    for attempt in (1, 2):
        worker = Worker(PycudaSpec(0), plans)
        worker.run([], lambda row: None)
        t = mark(f"worker spawn, imports, engine open, an empty batch (#{attempt})", t)
        worker.close()
        t = mark(f"worker close (#{attempt})", t)
    engine = PycudaSpec(0).open()
    t = mark("engine open in this process", t)
    last = [time.perf_counter()]

    def on_result(row: BenchmarkResult) -> None:
        now = time.perf_counter()
        print(f"  row {row.variant}: {now - last[0]:.3f} s, "
              f"{len(row.samples_s)} samples", flush=True)
        last[0] = now

    profile = cProfile.Profile()
    profile.enable()
    run_jobs(plans, jobs, engine, on_result=on_result)
    profile.disable()
    t = mark("every row", t)
    engine.close()
    mark("engine close", t)
    for order, count in (("cumulative", 45), ("tottime", 25)):
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(order).print_stats(count)
        print(text.getvalue())


if __name__ == "__main__":
    main()
