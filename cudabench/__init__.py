"""cudabench: benchmark CUDA kernels, verified against NumPy, timed with CUDA events.

Importing this package never imports PyCUDA: only cudabench.engine does.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# The Python API (cudabench.api), importable from here too; loaded on first use so that
# `import cudabench` (and the command's start-up) stays light.
_API = ("Comparison", "Results", "TimingPolicy", "compare", "load", "run", "run_suite",
        "stopped_results")

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    """Import the API (cudabench.api) when one of its names is first used."""
    if name not in _API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Through importlib: every module imports this package (for __version__), and none of
    # them may depend on the API, which sits above them all (the layers in pyproject.toml).
    return getattr(importlib.import_module("cudabench.api"), name)
