"""What docs/python.md promises, as a type checker sees it: `mypy` (pyproject's files) checks
this file; nothing here runs. NumPy's numbers are taken wherever a number is, and
ResultsNotWritten.results is the Results (mypy --strict refused both)."""

from __future__ import annotations

import numpy as np
from typing_extensions import assert_type

import cudabench
from cudabench.errors import ResultsNotWritten


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
