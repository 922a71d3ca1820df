"""The Python API: the benchmark commands' pipeline, called from Python, pytest or a
notebook.

    import cudabench.api as cb

    results = cb.run("matmul", variants=["tiled"], size=1024)
    results.row("tiled").median_s            # seconds
    results.to_json("now.json")
    comparison = cb.compare("base.json", results)   # verdicts of `cudabench compare`
    assert comparison.ok, comparison

run() and run_suite() go through the same checks, workers and results model as the
commands; errors are the commands' own (cudabench.errors: UsageError, KernelFileError,
GpuEnvironmentError, ResultsFileError...), each with the exit code the command would use.
See docs/python.md.
"""

from __future__ import annotations

from cudabench.api.comparison import Comparison, compare
from cudabench.api.results import Results
from cudabench.api.running import run, run_suite, stopped_results
from cudabench.errors import (
    CompileError,
    CudabenchError,
    ExitCode,
    GpuEnvironmentError,
    KernelFileError,
    ResultsFileError,
    UsageError,
)
from cudabench.planning.timing import TimingPolicy
from cudabench.results.model import BenchmarkResult, Status

load = Results.load

__all__ = [
    "BenchmarkResult", "CompileError", "Comparison", "CudabenchError", "ExitCode",
    "GpuEnvironmentError", "KernelFileError", "Results", "ResultsFileError", "Status",
    "TimingPolicy", "UsageError", "compare", "load", "run", "run_suite", "stopped_results",
]
