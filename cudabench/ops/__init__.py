"""The kernel families: one module per op, registered here by name."""

from __future__ import annotations

from cudabench.errors import UsageError
from cudabench.ops.base import LaunchShape, Op, Shape
from cudabench.ops.dot import Dot
from cudabench.ops.matmul import Matmul
from cudabench.ops.transpose import Transpose, TransposeInplace
from cudabench.ops.types import DTYPES, DType, TypeSet

OPS: dict[str, Op] = {op.name: op for op in (Matmul(), Transpose(), TransposeInplace(), Dot())}

__all__ = ["DTYPES", "DType", "LaunchShape", "OPS", "Op", "Shape", "TypeSet", "get_op"]


def get_op(name: str) -> Op:
    """Return the op called name."""
    try:
        return OPS[name]
    except KeyError:
        raise UsageError(f"unknown op {name!r} (known: {', '.join(OPS)})") from None
