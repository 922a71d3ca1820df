"""The kernel families: one module per op, registered here by name."""

from __future__ import annotations

from cudabench.errors import UsageError
from cudabench.ops.base import DTYPES, DType, LaunchShape, Op, Shape
from cudabench.ops.dot import Dot
from cudabench.ops.matmul import Matmul
from cudabench.ops.transpose import Transpose, TransposeInplace

OPS: dict[str, Op] = {op.name: op for op in (Matmul(), Transpose(), TransposeInplace(), Dot())}

__all__ = ["DTYPES", "DType", "LaunchShape", "OPS", "Op", "Shape", "get_dtype", "get_op"]


def get_op(name: str) -> Op:
    """Return the op called name."""
    try:
        return OPS[name]
    except KeyError:
        raise UsageError(f"unknown op {name!r} (known: {', '.join(OPS)})") from None


def get_dtype(op: Op, name: str) -> DType:
    """Return the dtype called name, checked against what the op supports."""
    if name not in op.dtypes:
        raise UsageError(f"--dtype {name}: {op.name} supports {', '.join(op.dtypes)}")
    return DTYPES[name]
