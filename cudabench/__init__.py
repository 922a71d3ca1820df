"""cudabench: benchmark CUDA kernels, verified against NumPy, timed with CUDA events.

Importing this package never imports PyCUDA: only cudabench.engine does.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
