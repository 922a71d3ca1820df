"""The kernel families: the Op interface, element types, and the registry of ops.

`OPS` holds the built-in ops (and those of installed packages); `load_ops(kernels_dirs)`
adds the ops declared by .py files in the user's folders.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cudabench.common.infiles import check_folders
from cudabench.errors import UsageError
from cudabench.ops.base import LaunchShape, Op, Shape
from cudabench.ops.registry import builtin_ops, find_op, load_ops
from cudabench.ops.types import DTYPES, DType, TypeSet

# OPS is left out: `from cudabench.ops import *` in an op file made it the file's OPS
__all__ = ["DTYPES", "DType", "LaunchShape", "Op", "Shape", "TypeSet", "builtin_ops",
           "find_op", "get_op", "load_ops"]


def __getattr__(name: str) -> dict[str, Op]:
    """Return OPS, the built-in ops by name, loaded on first use."""
    if name == "OPS":
        return builtin_ops()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_op(name: str, kernels_dirs: Iterable[Path] = ()) -> Op:
    """Return the op called name, built in or declared in one of the folders."""
    kernels_dirs = [Path(folder) for folder in kernels_dirs]
    ops = load_ops(kernels_dirs)
    try:
        return ops[name]
    except KeyError:
        check_folders(kernels_dirs)  # a mistyped folder, not the op, is what is wrong
        raise UsageError(f"unknown op {name!r} (known: {', '.join(ops)}); an op of your own "
                         "is a .py file in a --kernels-dir folder") from None
