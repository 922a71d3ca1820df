"""An op of your own: row-wise softmax, y[r, c] = exp(x[r, c] - max_r) / sum_c exp(x[r, c] - max_r).

cudabench finds this file because it sits in a folder given with --kernels-dir; the
kernels beside it (softmax/*.cu) declare `// cudabench: softmax`. Run it with

    cudabench softmax --kernels-dir examples/softmax --size 4096x1024

docs/writing-an-op.md walks through every part.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cudabench.ops import LaunchShape, Op, Shape, TypeSet
from cudabench.ops.base import typed
from cudabench.ops.checks import bounded_check
from cudabench.ops.types import random_floats
from cudabench.results.model import Verification


class Softmax(Op):
    """Softmax over each row of a ROWS x COLS matrix."""

    name = "softmax"
    summary = "y = softmax(x) along each row (x: ROWS x COLS)"
    dims = ("ROWS", "COLS")
    size_forms = {1: "1024 (square)", 2: "4096x1024 (ROWSxCOLS)"}
    default_size = "4096x1024"
    # float16 rows are summed in float32; the output keeps the input's type.
    types = {
        "float16": ("float16", "float32", "float16"),
        "float32": ("float32", "float32", "float32"),
        "float64": ("float64", "float64", "float64"),
    }
    # Every kernel of the op takes these arguments, in this order.
    signature = "(const DTYPE* x, OUT_TYPE* y, int ROWS, int COLS)"
    result_buffer = "y"

    def inputs(self, shape: Shape, types: TypeSet, rng: np.random.Generator
               ) -> dict[str, np.ndarray]:
        # Values in [-8, 8): exponentials spread over seven orders of magnitude.
        return {"x": random_floats(rng, shape, -8.0, 8.0, types.input)}

    def outputs(self, shape: Shape, types: TypeSet, blocks: int) -> dict[str, Shape]:
        return {"y": shape}

    def args(self, shape: Shape, blocks: int) -> list[str | int]:
        return ["x", "y", *shape]

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        x = inputs["x"].astype(np.float64)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def verify(self, inputs: dict[str, np.ndarray], expected: np.ndarray, result: np.ndarray,
               launches: Sequence[LaunchShape], types: TypeSet) -> Verification:
        # Each element is exp(.) / sum(.): a sum of COLS terms (relative error at most
        # COLS u in any order), an exp and a division (a few u each), then one rounding to
        # the output type; the smallest output values may be subnormal in float16.
        cols = expected.shape[1]
        u_acc, u_out = types.accumulate.unit_roundoff, types.output.unit_roundoff
        tiny = float(np.finfo(types.output.numpy).smallest_subnormal)
        bound = ((cols + 10) * u_acc + u_out) * np.abs(expected) + tiny
        return bounded_check(result, expected, bound,
                             "|y-ref| <= ((COLS+10) u_acc + u_out) |ref| + subnormal")

    def flops(self, shape: Shape) -> int:
        rows, cols = shape
        return 5 * rows * cols  # max, subtract, exp, sum, divide

    def bytes_moved(self, shape: Shape, types: TypeSet) -> int:
        rows, cols = shape
        return rows * cols * (types.input.itemsize + types.output.itemsize)

    def edge_shapes(self) -> tuple[Shape, ...]:
        return (1, 1), (17, 33), (3, 1025)

    def emulate(self, args: Sequence[Any], types: TypeSet) -> np.ndarray:
        x, y, rows, cols = args
        result = typed(y, types.output, (rows, cols))
        result[...] = self.reference({"x": typed(x, types.input, (rows, cols))})
        return result


OP = Softmax()
