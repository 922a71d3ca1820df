"""Matrix transpose, out-of-place (B = A^T) and in-place on a square matrix."""

from __future__ import annotations

import numpy as np

from cudabench.errors import UsageError
from cudabench.ops.base import Op, exact_check, parse_dims, random_floats, random_ints


def _transpose_inputs(shape, dtype, rng):
    if dtype.name == "float32":
        return random_floats(rng, shape, -1.0, 1.0)
    # Full int32 range except INT32_MIN, the poison value.
    return random_ints(rng, shape, -(2**31) + 1, 2**31 - 1)


class Transpose(Op):
    name = "transpose"
    summary = "B = A^T out of place (A: ROWS x COLS)"
    dims = ("ROWS", "COLS")
    size_forms = {1: "3001", 2: "3000x2000 (ROWSxCOLS)"}
    default_size = "3001"
    signature = "(const DTYPE* A, DTYPE* B, int ROWS, int COLS)"
    result_buffer = "B"
    copy_reference = True

    def inputs(self, shape, dtype, rng):
        return {"A": _transpose_inputs(shape, dtype, rng)}

    def outputs(self, shape, dtype, blocks):
        rows, cols = shape
        return {"B": (cols, rows)}

    def args(self, shape, blocks):
        return ["A", "B", *shape]

    def reference(self, inputs):
        return np.ascontiguousarray(inputs["A"].T)

    def verify(self, inputs, expected, result, launches=()):
        return exact_check(result, expected)

    def bytes_moved(self, shape, itemsize):
        rows, cols = shape
        return 2 * rows * cols * itemsize


class TransposeInplace(Op):
    name = "transpose_inplace"
    summary = "A = A^T in place (square A: N x N)"
    dims = ("N",)
    size_forms = {1: "3001", 2: "3001x3001 (square)"}
    default_size = "3001"
    signature = "(DTYPE* A, int N)"
    result_buffer = "A"
    copy_reference = True

    def parse_size(self, text):
        dims = parse_dims(text, self.size_forms)
        if len(set(dims)) != 1:
            raise UsageError(
                f"--size {text!r}: --inplace transposes a square matrix; "
                "give one size (e.g. --size 3001) or drop --inplace"
            )
        return dims[:1]

    def inputs(self, shape, dtype, rng):
        (n,) = shape
        return {"A": _transpose_inputs((n, n), dtype, rng)}

    def outputs(self, shape, dtype, blocks):
        return {}

    def args(self, shape, blocks):
        return ["A", *shape]

    def reference(self, inputs):
        return np.ascontiguousarray(inputs["A"].T)

    def verify(self, inputs, expected, result, launches=()):
        return exact_check(result, expected)

    def bytes_moved(self, shape, itemsize):
        (n,) = shape
        return 2 * n * n * itemsize
