"""What docs/python.md promises, as a type checker sees it: `mypy` (pyproject's files) checks
this file; nothing here runs. NumPy's numbers are taken wherever a number is, and
ResultsNotWritten.results is the Results (mypy --strict refused both), as are the rows of
a run stopped by Ctrl-C, through stopped_results()."""

from __future__ import annotations

import numpy as np
from typing_extensions import assert_type

import cudabench
import cudabench.api as cb
from cudabench.errors import ResultsNotWritten
from cudabench.results.model import BenchmarkResult


def numpy_numbers() -> None:
    timing = cudabench.TimingPolicy(warmup_s=np.float64(0.01), min_samples=np.int64(10),
                                    max_samples=np.int32(100), precision=np.float32(0.01),
                                    max_time_s=np.float32(0.1), timeout_s=np.int64(30),
                                    compile_timeout_s=60, rounds=np.int64(2))
    assert_type(timing.max_time_s, float)  # the fields hold Python's numbers
    cudabench.run("matmul", size=np.int64(1024), params={"TILE": np.int64(16)},
                  device=np.int64(0), seed=np.int32(1), timing=timing,
                  keep_workers=np.float64(60), energy=np.float32(0.5))
    cudabench.run("matmul", size=[np.int64(512), 1024, "2048"],
                  params={"TILE": [np.int64(8), 16]})
    cudabench.run_suite(device=np.int64(0), keep_workers=np.int64(60))


def results_of_an_unwritten_file() -> None:
    try:
        cudabench.run("matmul", json="now.json")
    except ResultsNotWritten as error:
        assert_type(error.results, cudabench.Results)
        print(len(error.results), error.results.exit_code)


def numpy_numbers_in_sizes_lookups_and_compare() -> None:
    results = cudabench.run("matmul", size=np.array([256, 512]))  # a sweep
    cudabench.run("matmul", size=np.arange(256, 1024, 256))
    row: BenchmarkResult = results[np.int64(0)]  # (Any for 3.10, where NumPy has no types)
    print(row.median_s)
    assert_type(results[0], BenchmarkResult)
    assert_type(results["tiled"], BenchmarkResult)
    assert_type(results[:2], cudabench.Results)
    cudabench.compare("base.json", results, threshold=np.float32(0.05),
                      alpha=np.float32(0.01))
    cudabench.compare("base.json", results, max_threshold=np.float64(0.3))  # caps auto
    cudabench.compare("base.json", results, max_threshold=0.3)
    cudabench.compare("base.json", results, max_threshold="30%", alpha=0.01)


def rows_of_a_run_stopped_by_ctrl_c() -> None:
    try:
        cudabench.run("matmul")
    except KeyboardInterrupt as stop:
        kept = cudabench.stopped_results(stop)  # the docs' spelling
        assert_type(kept, "cudabench.Results | None")
        if kept is not None:
            print(kept.exit_code, kept.complete)
